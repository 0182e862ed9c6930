"""The read port over the memory read model (ADR 0057): the projected rows of the store,
read-only, so a storage-side adapter (a vector store, a search index, …) can be written
against the ports alone, combined with any storage that offers this port, and checked by its
contract suite (`pi_hermes_memory.testing.VectorStoreContract` runs on it).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING, Protocol

import attrs
from pi_hermes_memory.domain.memory.model import Target

if TYPE_CHECKING:  # an annotation: the read model loads no vector port (ADR 0105)
    from pi_hermes_memory.ports.vectors import VectorScope

__all__ = ["MemoryRow", "MemoryRows", "RowChanges"]


@attrs.frozen(kw_only=True)
class MemoryRow:
    """One projected memory row: an active entry, or a superseded one (`superseded_by`, since
    the day `superseded_at`). `created` / `last_referenced`: the entry's days (None only from
    a store that does not keep them); a search index reports them in its hits (ADR 0060)."""

    id: str
    target: Target
    text: str
    project: str | None = None
    category: str | None = None
    namespace: str | None = None
    superseded_by: str | None = None
    created: date | None = None
    last_referenced: date | None = None
    superseded_at: date | None = None


@attrs.frozen(kw_only=True)
class RowChanges:
    """What changed after a cursor: `ids` of the rows written (inserted, updated, removed)
    after it, or None when the store cannot name every one (its change log no longer reaches
    back, or a removed row left no id): then anything may have changed; re-read what you keep.
    `cursor`: pass it to the next `changed_since`."""

    cursor: int
    ids: frozenset[str] | None


class MemoryRows(Protocol):
    """The memory rows of one store, read-only; each call reads one consistent state.

    Rows are time-ordered by id, so "newest first" is descending id order. A row that failed
    the content scan (flagged, ADR 0022) is never returned.
    """

    def in_scope(self, scope: VectorScope) -> list[MemoryRow]:
        """The rows `scope` admits (its clauses, category, superseded rows only with
        `include_superseded`), newest first."""
        ...

    def by_id(self, ids: Iterable[str]) -> dict[str, MemoryRow]:
        """The rows with these ids (active or superseded); unknown ids are absent."""
        ...

    def cursor(self) -> int:
        """The position of the newest change: `changed_since(cursor())` names nothing until
        the next write."""
        ...

    def changed_since(self, cursor: int) -> RowChanges:
        """The rows changed after `cursor` (see `RowChanges`)."""
        ...
