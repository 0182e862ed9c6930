"""The DocumentFormat port over the Markdown render/parse functions."""

from __future__ import annotations

from collections.abc import Sequence

from pi_hermes_memory.adapters.markdown.format import (
    parse_document,
    render_document,
    speaks_project64,
)
from pi_hermes_memory.domain.markdown_doc import ParsedDocument, VersionLine
from pi_hermes_memory.domain.model import MemoryEntry, Target


class MarkdownFormat:
    def __init__(self) -> None:
        #: the documents whose file is in the TypeScript extension's spelling (ADR 0027)
        self._project64: set[Target] = set()

    def render(
        self, entries: Sequence[MemoryEntry], target: Target, *, stamp: VersionLine | None = None
    ) -> str:
        return render_document(
            entries, target=target, stamp=stamp, project64=target in self._project64
        )

    def parse(self, text: str, target: Target) -> ParsedDocument:
        return parse_document(text, target=target)

    def learn(self, data: bytes, target: Target) -> None:
        """Follow the spelling of the file as read: a file the TypeScript extension wrote
        (`project64=` attributions, no version line) is written back the same way."""
        if speaks_project64(data):
            self._project64.add(target)
        else:
            self._project64.discard(target)
