"""The values the knowledge base ports speak (`KnowledgeIndex`, `KnowledgeSource`): files
found by the walk, what the index knows of them, their new chunks, a query and a hit. They
live with the ports, not with the knowledge service (ADR 0056)."""

from __future__ import annotations

from typing import Any, Final

import attrs

__all__ = [
    "DEFAULT_KNOWLEDGE_LIMIT",
    "FileChunks",
    "KnowledgeHit",
    "KnowledgeQuery",
    "KnownFile",
    "SourceFile",
]

#: Hits a knowledge search returns unless asked otherwise.
DEFAULT_KNOWLEDGE_LIMIT: Final = 5


@attrs.frozen(kw_only=True)
class SourceFile:
    """A candidate document found by the walk: `path` is its real absolute path, `rel` the
    path below `root` ("/"-separated)."""

    path: str
    root: str
    rel: str
    size: int
    mtime_ns: int
    kind: str


@attrs.frozen(kw_only=True)
class KnownFile:
    size: int
    mtime_ns: int
    sha256: str
    root: str = ""
    rel: str = ""


@attrs.frozen(kw_only=True)
class FileChunks:
    """A file's new content for the index (chunks = None: only size/mtime changed)."""

    file: SourceFile
    sha256: str
    chunks: tuple[Any, ...] | None


@attrs.frozen(kw_only=True)
class KnowledgeQuery:
    text: str
    limit: int = DEFAULT_KNOWLEDGE_LIMIT
    #: a prefix of the absolute or root-relative path, or a glob (`*`, `?`, `[`) over either
    path: str | None = None
    #: only files whose real path lies below one of these folders (None: every indexed file)
    roots: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class KnowledgeHit:
    chunk_id: int
    path: str
    rel: str
    root: str
    start_line: int
    end_line: int
    heading: str | None
    text: str
    score: float
    snippet: str = ""
    #: secrets replaced by markers in this chunk at index time (ADR 0063)
    redacted: int = 0
    #: the scanner's other findings in what is returned (heading and snippet:
    #: "prompt_injection", …): the text is kept, the hit flagged (set by the search)
    flags: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "root": self.root,
            "relative_path": self.rel,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "heading": self.heading,
            "snippet": self.snippet,
            "score": float(f"{self.score:.4g}"),
            "redacted": self.redacted,
            "flags": list(self.flags),
        }
