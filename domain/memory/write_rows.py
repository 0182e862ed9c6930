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
from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.document import entry_of
from pi_hermes_memory.domain.memory.events import Event, as_memory_event
from pi_hermes_memory.domain.memory.model import MemoryEntry

__all__ = ["RowTable", "advance"]


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


def advance(table: RowTable, any_event: Event) -> bool:
    """Apply one memory event to `table` as `fold` applies it to the active rows. False, with
    the table unchanged, when it lacks a row the event changes: it is not the state before the
    event (the caller then marks it stale; it is rebuilt from the fold)."""
    event = as_memory_event(any_event)
    match event:
        case ev.MemoryAdded() | ev.MemoryRestored():
            table.put(table.next_slot(), entry_of(event, namespace=event.namespace))
        case ev.MemoryMovedIn():
            table.put(table.next_slot(), entry_of(event, namespace=None))
        case ev.MemoryReplaced():
            found = table.get(event.old_id)
            if found is None:
                return False
            slot, old = found
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
        case ev.MemorySuperseded():
            found = table.get(event.by_id)
            if found is None or table.get(event.old_id) is None:
                return False
            slot, canonical = found
            table.delete(event.old_id)
            if event.on > canonical.last_referenced:
                table.put(slot, attrs.evolve(canonical, last_referenced=event.on))
        case ev.MemoryRemoved() | ev.MemoryMovedOut() | ev.MemoryMergedInto():
            if table.get(event.entry_id) is None:
                return False
            table.delete(event.entry_id)
        case ev.MemoryReferenced():
            found = table.get(event.entry_id)
            if found is None:
                return False
            slot, entry = found
            if event.on > entry.last_referenced:
                table.put(slot, attrs.evolve(entry, last_referenced=event.on))
        case ev.MemoryRetagged():
            found = table.get(event.entry_id)
            if found is None:
                return False
            slot, entry = found
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
        case ev.MemoryPurged():
            for entry_id in event.entry_ids:
                if table.get(entry_id) is not None:
                    table.delete(entry_id)
        case _:
            assert_never(event)
    return True
