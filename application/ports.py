"""Ports: what the application needs from the world. Adapters satisfy them structurally."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from pi_hermes_memory.domain.document import MemoryDocument
from pi_hermes_memory.domain.events import Event
from pi_hermes_memory.domain.markdown_doc import ParsedDocument
from pi_hermes_memory.domain.model import MemoryEntry, Target
from pi_hermes_memory.mirror import RebuildReport
from pi_hermes_memory.search import SearchHit, SearchQuery


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class IdFactory(Protocol):
    def new_id(self) -> str:
        """A new, unique, sortable entry id."""
        ...


class Journal(Protocol):
    """The durable, append-only event journal (inside a unit of work)."""

    def append(self, stream: str, expected_version: int, events: Sequence[Event]) -> None:
        """Append `events`; raise VersionConflict if the stream is not at `expected_version`."""
        ...

    def read(self, stream: str, after: int = 0, upto: int | None = None) -> Sequence[Event]:
        """Events of `stream` with after < version <= upto, in order."""
        ...

    def version(self, stream: str) -> int: ...


class Projection(Protocol):
    """Read models kept in the same transaction as the journal (SQLite tables, FTS)."""

    def apply(self, events: Sequence[Event]) -> None: ...

    def rebuild(self, documents: Sequence[MemoryDocument]) -> RebuildReport:
        """Make the rows of these documents' targets equal to their folded state (insert the
        missing, update the different, delete active rows the state lacks; superseded rows the
        state lacks are kept); see `pi_hermes_memory.mirror`."""
        ...


class RenderLedger(Protocol):
    """What was last written to each Markdown document: (version, sha256 of the bytes)."""

    def rendered(self, stream: str) -> tuple[int, str] | None: ...

    def record(self, stream: str, version: int, sha256: str) -> None: ...


class UnitOfWork(Protocol):
    @property
    def journal(self) -> Journal: ...

    @property
    def projection(self) -> Projection: ...

    @property
    def ledger(self) -> RenderLedger: ...


class Storage(Protocol):
    """The transactional store: one `transaction()` is one BEGIN IMMEDIATE … COMMIT."""

    def transaction(self) -> AbstractContextManager[UnitOfWork]: ...

    def close(self) -> None: ...


class MarkdownStore(Protocol):
    """The Markdown documents, one per target, and the store-wide write lock."""

    def read(self, target: Target) -> bytes | None: ...

    def write(self, target: Target, data: bytes) -> None: ...

    def lock(self, timeout: float = 30.0) -> AbstractContextManager[object]: ...

    def describe(self, target: Target) -> str:
        """A human-readable location of the document (for messages)."""
        ...

    def distinct_roots(self) -> bool:
        """Whether the global and the project documents live under different physical roots."""
        ...

    def stamp(self, target: Target) -> object:
        """A cheap change token (e.g. mtime, size, inode); equal tokens mean "unchanged"."""
        ...


class DocumentFormat(Protocol):
    """Renders and parses the Markdown byte format."""

    def render(self, entries: Sequence[MemoryEntry], target: Target) -> str: ...

    def parse(self, text: str, target: Target) -> ParsedDocument: ...


class SearchIndex(Protocol):
    """Full-text search over the memory read model (SQLite FTS5, or in memory); read-only.

    Returns the best `query.limit` rows that match at least one term of `query.text` and the
    scope predicate of `query` (clauses, category, active unless include_superseded), applied
    before the limit; rows matching every term first, then by score (> 0, higher is better),
    ties: the larger id first. Any text is a valid query: it never raises for what was typed.
    See `pi_hermes_memory.testing.SearchIndexContract`.
    """

    def search(self, query: SearchQuery) -> list[SearchHit]: ...
