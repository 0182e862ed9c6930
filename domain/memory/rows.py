"""What each memory event does to the `memories` read model: the one place of the event → row
semantics (style rule 28), executed by every storage adapter (SQLite table, in-memory dicts).

The read model holds one row per active or superseded entry, except project entries without a
project attribution, which live in Markdown only. `row_changes(event)` turns an event into a
few operations from a closed set (`RowChange`); an adapter executes each one with a `match`
that ends in `assert_never`, so a new event or a new operation fails type-checking instead of
being silently ignored. An operation never touches a row's vector (ADR 0015) nor derives
search columns (an adapter may add its own, as SQLite adds `grams` for every text it inserts).
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Literal, TypeAlias, assert_never

import attrs
from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.document import target_of
from pi_hermes_memory.domain.memory.events import (
    Event,
    as_memory_event,
)
from pi_hermes_memory.domain.memory.model import FailureCategory, Target

if TYPE_CHECKING:
    from pi_hermes_memory.domain.memory.events import MemoryEvent

#: the columns an `UpsertRow` may set on an existing row (never the text: a new text is a new
#: row, so a row's vector always belongs to its text)
Column: TypeAlias = Literal[
    "target", "project", "namespace", "category", "created", "last_referenced", "flagged"
]


def stored(target: Target, project: str | None) -> bool:
    """Whether the read model holds a row of this attribution (unattributed project rows: no)."""
    return not (target is Target.PROJECT and project is None)


@attrs.frozen(kw_only=True)
class Row:
    """An active row's columns (a new row is never superseded)."""

    id: str
    target: Target
    text: str
    project: str | None
    namespace: str | None
    category: FailureCategory | None
    created: date
    last_referenced: date
    flagged: str | None


@attrs.frozen(kw_only=True)
class InsertRow:
    """Add `row`. When `scope_of` names a stored row, the new row takes that row's target and
    namespace (a new version stays where its old one was). A row that then is an unattributed
    project row is not stored."""

    row: Row
    scope_of: str | None = None

    def resolved(self, scope: tuple[Target, str | None] | None) -> Row | None:
        """The row to insert, given the (target, namespace) of the `scope_of` row when it
        exists (None: no such row, or no `scope_of`); None when nothing is stored."""
        row = self.row
        if scope is not None:
            row = attrs.evolve(row, target=scope[0], namespace=scope[1])
        return row if stored(row.target, row.project) else None


@attrs.frozen(kw_only=True)
class UpsertRow:
    """Set `columns` of the row `row.id` to `row`'s values, in place: the row keeps its text,
    supersede state and vector. Without such a row, insert `row` (as `InsertRow(row=row)`)."""

    row: Row
    columns: tuple[Column, ...]


@attrs.frozen(kw_only=True)
class SupersedeRow:
    """The row `id`, when there is one, becomes history pointing at `by` since `at`."""

    id: str
    by: str
    at: date


@attrs.frozen(kw_only=True)
class ReferenceRow:
    """The row `id`'s `last_referenced` moves to `on` if that is later: it never moves back."""

    id: str
    on: date


@attrs.frozen(kw_only=True)
class DeleteRows:
    """These rows (active or history) are gone, with their vectors; absent ones are no error."""

    ids: tuple[str, ...]


RowChange: TypeAlias = InsertRow | UpsertRow | SupersedeRow | ReferenceRow | DeleteRows

#: what a move sets on the row it carries over (its id, text, history and vector stay)
_MOVED: tuple[Column, ...] = (
    "target",
    "project",
    "namespace",
    "category",
    "created",
    "last_referenced",
    "flagged",
)
#: what a retag sets: the metadata only (its last date is the entry's, so it is left alone)
_RETAGGED: tuple[Column, ...] = ("project", "namespace", "category", "created", "flagged")


def projected(event: Event) -> tuple[RowChange, ...]:
    """The row changes of any journal event: a skill event changes no memory row (skills are
    read from their own streams, ADR 0030); an event of neither kind raises."""
    if event.TAG not in ev.TAG_KINDS:  # builds no event class (ADR 0111)
        # a skill event's class is loaded only when one exists (issue 29, ADR 0099)
        from pi_hermes_memory.domain.skills.events import SKILL_EVENT_TYPES

        if isinstance(event, SKILL_EVENT_TYPES):
            return ()
    return row_changes(as_memory_event(event))


def row_changes(event: MemoryEvent) -> tuple[RowChange, ...]:
    """What `event` does to the read model, in order."""
    match event:
        case ev.MemoryAdded() | ev.MemoryRestored():
            return (InsertRow(row=_row(event, event.entry_id, event.target, event.namespace)),)
        case ev.MemoryReplaced():
            new = _row(event, event.new_id, target_of(event.stream), None)
            return (
                SupersedeRow(id=event.old_id, by=event.new_id, at=event.at.date()),
                InsertRow(row=new, scope_of=event.old_id),
            )
        case ev.MemorySuperseded():
            return (
                SupersedeRow(id=event.old_id, by=event.by_id, at=event.on),
                ReferenceRow(id=event.by_id, on=event.on),  # a merge counts as a reference
            )
        case ev.MemoryRemoved():
            return (DeleteRows(ids=(event.entry_id,)),)
        case ev.MemoryPurged():  # rows, history rows and their vectors
            return (DeleteRows(ids=event.entry_ids),)
        case ev.MemoryMovedOut():
            return ()  # the MemoryMovedIn of the same transaction updates the row in place
        case ev.MemoryMovedIn():
            # moves only involve the global layer: the row leaves any namespace
            return (UpsertRow(row=_row(event, event.entry_id, event.target, None), columns=_MOVED),)
        case ev.MemoryMergedInto():
            return (SupersedeRow(id=event.entry_id, by=event.into_id, at=event.on),)
        case ev.MemoryReferenced():
            return (ReferenceRow(id=event.entry_id, on=event.on),)
        case ev.MemoryRetagged():
            row = _row(event, event.entry_id, target_of(event.stream), event.namespace)
            if not stored(row.target, row.project):
                return (DeleteRows(ids=(event.entry_id,)),)  # unattributed: Markdown only
            return (UpsertRow(row=row, columns=_RETAGGED),)
        case _:
            assert_never(event)


def _row(
    event: ev.MemoryAdded
    | ev.MemoryRestored
    | ev.MemoryReplaced
    | ev.MemoryMovedIn
    | ev.MemoryRetagged,
    entry_id: str,
    target: Target,
    namespace: str | None,
) -> Row:
    return Row(
        id=entry_id,
        target=target,
        text=event.text,
        project=event.project,
        namespace=namespace,
        category=event.category,
        created=event.created,
        last_referenced=event.last_referenced,
        flagged=event.flagged,
    )
