"""What each memory event does to a document's active rows, for a persisted write index (ADR 0084).

A write needs of its document only the active rows grouped for the write rules (`ScopeIndex`:
exact text, used characters, the first row, the near-duplicate candidates). A storage may keep
those rows in its own tables, updated in the transaction that appends the events, so a new
process decides an add without folding the whole document. `advance` applies one event to such
a table with exactly the fold's rules for active rows (`document._Builder.apply`): a new row at
the end, a replace in its old row's place, a retag or a reference in place, a removal gone.
Only the active rows: history, removals and purges stay the fold's (a write that needs them
reads the whole document). Pure: the table is the caller's.
"""

from __future__ import annotations

from typing import Protocol, assert_never

import attrs
from pi_hermes_memory.domain.memory.document import entry_of
from pi_hermes_memory.domain.memory.events import (
    Event,
    MemoryAdded,
    MemoryMergedInto,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryPurged,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemoryRestored,
    MemoryRetagged,
    MemorySuperseded,
    as_memory_event,
)
from pi_hermes_memory.domain.memory.model import MemoryEntry

__all__ = ["RowTable", "StaleRows", "advance"]


class RowTable(Protocol):
    """A document's active rows by id, each at a slot that orders them as the file does."""

    def get(self, entry_id: str) -> tuple[int, MemoryEntry] | None: ...

    def put(self, slot: int, entry: MemoryEntry) -> None:
        """Insert `entry` at `slot`, or overwrite the row of its id."""
        ...

    def delete(self, entry_id: str) -> None: ...

    def next_slot(self) -> int:
        """A slot after every row's (the end of the file)."""
        ...


class StaleRows(Exception):
    """The table does not hold a row the event names: it does not reflect the version before
    the event (the caller then marks it stale; it is rebuilt from the fold)."""


def _row(table: RowTable, entry_id: str) -> tuple[int, MemoryEntry]:
    found = table.get(entry_id)
    if found is None:
        raise StaleRows(entry_id)
    return found


def advance(table: RowTable, any_event: Event) -> None:
    """Apply one memory event to `table` as `fold` applies it to the active rows. Raises
    `StaleRows` when the table lacks a row the event changes (it is not the state before it)."""
    event = as_memory_event(any_event)
    match event:
        case MemoryAdded() | MemoryRestored():
            table.put(table.next_slot(), entry_of(event, namespace=event.namespace))
        case MemoryMovedIn():
            table.put(table.next_slot(), entry_of(event, namespace=None))
        case MemoryReplaced():
            slot, old = _row(table, event.old_id)
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
                memory_id=old.stable_id,
                version_no=old.version_no + 1,
            )
            table.delete(event.old_id)
            table.put(slot, new)
        case MemorySuperseded():
            slot, canonical = _row(table, event.by_id)
            _row(table, event.old_id)
            table.delete(event.old_id)
            if event.on > canonical.last_referenced:
                table.put(slot, attrs.evolve(canonical, last_referenced=event.on))
        case MemoryRemoved() | MemoryMovedOut():
            _row(table, event.entry_id)
            table.delete(event.entry_id)
        case MemoryMergedInto():
            _row(table, event.entry_id)
            table.delete(event.entry_id)
        case MemoryReferenced():
            slot, entry = _row(table, event.entry_id)
            if event.on > entry.last_referenced:
                table.put(slot, attrs.evolve(entry, last_referenced=event.on))
        case MemoryRetagged():
            slot, entry = _row(table, event.entry_id)
            table.put(
                slot,
                attrs.evolve(
                    entry,
                    project=event.project,
                    category=event.category,
                    created=event.created,
                    last_referenced=event.last_referenced,
                    namespace=event.namespace,
                    flagged=event.flagged,
                    importance=entry.importance if event.importance is None else event.importance,
                    kind=entry.kind if event.kind is None else event.kind,
                ),
            )
        case MemoryPurged():
            for entry_id in event.entry_ids:
                if table.get(entry_id) is not None:
                    table.delete(entry_id)
        case _:
            assert_never(event)
