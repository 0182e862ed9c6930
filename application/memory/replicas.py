"""The Markdown files of the memory documents, addressed by stream (`Replicas`).

Apart from `documents.py` (the fold, snapshots and hand-edit merge) so that proving the files
unchanged before a read loads none of those (ADR 0105).
"""

from __future__ import annotations

from pi_hermes_memory.domain.memory.streams import target_of
from pi_hermes_memory.ports.store import UNCHECKED, MarkdownStore

__all__ = ["MemoryReplicas"]


class MemoryReplicas:
    """The Markdown files of the memory documents, addressed by stream."""

    def __init__(self, markdown: MarkdownStore) -> None:
        self.markdown = markdown

    def read(self, stream: str) -> bytes | None:
        return self.markdown.read(target_of(stream))

    def write(self, stream: str, data: bytes, *, expected: object = UNCHECKED) -> None:
        self.markdown.write(target_of(stream), data, expected=expected)

    def stamp(self, stream: str) -> object:
        return self.markdown.stamp(target_of(stream))

    def describe(self, stream: str) -> str:
        return self.markdown.describe(target_of(stream))

    def replica(self, stream: str) -> str:
        return self.markdown.replica(target_of(stream))
