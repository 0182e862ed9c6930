"""An add decided on the persisted write index, without folding the document (ADR 0084).

A new process that adds one entry needs of its document only what `decide_add` asks: the exact
text of the scope, its used characters, its first row, the near-duplicate candidates. The
storage keeps those in a write index advanced with the journal (`ports.store.WriteIndex`), so
the add reads a few rows instead of decoding the snapshot and tokenising every entry.

`IndexedDocument` is a `DocumentState` over that index. What only the whole document knows (a
row's history, whether an id was removed) raises `NotImplementedError`: the service then runs the
write on the folded document as before (the slow path, same answers). The index is used only
when it reflects exactly the journal's version and the replica is exactly the last recorded
render (no hand edit to import); otherwise the write takes the slow path, which also rebuilds a
stale index.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.document import entry_of, target_of
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.ports.store import UnitOfWork, WriteIndex

__all__ = ["IndexedDocument", "appended_entries", "write_index_of"]

#: a render lagging by more adds than this is written in full (ADR 0088): the events are read
#: and held to append them, and past this many the whole render is no longer the larger cost
MAX_APPENDED = 10_000


def write_index_of(uow: UnitOfWork) -> WriteIndex | None:
    """The unit of work's persisted write index, when its storage keeps one (the SQLite one
    does: `write_index`); None for the others, which decide on the folded document."""
    index: WriteIndex | None = getattr(uow, "write_index", None)
    return index


def appended_entries(
    uow: UnitOfWork,
    stream: str,
    rendered: int,
    version: int,
    appended: Sequence[Event] = (),
) -> list[MemoryEntry] | None:
    """The entries the render of `stream` at `version` adds after its render at `rendered`,
    when every event between is a `MemoryAdded` (the fold puts each new row at the end of the
    document, so those renders differ by these entries appended, ADR 0088); None otherwise
    (then render in full). `appended`: the events the caller appended in this transaction;
    when they are exactly the ones after `rendered`, they are taken as they are instead of
    read back from the journal and decoded (ADR 0100)."""
    if not 0 < version - rendered <= MAX_APPENDED:
        return None
    if appended and appended[0].version == rendered + 1 and appended[-1].version == version:
        events: Sequence[Event] = appended
    else:
        events = uow.journal.read(stream, after=rendered)
    if len(events) != version - rendered:
        return None
    entries = []
    for event in events:
        if not isinstance(event, ev.MemoryAdded):
            return None
        entries.append(entry_of(event, namespace=event.namespace))
    return entries


class IndexedDocument:
    """`DocumentState` (and its `RowIndex`) answered from the persisted write index."""

    def __init__(self, index: WriteIndex, stream: str, version: int) -> None:
        self._index = index
        self._stream = stream
        self._version = version
        self._active: tuple[MemoryEntry, ...] | None = None

    @property
    def stream(self) -> str:
        return self._stream

    @property
    def target(self) -> Target:
        return target_of(self._stream)

    @property
    def version(self) -> int:
        return self._version

    @property
    def active(self) -> Sequence[MemoryEntry]:
        """Every active row in file order (read once; a capacity plan needs them)."""
        if self._active is None:
            self._active = tuple(self._index.active(self._stream))
        return self._active

    @property
    def index(self) -> IndexedDocument:
        return self

    def find(self, entry_id: str) -> MemoryEntry | None:
        raise NotImplementedError(f"the write index keeps no history ({entry_id})")

    def was_removed(self, entry_id: str) -> bool:
        raise NotImplementedError(f"the write index keeps no removals ({entry_id})")

    # -- RowIndex --------------------------------------------------------------------------

    def near_candidates(self, group: str | None, tokens: frozenset[str]) -> list[MemoryEntry]:
        return self._index.near_candidates(self._stream, group, tokens)

    def rows(self, group: str | None) -> list[MemoryEntry]:
        return self._index.rows(self._stream, group)

    def first(self, group: str | None) -> MemoryEntry | None:
        return self._index.first(self._stream, group)

    def exact(self, group: str | None, key: str) -> MemoryEntry | None:
        return self._index.exact(self._stream, group, key)

    def entry(self, entry_id: str) -> MemoryEntry | None:
        return self._index.entry(self._stream, entry_id)

    def row(self, group: str | None, entry_id: str) -> MemoryEntry:
        entry = self._index.entry(self._stream, entry_id)
        if entry is None or not self.holds(group, entry_id):
            raise KeyError(entry_id)
        return entry

    def holds(self, group: str | None, entry_id: str) -> bool:
        found = self._index.group_of_row(self._stream, entry_id)
        return found is not False and found == group

    def used(self, group: str | None) -> int:
        return self._index.used(self._stream, group)
