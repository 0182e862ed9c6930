"""The DocumentFormat port over the Markdown render/parse functions."""

from __future__ import annotations

from collections.abc import Sequence

from pi_hermes_memory.adapters.markdown.format import parse_document, render_document
from pi_hermes_memory.domain.markdown_doc import ParsedDocument, VersionLine
from pi_hermes_memory.domain.model import MemoryEntry, Target


class MarkdownFormat:
    def render(
        self, entries: Sequence[MemoryEntry], target: Target, *, stamp: VersionLine | None = None
    ) -> str:
        return render_document(entries, target=target, stamp=stamp)

    def parse(self, text: str, target: Target) -> ParsedDocument:
        return parse_document(text, target=target)
