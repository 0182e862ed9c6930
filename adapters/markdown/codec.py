"""The DocumentFormat port over the Markdown render/parse functions.

The format module (and the parsed-document values it builds) loads with the first render,
parse or `learn`: `open()` builds a `MarkdownFormat`, and a search on a caught-up store uses
none of it (ADR 0110)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pi_hermes_memory.domain.memory.model import MemoryEntry, Target

if TYPE_CHECKING:
    from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument, VersionLine


class MarkdownFormat:
    def __init__(self) -> None:
        #: the documents whose file is in the TypeScript extension's spelling (ADR 0027)
        self._project64: set[Target] = set()
        #: per target, the last rendered rows (with their spelling) and their joined blocks:
        #: an add appends one row, so the next render joins one new block onto these instead
        #: of rendering every row again (ADR 0039)
        self._last: dict[Target, tuple[bool, tuple[MemoryEntry, ...], str]] = {}

    def render(
        self, entries: Sequence[MemoryEntry], target: Target, *, stamp: VersionLine | None = None
    ) -> str:
        """`render_document`'s bytes for these arguments."""
        from pi_hermes_memory.adapters.markdown.format import (
            ENTRY_JOINER,
            frame_document,
            render_body,
        )

        project64 = target in self._project64
        rows = tuple(entries)
        body: str | None = None
        last = self._last.get(target)
        if last is not None and last[0] == project64:
            done, done_body = last[1], last[2]
            # rows are immutable values: equal leading rows render to the same blocks
            if done and len(rows) >= len(done) and rows[: len(done)] == done:
                more = render_body(
                    rows[len(done) :], target=target, project64=project64, start=len(done) + 1
                )
                body = "".join((done_body, ENTRY_JOINER, more)) if more else done_body
        if body is None:
            body = render_body(rows, target=target, project64=project64)
        self._last[target] = (project64, rows, body)
        return frame_document(body, stamp=stamp, project64=project64)

    def parse(self, text: str, target: Target) -> ParsedDocument:
        from pi_hermes_memory.adapters.markdown.format import parse_document

        return parse_document(text, target=target)

    def learn(self, data: bytes, target: Target) -> None:
        """Follow the spelling of the file as read: a file the TypeScript extension wrote
        (`project64=` attributions, no version line) is written back the same way."""
        from pi_hermes_memory.adapters.markdown.format import speaks_project64

        if speaks_project64(data):
            self._project64.add(target)
        else:
            self._project64.discard(target)
