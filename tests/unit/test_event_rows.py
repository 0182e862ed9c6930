"""The event → row semantics (domain/memory/rows.py), the memory union and `stamp` (style rule 28).

The contract suite runs the same journal through every storage adapter
(`StorageContract.test_every_event_type_projects_to_the_folded_state`); these tests pin the
operations themselves and what happens to an event no projection knows.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import ClassVar

import attrs
import pytest
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.commands import AddMemory
from pi_hermes_memory.domain.memory.decide import WritePolicy, decide
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import (
    EVENT_TYPES,
    MEMORY_EVENT_TYPES,
    UNSTAMPED,
    Event,
    MemoryAdded,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemoryRetagged,
    RemovalReason,
    as_memory_event,
    stamp,
)
from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.purge import index as purge_index
from pi_hermes_memory.domain.memory.reconcile import reconcile
from pi_hermes_memory.domain.memory.rows import (
    DeleteRows,
    InsertRow,
    ReferenceRow,
    SupersedeRow,
    UpsertRow,
    row_changes,
)
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.testing.journals import every_event_type

AT = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
DAY = date(2026, 7, 29)
PROJECT = stream_for(Target.PROJECT)
MEMORY = stream_for(Target.MEMORY)
ROW_CHANGES = (InsertRow, UpsertRow, SupersedeRow, ReferenceRow, DeleteRows)


@attrs.frozen(kw_only=True)
class MemoryTeleported(Event):
    """An event type no projection knows (as a new one is until it is handled)."""

    TAG: ClassVar[str] = "memory.teleported.v1"

    entry_id: str


def _added(stream: str, target: Target, project: str | None, entry_id: str = "a") -> MemoryAdded:
    return MemoryAdded(
        stream=stream,
        version=1,
        at=AT,
        entry_id=entry_id,
        target=target,
        text="a fact",
        project=project,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )


def test_the_union_is_every_event_type() -> None:
    assert set(MEMORY_EVENT_TYPES) == set(EVENT_TYPES)
    assert len(EVENT_TYPES) == len({cls.TAG for cls in EVENT_TYPES}) == 11


def test_every_event_type_has_row_changes_and_folds() -> None:
    journal = every_event_type()
    assert {type(e) for events in journal.values() for e in events} == set(EVENT_TYPES)
    for target, events in journal.items():
        for event in events:
            changes = row_changes(as_memory_event(event))
            assert all(isinstance(c, ROW_CHANGES) for c in changes)
        doc = fold(MemoryDocument.empty(target), events)
        assert doc.version == len(events)
        # the purge index and the hand-edit merge read every type too
        purge_index({doc.stream: events})
        merged = reconcile(
            base=doc,
            parsed=ParsedDocument(entries=()),
            head=doc,
            new_id=lambda: "new",
            at=AT,
            since_base=events,
        )
        assert [e.version for e in merged.events] == list(
            range(doc.version + 1, doc.version + 1 + len(merged.events))
        )


def test_an_unknown_event_fails_every_projection_and_fold_loudly() -> None:
    stray = MemoryTeleported(stream=MEMORY, version=1, at=AT, entry_id="a")
    with pytest.raises(InvariantViolation):
        as_memory_event(stray)
    with pytest.raises(AssertionError):  # assert_never: the match has no case for it
        row_changes(stray)  # type: ignore[arg-type]
    with pytest.raises(InvariantViolation):
        fold(MemoryDocument.empty(Target.MEMORY), [stray])
    with pytest.raises(InvariantViolation):
        purge_index({MEMORY: [stray]})
    storage = InMemoryStorage()
    with pytest.raises(InvariantViolation), storage.transaction() as uow:
        uow.projection.apply([stray])
    assert storage.rows == {}


def test_unattributed_project_rows_are_not_inserted() -> None:
    (insert,) = row_changes(_added(PROJECT, Target.PROJECT, None))
    assert isinstance(insert, InsertRow) and insert.resolved(None) is None
    (attributed,) = row_changes(_added(PROJECT, Target.PROJECT, "web"))
    assert isinstance(attributed, InsertRow) and attributed.resolved(None) is not None


def test_a_replace_supersedes_and_inherits_the_old_rows_target_and_namespace() -> None:
    replaced = MemoryReplaced(
        stream=MEMORY,
        version=2,
        at=AT,
        old_id="a",
        new_id="b",
        text="a fact, revised",
        project=None,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )
    supersede, insert = row_changes(replaced)
    assert supersede == SupersedeRow(id="a", by="b", at=AT.date())
    assert isinstance(insert, InsertRow) and insert.scope_of == "a"
    assert insert.resolved(None) == insert.row  # no old row: the stream's target, no namespace
    assert (insert.row.target, insert.row.namespace) == (Target.MEMORY, None)
    row = insert.resolved((Target.USER, "agent:coder"))
    assert row is not None and (row.target, row.namespace) == (Target.USER, "agent:coder")
    assert insert.resolved((Target.PROJECT, None)) is None  # inherits: an unattributed project row


def test_a_move_in_updates_in_place_and_a_move_out_changes_nothing() -> None:
    out = MemoryMovedOut(stream=PROJECT, version=2, at=AT, entry_id="a", to_stream=MEMORY)
    assert row_changes(out) == ()
    moved = MemoryMovedIn(
        stream=MEMORY,
        version=1,
        at=AT,
        entry_id="a",
        from_stream=PROJECT,
        target=Target.MEMORY,
        text="a fact",
        project=None,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )
    (upsert,) = row_changes(moved)
    assert isinstance(upsert, UpsertRow)
    assert upsert.row.namespace is None and "text" not in upsert.columns
    assert {"target", "project", "namespace", "last_referenced"} <= set(upsert.columns)


def test_a_retag_deletes_an_unattributed_project_row_and_keeps_the_last_date() -> None:
    retag = MemoryRetagged(
        stream=PROJECT,
        version=2,
        at=AT,
        entry_id="a",
        text="a fact",
        project=None,
        category=None,
        created=DAY,
        last_referenced=DAY,
        namespace=None,
    )
    assert row_changes(retag) == (DeleteRows(ids=("a",)),)
    (upsert,) = row_changes(attrs.evolve(retag, project="web"))
    assert isinstance(upsert, UpsertRow) and upsert.row.target is Target.PROJECT
    assert "last_referenced" not in upsert.columns and "text" not in upsert.columns


def test_removed_rows_are_deleted_and_references_never_move_back() -> None:
    removed = MemoryRemoved(
        stream=MEMORY, version=2, at=AT, entry_id="a", reason=RemovalReason.TOOL
    )
    assert row_changes(removed) == (DeleteRows(ids=("a",)),)
    storage = InMemoryStorage()
    with storage.transaction() as uow:
        uow.projection.apply(
            [
                _added(MEMORY, Target.MEMORY, None),
                *stamp(
                    MEMORY,
                    1,
                    [
                        MemoryReferenced(stream=MEMORY, at=AT, entry_id=entry_id, on=on)
                        for entry_id, on in (
                            ("a", date(2026, 8, 1)),
                            ("a", date(2026, 7, 1)),
                            ("missing", date(2026, 8, 1)),
                        )
                    ],
                ),
            ]
        )
    assert storage.rows["a"]["last_referenced"] == date(2026, 8, 1)
    assert set(storage.rows) == {"a"}


# -- stamp: the one place versions are assigned --------------------------------------------


def _unversioned(entry_id: str, stream: str = MEMORY) -> MemoryRemoved:
    return MemoryRemoved(stream=stream, at=AT, entry_id=entry_id, reason=RemovalReason.TOOL)


def test_stamp_numbers_after_the_streams_version_and_changes_nothing_else() -> None:
    events = (_unversioned("a"), _unversioned("b"), _unversioned("c"))
    assert all(e.version == UNSTAMPED for e in events)
    stamped = stamp(MEMORY, 4, events)
    assert [e.version for e in stamped] == [5, 6, 7]
    assert [attrs.evolve(e, version=UNSTAMPED) for e in stamped] == list(events)
    assert stamp(MEMORY, 4, ()) == ()


def test_stamp_refuses_a_stamped_event_or_one_of_another_stream() -> None:
    with pytest.raises(InvariantViolation):
        stamp(MEMORY, 0, stamp(MEMORY, 0, [_unversioned("a")]))
    with pytest.raises(InvariantViolation):
        stamp(MEMORY, 0, [_unversioned("a", stream=PROJECT)])


def test_decisions_chain_their_versions_after_the_document() -> None:
    """An add that evicts: the evictions, then the addition, numbered after the head."""
    policy = WritePolicy(
        scope=SessionScope(project=None), char_limit=30, overflow=OverflowStrategy.FIFO_EVICT
    )
    doc = MemoryDocument.empty(Target.MEMORY)
    for n, text in enumerate(("first fact here", "second fact")):
        cmd = AddMemory(target=Target.MEMORY, text=text, entry_id=f"m{n}", at=AT)
        doc = fold(doc, decide(doc, cmd, policy).events)
    cmd = AddMemory(target=Target.MEMORY, text="a third, longer fact", entry_id="m9", at=AT)
    decision = decide(doc, cmd, policy)
    assert [type(e) for e in decision.events] == [MemoryRemoved, MemoryRemoved, MemoryAdded]
    assert [e.version for e in decision.events] == [3, 4, 5]
    assert fold(doc, decision.events).version == 5
