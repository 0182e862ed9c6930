"""The MemoryDocument aggregate: the entries of one target (one Markdown file) and their history.

State is rebuilt by folding events: ``fold(state, events) -> state``. ``evolve`` is the one-event
case. Folding is O(entries + events): the fold works on private dicts and freezes once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from datetime import date
from typing import Protocol, assert_never

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation, VersionConflict
from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.events import Event, as_memory_event
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope_index import RowIndex, ScopeIndex

# re-exported: the stream ids live apart so that naming a stream loads no events (ADR 0105)
from pi_hermes_memory.domain.memory.streams import stream_for as stream_for
from pi_hermes_memory.domain.memory.streams import target_of as target_of


@attrs.frozen(kw_only=True)
class MemoryDocument:
    stream: str
    target: Target
    version: int = 0
    active: tuple[MemoryEntry, ...] = ()
    history: tuple[MemoryEntry, ...] = ()
    #: Ids that are not rows of this document any more (removed, evicted, moved out) or live in
    #: another document (a merge target): a supersede chain may end at one of them.
    removed: frozenset[str] = frozenset()
    #: Ids erased by a purge (ADR 0026): never rows again, never restorable, never reused.
    purged: frozenset[str] = frozenset()

    @classmethod
    def empty(cls, target: Target) -> MemoryDocument:
        return cls(stream=stream_for(target), target=target)

    def find(self, entry_id: str) -> MemoryEntry | None:
        for entry in self.active:
            if entry.id == entry_id:
                return entry
        for entry in self.history:
            if entry.id == entry_id:
                return entry
        return None

    def was_removed(self, entry_id: str) -> bool:
        """`entry_id` left this document (removed, evicted, moved out) and is not a row."""
        return entry_id in self.removed

    def all_entries(self) -> Iterator[MemoryEntry]:
        yield from self.active
        yield from self.history

    @functools.cached_property
    def _cell(self) -> dict[str, _Carried]:
        # holds this document's lookups until a fold hands them on (`_appended`): a dict, so
        # that taking them is one atomic `pop` even when two threads fold the same state
        return {}

    @property
    def index(self) -> ScopeIndex:
        """The active rows grouped for the write rules (with the token index), built on first
        use (O(active)), or carried over from the document this one was folded from."""
        return self._carried().index

    def _carried(self) -> _Carried:
        carried = self._cell.get("carried")
        if carried is None:
            carried = _Carried(
                index=ScopeIndex(self.target, enumerate(self.active), probe=True),
                retired={e.id for e in self.history},
            )
            carried = self._cell.setdefault("carried", carried)
        return carried


@attrs.define(eq=False)
class _Carried:
    """A document's lookups that an add keeps current in O(1) (ADR 0039): its `index` and the
    ids of its history rows. Owned by one document at a time: folding an add into a document
    takes them from it (it builds its own again if it is asked later) and gives them to the
    result, so filling a store through single adds never rebuilds them."""

    index: ScopeIndex
    retired: set[str]


def entry_of(
    event: ev.MemoryAdded | ev.MemoryMovedIn | ev.MemoryRestored, *, namespace: str | None
) -> MemoryEntry:
    """The active entry an event brings into a document."""
    return MemoryEntry(
        id=event.entry_id,
        target=event.target,
        text=event.text,
        project=event.project,
        category=event.category,
        created=event.created,
        last_referenced=event.last_referenced,
        namespace=namespace,
        flagged=event.flagged,
        importance=event.importance,
        kind=event.kind,
        memory_id=lineage_of(event)[0],
        version_no=lineage_of(event)[1],
    )


def lineage_of(
    event: ev.MemoryAdded | ev.MemoryMovedIn | ev.MemoryRestored,
) -> tuple[str | None, int]:
    """The `memory_id` and `version_no` an event gives its entry (ADR 0074): an add starts a
    memory (an import's add may carry the exported ones); a move or a restore carries the ones
    the entry had (an older event carries none: the entry then is the first version of a
    memory of its own id)."""
    memory_id = None if event.memory_id == event.entry_id else event.memory_id
    return memory_id, event.version_no or 1


@attrs.define
class _Builder:
    """Mutable working copy used only inside `fold`."""

    target: Target
    stream: str
    version: int
    slots: dict[int, MemoryEntry]  # position slot -> active entry (keeps file order)
    slot_of: dict[str, int]
    history: dict[str, MemoryEntry]
    removed: set[str]
    next_slot: int
    purged: set[str] = attrs.Factory(set)

    @classmethod
    def of(cls, doc: MemoryDocument) -> _Builder:
        slots = dict(enumerate(doc.active))
        return cls(
            target=doc.target,
            stream=doc.stream,
            version=doc.version,
            slots=slots,
            slot_of={e.id: i for i, e in slots.items()},
            history={e.id: e for e in doc.history},
            removed=set(doc.removed),
            next_slot=len(slots),
            purged=set(doc.purged),
        )

    def freeze(self) -> MemoryDocument:
        return MemoryDocument(
            stream=self.stream,
            target=self.target,
            version=self.version,
            active=tuple(self.slots[k] for k in sorted(self.slots)),
            history=tuple(self.history.values()),
            removed=frozenset(self.removed),
            purged=frozenset(self.purged),
        )

    def active_entry(self, entry_id: str) -> MemoryEntry:
        slot = self.slot_of.get(entry_id)
        if slot is None:
            raise InvariantViolation(f"{self.stream}: entry {entry_id} is not active")
        return self.slots[slot]

    def require_new_id(self, entry_id: str) -> None:
        if (
            entry_id in self.slot_of
            or entry_id in self.history
            or entry_id in self.removed
            or entry_id in self.purged
        ):
            raise InvariantViolation(f"{self.stream}: entry id {entry_id} already used")

    def retire(self, entry_id: str, by: str, on: date) -> int:
        """Move an active entry to history, pointing at its successor; returns its slot."""
        old = self.active_entry(entry_id)
        slot = self.slot_of.pop(entry_id)
        del self.slots[slot]
        self.history[entry_id] = attrs.evolve(old, superseded_by=by, superseded_at=on)
        return slot

    def append(
        self, event: ev.MemoryAdded | ev.MemoryMovedIn | ev.MemoryRestored, *, namespace: str | None
    ) -> None:
        """A new active entry at the end of the document."""
        entry = entry_of(event, namespace=namespace)
        self.slots[self.next_slot] = entry
        self.slot_of[entry.id] = self.next_slot
        self.next_slot += 1

    def forget(self, ids: Iterable[str]) -> None:
        """Erase these ids from the rows, the history and the removals (a purge)."""
        for entry_id in ids:
            slot = self.slot_of.pop(entry_id, None)
            if slot is not None:
                del self.slots[slot]
            self.history.pop(entry_id, None)
            self.removed.discard(entry_id)
            self.purged.add(entry_id)

    def apply(self, any_event: Event) -> None:
        if any_event.stream != self.stream:
            raise InvariantViolation(f"event of {any_event.stream} applied to {self.stream}")
        if any_event.version != self.version + 1:
            raise VersionConflict(self.stream, self.version + 1, any_event.version)
        event = as_memory_event(any_event)
        self.version = event.version
        match event:
            case ev.MemoryAdded():
                self.require_new_id(event.entry_id)
                self.append(event, namespace=event.namespace)
            case ev.MemoryReplaced():
                self.require_new_id(event.new_id)
                old = self.active_entry(event.old_id)
                position = self.retire(event.old_id, event.new_id, event.at.date())
                new = attrs.evolve(
                    old,
                    id=event.new_id,
                    text=event.text,
                    project=event.project,
                    category=event.category,
                    created=event.created,
                    last_referenced=event.last_referenced,
                    flagged=event.flagged,
                    importance=old.importance if event.importance is None else event.importance,
                    kind=old.kind if event.kind is None else event.kind,
                    memory_id=old.stable_id,  # a new version of the same memory (ADR 0074)
                    version_no=old.version_no + 1,
                )
                self.slots[position] = new  # the new version takes the old one's place
                self.slot_of[new.id] = position
            case ev.MemorySuperseded():
                canonical = self.active_entry(event.by_id)
                self.retire(event.old_id, event.by_id, event.on)
                if event.on > canonical.last_referenced:  # a merge counts as a reference
                    self.slots[self.slot_of[canonical.id]] = attrs.evolve(
                        canonical, last_referenced=event.on
                    )
            case ev.MemoryRemoved() | ev.MemoryMovedOut():
                self.active_entry(event.entry_id)
                del self.slots[self.slot_of.pop(event.entry_id)]
                self.removed.add(event.entry_id)
            case ev.MemoryMovedIn():
                # an entry may come back to a document it once left (promote, then demote)
                if event.entry_id in self.slot_of or event.entry_id in self.history:
                    raise InvariantViolation(f"{self.stream}: entry id {event.entry_id} exists")
                self.removed.discard(event.entry_id)
                self.append(event, namespace=None)  # moves only involve the global layer
            case ev.MemoryMergedInto():
                self.retire(event.entry_id, event.into_id, event.on)
                self.removed.add(event.into_id)
            case ev.MemoryReferenced():
                entry = self.active_entry(event.entry_id)
                if event.on > entry.last_referenced:
                    self.slots[self.slot_of[entry.id]] = attrs.evolve(
                        entry, last_referenced=event.on
                    )
            case ev.MemoryRetagged():
                entry = self.active_entry(event.entry_id)
                self.slots[self.slot_of[entry.id]] = attrs.evolve(
                    entry,
                    project=event.project,
                    category=event.category,
                    created=event.created,
                    last_referenced=event.last_referenced,
                    namespace=event.namespace,
                    flagged=event.flagged,
                    importance=entry.importance if event.importance is None else event.importance,
                    kind=entry.kind if event.kind is None else event.kind,
                )
            case ev.MemoryRestored():
                if event.entry_id not in self.removed or event.entry_id in self.slot_of:
                    raise InvariantViolation(
                        f"{self.stream}: entry {event.entry_id} is not a removed entry"
                    )
                self.removed.discard(event.entry_id)
                self.append(event, namespace=event.namespace)
            case ev.MemoryPurged():
                self.forget(event.entry_ids)
            case _:
                assert_never(event)


def fold(state: MemoryDocument, events: Iterable[Event]) -> MemoryDocument:
    """Apply `events` in order; raises VersionConflict on a gap or a repeat."""
    events = tuple(events)
    if not events:
        return state
    appended = _appended(state, events)
    if appended is not None:
        return appended
    builder = _Builder.of(state)
    for event in events:
        builder.apply(event)
    return builder.freeze()


def _appended(state: MemoryDocument, events: tuple[Event, ...]) -> MemoryDocument | None:
    """The fold of `events` when they only add rows and `state` holds its lookups (a document
    whose index was asked for, as every add asks): O(events), where the general fold copies
    every row. None for anything else, and for anything the general fold would refuse (that
    fold then raises the error)."""
    version = state.version
    new: dict[str, ev.MemoryAdded] = {}
    for event in events:
        if (
            not isinstance(event, ev.MemoryAdded)
            or event.stream != state.stream
            or event.version != version + 1
            or event.entry_id in new
            or event.entry_id in state.removed
            or event.entry_id in state.purged
        ):
            return None
        version = event.version
        new[event.entry_id] = event
    cell = state._cell
    carried = cell.pop("carried", None)
    if carried is None:
        return None
    if any(i in carried.index or i in carried.retired for i in new):
        cell.setdefault("carried", carried)
        return None
    rows = tuple(entry_of(e, namespace=e.namespace) for e in new.values())
    for slot, entry in enumerate(rows, start=len(state.active)):
        carried.index.add(slot, entry)
    doc = attrs.evolve(state, version=version, active=state.active + rows)
    doc._cell["carried"] = carried
    return doc


def removals(
    target: Target, events: Iterable[Event]
) -> dict[str, tuple[MemoryEntry, ev.MemoryRemoved]]:
    """Fold a stream from its first event and keep, for every entry id whose last fate is a
    removal, the entry as it was just before and the removal: what `restore` can bring back.
    The fold's own rules give the entry's state, so it cannot drift from the document's."""
    builder = _Builder.of(MemoryDocument.empty(target))
    removed: dict[str, tuple[MemoryEntry, ev.MemoryRemoved]] = {}
    for event in events:
        if isinstance(event, ev.MemoryRemoved):
            removed[event.entry_id] = (builder.active_entry(event.entry_id), event)
        elif isinstance(event, ev.MemoryRestored | ev.MemoryMovedIn):
            removed.pop(event.entry_id, None)
        elif isinstance(event, ev.MemoryPurged):
            for entry_id in event.entry_ids:
                removed.pop(entry_id, None)
        builder.apply(event)
    return removed


def forget(doc: MemoryDocument, ids: Iterable[str]) -> MemoryDocument:
    """`doc` without these entries, as a purge of them leaves it (for a past version folded
    from redacted events: a hand-edit merge base never holds a purged entry)."""
    wanted = set(ids) & {e.id for e in doc.all_entries()} | (set(ids) & doc.removed)
    if not wanted:
        return doc
    builder = _Builder.of(doc)
    builder.forget(wanted)
    return builder.freeze()


def evolve(state: MemoryDocument, event: Event) -> MemoryDocument:
    return fold(state, (event,))


class DocumentState(Protocol):
    """What `decide` reads of a document: a MemoryDocument or a WorkingDocument."""

    @property
    def stream(self) -> str: ...

    @property
    def target(self) -> Target: ...

    @property
    def version(self) -> int: ...

    @property
    def active(self) -> Sequence[MemoryEntry]: ...

    @property
    def index(self) -> RowIndex: ...

    def find(self, entry_id: str) -> MemoryEntry | None: ...

    def was_removed(self, entry_id: str) -> bool: ...


class _TrackedSlots(dict[int, MemoryEntry]):
    """The builder's slots, logging every change as (slot, old, new) for the index."""

    def __init__(self, slots: dict[int, MemoryEntry]) -> None:
        super().__init__(slots)
        self.changes: list[tuple[int, MemoryEntry | None, MemoryEntry | None]] = []

    def __setitem__(self, slot: int, entry: MemoryEntry) -> None:
        self.changes.append((slot, self.get(slot), entry))
        super().__setitem__(slot, entry)

    def __delitem__(self, slot: int) -> None:
        self.changes.append((slot, self[slot], None))
        super().__delitem__(slot)

    def pop(self, slot: int, *default: MemoryEntry) -> MemoryEntry:  # type: ignore[override]
        if slot in self:
            self.changes.append((slot, self[slot], None))
        return super().pop(slot, *default)


class WorkingDocument:
    """A mutable copy of a document for deciding many commands in a row (a batch).

    `decide` reads it like a MemoryDocument. Applying a decision's events costs O(events) and
    keeps `index` current, where folding a frozen document would copy every entry per decision
    (O(n^2) for a batch of n). `active` is materialized only when asked (replace/remove scan
    it) and cached until the next change; `freeze` returns the folded document.
    """

    def __init__(self, doc: MemoryDocument) -> None:
        self._builder = _Builder.of(doc)
        self._slots = _TrackedSlots(self._builder.slots)
        self._builder.slots = self._slots
        # its own (it changes), with the token index: a batch asks it for many adds
        self.index = ScopeIndex(doc.target, self._slots.items(), probe=True)
        self._active: tuple[MemoryEntry, ...] | None = doc.active

    @property
    def stream(self) -> str:
        return self._builder.stream

    @property
    def target(self) -> Target:
        return self._builder.target

    @property
    def version(self) -> int:
        return self._builder.version

    @property
    def active(self) -> Sequence[MemoryEntry]:
        if self._active is None:
            slots = self._slots
            self._active = tuple(slots[k] for k in sorted(slots))
        return self._active

    def find(self, entry_id: str) -> MemoryEntry | None:
        """The active or history row with this id, or None (O(1))."""
        builder = self._builder
        slot = builder.slot_of.get(entry_id)
        return builder.slots[slot] if slot is not None else builder.history.get(entry_id)

    def was_removed(self, entry_id: str) -> bool:
        return entry_id in self._builder.removed

    def apply(self, events: Iterable[Event]) -> None:
        for event in events:
            self._builder.apply(event)
        changes, self._slots.changes = self._slots.changes, []
        if changes:
            self._active = None
        for slot, old, new in changes:
            if old is not None:
                self.index.discard(slot, old)
            if new is not None:
                self.index.add(slot, new)

    def freeze(self) -> MemoryDocument:
        return self._builder.freeze()
