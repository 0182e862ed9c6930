"""The adapter contract suites (see `pi_hermes_memory.testing`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any, ClassVar

import attrs
import pytest
from pi_hermes_memory.domain.errors import InvariantViolation, VersionConflict
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import (
    EVENT_TYPES,
    Event,
    MemoryAdded,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryPurged,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemorySuperseded,
    RemovalReason,
)
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.ports.memory import RebuildReport
from pi_hermes_memory.ports.search import ScopeClause, SearchHit, SearchQuery
from pi_hermes_memory.testing.journals import every_event_type

AT = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
DAY = date(2026, 7, 29)
STREAM = "memory:memory"


def added(version: int, entry_id: str, text: str = "a fact", stream: str = STREAM) -> MemoryAdded:
    return MemoryAdded(
        stream=stream,
        version=version,
        at=AT,
        entry_id=entry_id,
        target=Target.MEMORY,
        text=text,
        project=None,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )


def _replaced(version: int, old_id: str, new_id: str, text: str) -> MemoryReplaced:
    return MemoryReplaced(
        stream=STREAM,
        version=version,
        at=datetime(2026, 8, 2, 9, 0, tzinfo=UTC),
        old_id=old_id,
        new_id=new_id,
        text=text,
        project=None,
        category=None,
        created=DAY,
        last_referenced=date(2026, 8, 2),
    )


def _rebuild_events() -> dict[Target, list[Event]]:
    """A small journal for the rebuild tests: active rows, history, a merge, a removal, a
    namespaced row, a failure and a project row with and without a project attribution."""
    project, failure, user = (stream_for(t) for t in (Target.PROJECT, Target.FAILURE, Target.USER))
    return {
        Target.MEMORY: [
            added(1, "m1", "The CI runs on GitHub Actions"),
            added(2, "m2", "Deploys go through the staging cluster"),
            _replaced(3, "m1", "m3", "The CI runs on Buildkite"),
            added(4, "m4", "The CI runs on Buildkite and GitHub"),
            MemorySuperseded(
                stream=STREAM, version=5, at=AT, old_id="m4", by_id="m3", on=date(2026, 8, 3)
            ),
            added(6, "m5", "a note that goes away"),
            MemoryRemoved(
                stream=STREAM, version=7, at=AT, entry_id="m5", reason=RemovalReason.TOOL
            ),
            attrs.evolve(added(8, "m6", "Agent-only hint"), namespace="agent:coder"),
        ],
        Target.USER: [
            attrs.evolve(added(1, "u1", "Prefers tabs", stream=user), target=Target.USER)
        ],
        Target.PROJECT: [
            attrs.evolve(
                added(1, "p1", "The API listens on port 8080", stream=project),
                target=Target.PROJECT,
                project="web",
            ),
            attrs.evolve(
                added(2, "p2", "An entry without a project", stream=project),
                target=Target.PROJECT,
            ),
        ],
        Target.FAILURE: [
            attrs.evolve(
                added(1, "f1", "pip failed on old setuptools", stream=failure),
                target=Target.FAILURE,
                project="web",
                category=FailureCategory.TOOL_QUIRK,
            )
        ],
    }


def _folded(target: Target, events: Sequence[Event]) -> MemoryDocument:
    return fold(MemoryDocument.empty(target), events)


def _quiet(report: RebuildReport) -> bool:
    """Nothing added, updated, removed or kept as unknown history, and the index was sound."""
    return not report.fts_rebuilt and all(
        r.changed == 0 and r.kept_history == 0 for r in report.targets
    )


REPLICA = "replica-1"


class StorageContract:
    """Journal, projection and ledger semantics of a `Storage` adapter.

    Provide a ``storage`` fixture returning a fresh, empty Storage.
    """

    def test_append_then_read_in_order(self, storage: Any) -> None:
        events = [added(1, "a", "first"), added(2, "b", "second")]
        with storage.transaction() as uow:
            uow.journal.append(STREAM, 0, events)
        with storage.transaction() as uow:
            assert list(uow.journal.read(STREAM)) == events
            assert list(uow.journal.read(STREAM, after=1)) == events[1:]
            assert list(uow.journal.read(STREAM, upto=1)) == events[:1]
            assert uow.journal.version(STREAM) == 2
            assert uow.journal.version("memory:user") == 0

    def test_streams_are_independent(self, storage: Any) -> None:
        with storage.transaction() as uow:
            uow.journal.append(STREAM, 0, [added(1, "a")])
            uow.journal.append("memory:user", 0, [added(1, "u", stream="memory:user")])
        with storage.transaction() as uow:
            assert uow.journal.version(STREAM) == 1
            assert [e.stream for e in uow.journal.read("memory:user")] == ["memory:user"]

    def test_streams_lists_by_exact_prefix(self, storage: Any) -> None:
        with storage.transaction() as uow:
            assert list(uow.journal.streams("memory:")) == []
            for stream in ("memory:user", STREAM, "memory:Userx", "memoryX"):
                uow.journal.append(stream, 0, [added(1, stream, stream=stream)])
        with storage.transaction() as uow:
            assert list(uow.journal.streams("memory:")) == sorted(
                ["memory:user", STREAM, "memory:Userx"]
            )
            assert list(uow.journal.streams("memory:u")) == ["memory:user"]  # case counts
            assert list(uow.journal.streams("memory:%")) == []  # no wildcards

    def test_stale_expected_version_conflicts(self, storage: Any) -> None:
        with storage.transaction() as uow:
            uow.journal.append(STREAM, 0, [added(1, "a")])
        with pytest.raises(VersionConflict), storage.transaction() as uow:
            uow.journal.append(STREAM, 0, [added(1, "b")])
        with storage.transaction() as uow:
            assert [e.entry_id for e in uow.journal.read(STREAM)] == ["a"]

    def test_events_must_chain_versions(self, storage: Any) -> None:
        with pytest.raises(VersionConflict), storage.transaction() as uow:
            uow.journal.append(STREAM, 0, [added(1, "a"), added(3, "b")])
        with storage.transaction() as uow:
            assert uow.journal.version(STREAM) == 0

    def test_failed_transaction_leaves_no_trace(self, storage: Any) -> None:
        class Boom(Exception):
            pass

        with pytest.raises(Boom), storage.transaction() as uow:
            uow.journal.append(STREAM, 0, [added(1, "a")])
            uow.projection.apply([added(1, "a")])
            uow.ledger.record(STREAM, REPLICA, 1, "f" * 64)
            raise Boom
        with storage.transaction() as uow:
            assert uow.journal.version(STREAM) == 0
            assert uow.ledger.rendered(STREAM, REPLICA) is None

    def test_ledger_records_last_render(self, storage: Any) -> None:
        with storage.transaction() as uow:
            assert uow.ledger.rendered(STREAM, REPLICA) is None
            uow.ledger.record(STREAM, REPLICA, 3, "a" * 64)
            uow.ledger.record(STREAM, REPLICA, 4, "b" * 64)
        with storage.transaction() as uow:
            assert uow.ledger.rendered(STREAM, REPLICA) == (4, "b" * 64)

    def test_ledger_keeps_each_replica_apart(self, storage: Any) -> None:
        """Two agent roots on one journal render the same stream into two files: what one
        rendered is never what the other is recorded to hold (ADR 0022)."""
        with storage.transaction() as uow:
            uow.ledger.record(STREAM, "root-a/MEMORY.md", 3, "a" * 64)
            uow.ledger.record(STREAM, "root-b/MEMORY.md", 5, "b" * 64)
            uow.ledger.record("memory:user", "root-a/MEMORY.md", 1, "c" * 64)
        with storage.transaction() as uow:
            assert uow.ledger.rendered(STREAM, "root-a/MEMORY.md") == (3, "a" * 64)
            assert uow.ledger.rendered(STREAM, "root-b/MEMORY.md") == (5, "b" * 64)
            assert uow.ledger.rendered("memory:user", "root-a/MEMORY.md") == (1, "c" * 64)
            assert uow.ledger.rendered(STREAM, "root-c/MEMORY.md") is None

    def test_snapshot_keeps_the_latest_per_stream(self, storage: Any) -> None:
        """One snapshot per stream, replaced by the next and dropped with a failed
        transaction; opaque text comes back exactly (ADR 0024)."""

        class Boom(Exception):
            pass

        with storage.transaction() as uow:
            assert uow.journal.snapshot(STREAM) is None
            uow.journal.save_snapshot(STREAM, 3, '{"a": "é§"}')
            uow.journal.save_snapshot(STREAM, 5, '{"b": 2}')
            uow.journal.save_snapshot("memory:user", 1, "x")
        with pytest.raises(Boom), storage.transaction() as uow:
            uow.journal.save_snapshot(STREAM, 9, "lost")
            raise Boom
        with storage.transaction() as uow:
            assert uow.journal.snapshot(STREAM) == (5, '{"b": 2}')
            assert uow.journal.snapshot("memory:user") == (1, "x")

    def test_snapshot_version_is_the_stored_snapshots_version(self, storage: Any) -> None:
        """`snapshot_version` answers `snapshot`'s version without its data (ADR 0106): None
        before one is stored, the latest after a replacement, the committed one after a
        failed transaction, and in a read-only unit of work too."""

        class Boom(Exception):
            pass

        with storage.transaction() as uow:
            assert uow.journal.snapshot_version(STREAM) is None
            uow.journal.save_snapshot(STREAM, 3, "a")
            assert uow.journal.snapshot_version(STREAM) == 3
            uow.journal.save_snapshot(STREAM, 7, "b" * 10_000)
            assert uow.journal.snapshot_version(STREAM) == 7
            assert uow.journal.snapshot_version("memory:user") is None
        with pytest.raises(Boom), storage.transaction() as uow:
            uow.journal.save_snapshot(STREAM, 9, "lost")
            assert uow.journal.snapshot_version(STREAM) == 9
            raise Boom
        with storage.snapshot() as uow:
            assert uow.journal.snapshot_version(STREAM) == 7
            assert uow.journal.snapshot(STREAM) == (7, "b" * 10_000)

    def test_snapshot_unit_of_work_reads_what_was_committed(self, storage: Any) -> None:
        """`Storage.snapshot()` is a read-only unit of work on the committed state."""
        with storage.transaction() as uow:
            uow.journal.append(STREAM, 0, [added(1, "a")])
            uow.ledger.record(STREAM, REPLICA, 1, "a" * 64)
            uow.journal.save_snapshot(STREAM, 1, "s")
        with storage.snapshot() as uow:
            assert [e.entry_id for e in uow.journal.read(STREAM)] == ["a"]
            assert uow.journal.version(STREAM) == 1
            assert uow.ledger.rendered(STREAM, REPLICA) == (1, "a" * 64)
            assert uow.journal.snapshot(STREAM) == (1, "s")

    def test_stable_memory_ids_survive_the_journal(self, storage: Any) -> None:
        """ADR 0074: a memory's stable id is derived by folding what the journal returns, and
        the optional lineage fields of a move come back as they were written (an adapter that
        dropped them would give a promoted memory a new id). Snapshot text is opaque to a
        storage (`test_snapshot_keeps_the_latest_per_stream`); its codec keeps the lineage."""
        from pi_hermes_memory.domain.memory.identity import resolve

        project = stream_for(Target.PROJECT)
        replaced = [
            MemoryReplaced(
                stream=project,
                version=version,
                at=AT,
                old_id=old,
                new_id=new,
                text=f"Deploys use bin/{new}",
                project="web",
                category=None,
                created=DAY,
                last_referenced=DAY,
            )
            for version, old, new in ((2, "p", "p2"), (3, "p2", "p3"))
        ]
        moved_in = MemoryMovedIn(
            stream=STREAM,
            version=1,
            at=AT,
            entry_id="p3",
            from_stream=project,
            target=Target.MEMORY,
            text="Deploys use bin/p3",
            project=None,
            category=None,
            created=DAY,
            last_referenced=DAY,
            memory_id="p",
            version_no=3,
        )
        first = attrs.evolve(
            added(1, "p", "Deploys use bin/p", stream=project), target=Target.PROJECT, project="web"
        )
        moved_out = MemoryMovedOut(
            stream=project, version=4, at=AT, entry_id="p3", to_stream=STREAM
        )
        with storage.transaction() as uow:
            uow.journal.append(project, 0, [first, *replaced, moved_out])
            uow.journal.append(STREAM, 0, [moved_in])
        with storage.transaction() as uow:
            source = _folded(Target.PROJECT, list(uow.journal.read(project)))
            destination = _folded(Target.MEMORY, list(uow.journal.read(STREAM)))
        (head,) = destination.active
        assert (head.id, head.stable_id, head.version_no) == ("p3", "p", 3)
        assert {e.id: e.version_no for e in source.history} == {"p": 1, "p2": 2}
        rows = [*source.all_entries(), *destination.all_entries()]
        for ref in ("p", "p3", "p@3"):
            found = resolve(rows, ref)
            assert found is not None and found.row == head, ref

    def test_store_id_is_stable(self, storage: Any) -> None:
        with storage.transaction() as uow:
            first = uow.ledger.store_id()
        with storage.transaction() as uow:
            assert uow.ledger.store_id() == first
        assert first and first.isalnum()

    def test_projection_accepts_every_event_kind(self, storage: Any) -> None:
        events: list[Event] = [
            added(1, "a", "one"),
            added(2, "b", "two"),
            MemoryReplaced(
                stream=STREAM,
                version=3,
                at=AT,
                old_id="a",
                new_id="c",
                text="one, revised",
                project=None,
                category=None,
                created=DAY,
                last_referenced=DAY,
            ),
            MemorySuperseded(stream=STREAM, version=4, at=AT, old_id="b", by_id="c", on=DAY),
            MemoryReferenced(stream=STREAM, version=5, at=AT, entry_id="c", on=DAY),
            MemoryRemoved(stream=STREAM, version=6, at=AT, entry_id="c", reason=RemovalReason.TOOL),
        ]
        with storage.transaction() as uow:
            uow.journal.append(STREAM, 0, events)
            uow.projection.apply(events)
        with storage.transaction() as uow:
            assert list(uow.journal.read(STREAM)) == events

    def test_every_event_type_projects_to_the_folded_state(self, storage: Any) -> None:
        """The rows `domain/memory/rows.py` makes of each event type equal what a repair against
        the fold would write: applying a journal of every type leaves a rebuild nothing to do
        (the same event → row semantics on every adapter)."""
        journal = every_event_type()
        kinds = {type(e) for events in journal.values() for e in events}
        assert kinds == set(EVENT_TYPES), "add the new event type to journals.every_event_type"
        self._apply(storage, journal)
        documents = [_folded(t, events) for t, events in journal.items()]
        report = self._rebuild(storage, documents)
        assert _quiet(report), report
        assert report.of(Target.PROJECT).skipped == 1  # the row that lost its project

    def test_projection_refuses_an_event_it_does_not_know(self, storage: Any) -> None:
        @attrs.frozen(kw_only=True)
        class MemoryTeleported(Event):
            TAG: ClassVar[str] = "memory.teleported.v1"
            entry_id: str

        with pytest.raises(InvariantViolation), storage.transaction() as uow:
            uow.projection.apply([MemoryTeleported(stream=STREAM, version=1, at=AT, entry_id="a")])

    # -- purge (ADR 0026) ---------------------------------------------------------------------

    def test_redact_overwrites_events_in_place(self, storage: Any) -> None:
        """`Journal.redact` replaces stored events (same stream, version, type) inside the
        transaction, in `erasing()` as in `transaction()`; the others stay as they were."""
        events = [added(1, "a", "secret one"), added(2, "b", "kept")]
        with storage.transaction() as uow:
            uow.journal.append(STREAM, 0, events)
        blank = attrs.evolve(events[0], text="")
        with storage.erasing() as uow:
            uow.journal.redact([blank])
        with storage.transaction() as uow:
            assert list(uow.journal.read(STREAM)) == [blank, events[1]]
            assert uow.journal.version(STREAM) == 2
        storage.scrub()  # after the commit; must not fail on any adapter

    def test_redact_refuses_an_event_it_does_not_hold(self, storage: Any) -> None:
        events = [added(1, "a", "secret one")]
        with storage.transaction() as uow:
            uow.journal.append(STREAM, 0, events)
        wrong_kind = MemoryRemoved(
            stream=STREAM, version=1, at=AT, entry_id="a", reason=RemovalReason.TOOL
        )
        for bad in (attrs.evolve(events[0], version=2, text=""), wrong_kind):
            with pytest.raises(VersionConflict), storage.erasing() as uow:
                uow.journal.redact([attrs.evolve(events[0], text=""), bad])
        with storage.transaction() as uow:
            assert list(uow.journal.read(STREAM)) == events

    def test_purged_event_drops_rows_and_history(self, storage: Any) -> None:
        """A `MemoryPurged` leaves no row (active or superseded) of its ids: a repair against
        the fold then finds nothing to change or to keep."""
        events: list[Event] = [
            added(1, "a", "one"),
            added(2, "b", "two"),
            _replaced(3, "a", "c", "one, revised"),
            MemoryPurged(stream=STREAM, version=4, at=AT, entry_ids=("a", "c")),
        ]
        with storage.erasing() as uow:
            uow.journal.append(STREAM, 0, events)
            uow.projection.apply(events)
        assert _quiet(self._rebuild(storage, [_folded(Target.MEMORY, events)]))

    # -- Projection.rebuild (ADR 0013) --------------------------------------------------------

    def _apply(self, storage: Any, journal: dict[Target, list[Event]]) -> None:
        with storage.transaction() as uow:
            for target, events in journal.items():
                uow.journal.append(stream_for(target), 0, events)
                uow.projection.apply(events)

    def _rebuild(self, storage: Any, documents: Sequence[MemoryDocument]) -> RebuildReport:
        with storage.transaction() as uow:
            report: RebuildReport = uow.projection.rebuild(list(documents))
        return report

    def test_rebuild_of_the_applied_state_changes_nothing(self, storage: Any) -> None:
        journal = _rebuild_events()
        self._apply(storage, journal)
        documents = [_folded(t, events) for t, events in journal.items()]
        report = self._rebuild(storage, documents)
        assert _quiet(report), report
        assert {r.target for r in report.targets} == set(journal)
        # the unattributed project row is not mirrored: reported as skipped, every time
        assert report.of(Target.PROJECT).skipped == 1
        assert sum(r.skipped for r in report.targets) == 1
        assert _quiet(self._rebuild(storage, documents))

    def test_rebuild_removes_an_active_row_the_state_lacks(self, storage: Any) -> None:
        events: list[Event] = [added(1, "a", "kept fact"), added(2, "b", "stray fact")]
        self._apply(storage, {Target.MEMORY: events})
        lacking = _folded(Target.MEMORY, events[:1])
        report = self._rebuild(storage, [lacking])
        memory = report.of(Target.MEMORY)
        assert (memory.added, memory.updated, memory.removed) == (0, 0, 1), report
        assert _quiet(self._rebuild(storage, [lacking]))  # the row is gone for good
        full = _folded(Target.MEMORY, events)
        assert self._rebuild(storage, [full]).of(Target.MEMORY).added == 1  # and can come back
        assert _quiet(self._rebuild(storage, [full]))

    def test_rebuild_adds_a_row_the_state_has(self, storage: Any) -> None:
        events: list[Event] = [added(1, "a", "first fact"), added(2, "b", "missing fact")]
        self._apply(storage, {Target.MEMORY: events[:1]})
        full = _folded(Target.MEMORY, events)
        report = self._rebuild(storage, [full])
        memory = report.of(Target.MEMORY)
        assert (memory.added, memory.updated, memory.removed) == (1, 0, 0), report
        assert _quiet(self._rebuild(storage, [full]))
        shorter = self._rebuild(storage, [_folded(Target.MEMORY, events[:1])])
        assert shorter.of(Target.MEMORY).removed == 1  # the added row is a real row

    def test_rebuild_updates_a_row_that_differs(self, storage: Any) -> None:
        events: list[Event] = [added(1, "a", "The API listens on port 8080")]
        self._apply(storage, {Target.MEMORY: events})
        doc = _folded(Target.MEMORY, events)
        changed = attrs.evolve(
            doc, active=(attrs.evolve(doc.active[0], text="The API listens on port 9090"),)
        )
        report = self._rebuild(storage, [changed])
        memory = report.of(Target.MEMORY)
        assert (memory.added, memory.updated, memory.removed) == (0, 1, 0), report
        assert _quiet(self._rebuild(storage, [changed]))
        assert self._rebuild(storage, [doc]).of(Target.MEMORY).updated == 1

    def test_rebuild_never_deletes_history(self, storage: Any) -> None:
        events: list[Event] = [
            added(1, "a", "The CI runs on GitHub Actions"),
            _replaced(2, "a", "b", "The CI runs on Buildkite"),
        ]
        self._apply(storage, {Target.MEMORY: events})
        full = _folded(Target.MEMORY, events)
        assert [e.id for e in full.history] == ["a"]
        forgetful = attrs.evolve(full, history=())  # a state that does not know the old row
        for _ in range(2):
            report = self._rebuild(storage, [forgetful])
            memory = report.of(Target.MEMORY)
            assert (memory.added, memory.updated, memory.removed) == (0, 0, 0), report
            assert memory.kept_history == 1
        assert _quiet(self._rebuild(storage, [full]))  # the history row is still there, as it was
        empty = MemoryDocument.empty(Target.MEMORY)
        report = self._rebuild(storage, [empty])  # even a state without any row keeps history
        assert (report.of(Target.MEMORY).removed, report.of(Target.MEMORY).kept_history) == (1, 1)
        assert self._rebuild(storage, [full]).of(Target.MEMORY).added == 1  # only "b" came back

    def test_rebuild_touches_only_the_given_targets(self, storage: Any) -> None:
        journal = _rebuild_events()
        self._apply(storage, journal)
        report = self._rebuild(storage, [MemoryDocument.empty(Target.USER)])
        assert report.of(Target.USER).removed == 1
        assert all(r.changed == 0 for r in report.targets if r.target is not Target.USER)
        documents = [_folded(t, events) for t, events in journal.items() if t is not Target.USER]
        assert _quiet(self._rebuild(storage, documents))  # the other targets' rows are intact

    def test_failed_rebuild_leaves_no_trace(self, storage: Any) -> None:
        class Boom(Exception):
            pass

        events: list[Event] = [added(1, "a", "a fact that stays")]
        self._apply(storage, {Target.MEMORY: events})
        with pytest.raises(Boom), storage.transaction() as uow:
            uow.projection.rebuild([MemoryDocument.empty(Target.MEMORY)])
            raise Boom
        assert _quiet(self._rebuild(storage, [_folded(Target.MEMORY, events)]))

    def test_failed_transaction_leaves_committed_rows_as_they_were(self, storage: Any) -> None:
        """A transaction that changes a committed row in place (a replace supersedes it) and
        then fails leaves the row, the journal and the next version exactly as committed."""

        class Boom(Exception):
            pass

        events: list[Event] = [added(1, "a", "a fact that stays")]
        self._apply(storage, {Target.MEMORY: events})
        replace = _replaced(2, "a", "b", "a fact that never was")
        with pytest.raises(Boom), storage.transaction() as uow:
            uow.journal.append(STREAM, 1, [replace])
            uow.projection.apply([replace])
            raise Boom
        with storage.transaction() as uow:
            assert uow.journal.version(STREAM) == 1
        assert _quiet(self._rebuild(storage, [_folded(Target.MEMORY, events)]))


class MarkdownStoreContract:
    """Provide a ``markdown`` fixture returning a fresh, empty MarkdownStore."""

    def test_missing_document_reads_none(self, markdown: Any) -> None:
        assert markdown.read(Target.MEMORY) is None

    def test_write_then_read_bytes_exactly(self, markdown: Any) -> None:
        data = "项目 fact <!-- created=2026-07-29, last=2026-07-29 -->\n".encode()
        markdown.write(Target.PROJECT, data)
        assert markdown.read(Target.PROJECT) == data
        assert markdown.read(Target.MEMORY) is None

    def test_overwrite_replaces_whole_content(self, markdown: Any) -> None:
        markdown.write(Target.USER, b"x" * 10_000)
        markdown.write(Target.USER, b"short\n")
        assert markdown.read(Target.USER) == b"short\n"

    def test_lock_is_a_context_manager(self, markdown: Any) -> None:
        with markdown.lock(5.0):
            markdown.write(Target.FAILURE, b"inside the lock\n")
        assert markdown.read(Target.FAILURE) == b"inside the lock\n"

    def test_describe_names_each_target(self, markdown: Any) -> None:
        names = {markdown.describe(t) for t in Target}
        assert len(names) == len(Target)

    def test_stamp_tracks_changes(self, markdown: Any) -> None:
        assert markdown.stamp(Target.MEMORY) is None
        markdown.write(Target.MEMORY, b"one\n")
        first = markdown.stamp(Target.MEMORY)
        assert first is not None and markdown.stamp(Target.MEMORY) == first
        markdown.write(Target.MEMORY, b"two, longer\n")
        assert markdown.stamp(Target.MEMORY) != first

    def test_roots_are_distinct_by_default(self, markdown: Any) -> None:
        assert markdown.distinct_roots() is True


# --- search -----------------------------------------------------------------------------------

HOSTILE_QUERIES = (
    '"',
    '""',
    '"unbalanced',
    "*",
    "deploy*",
    "NEAR(",
    "NEAR(deploy staging, 2)",
    "AND OR NOT",
    "deploy AND",
    "-deploy",
    "^deploy",
    "text: deploy",
    "{text grams}: deploy",
    "(",
    "deploy)",
    "'; DROP TABLE memories; --",
    "\x00 \\ %_ ?1 :name @p $x",
    "猫",
    "😀🚀",
    "\ud800 lone surrogate",
    "deploy " * 2_000,
    "x" * 10_000,
    "项目" * 3_000,
)


class EventWriter:
    """Writes rows to a Storage through its journal and projection, like the service does."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage
        self.n = 0

    def add(
        self,
        text: str,
        target: Target = Target.MEMORY,
        project: str | None = None,
        category: FailureCategory | None = None,
        entry_id: str | None = None,
    ) -> str:
        self.n += 1
        entry_id = entry_id or f"s{self.n:04d}"
        if target is Target.FAILURE:
            category = category or FailureCategory.FAILURE
        stream = f"memory:{target.value}"
        with self.storage.transaction() as uow:
            version = uow.journal.version(stream)
            event = MemoryAdded(
                stream=stream,
                version=version + 1,
                at=AT,
                entry_id=entry_id,
                target=target,
                text=text,
                project=project,
                category=category,
                created=DAY,
                last_referenced=DAY,
            )
            uow.journal.append(stream, version, [event])
            uow.projection.apply([event])
        return entry_id

    def replace(self, old_id: str, text: str, target: Target = Target.MEMORY, **kw: Any) -> str:
        self.n += 1
        new_id = f"s{self.n:04d}"
        stream = f"memory:{target.value}"
        with self.storage.transaction() as uow:
            version = uow.journal.version(stream)
            event = MemoryReplaced(
                stream=stream,
                version=version + 1,
                at=datetime(2026, 8, 2, 9, 0, tzinfo=UTC),
                old_id=old_id,
                new_id=new_id,
                text=text,
                project=kw.get("project"),
                category=kw.get("category"),
                created=DAY,
                last_referenced=date(2026, 8, 2),
            )
            uow.journal.append(stream, version, [event])
            uow.projection.apply([event])
        return new_id


EVERYTHING = (
    ScopeClause(Target.MEMORY),
    ScopeClause(Target.USER),
    ScopeClause(Target.PROJECT),
    ScopeClause(Target.FAILURE),
)


def _query(text: str, clauses: tuple[ScopeClause, ...] = EVERYTHING, **kw: Any) -> SearchQuery:
    return SearchQuery(text=text, clauses=clauses, **kw)


def _ids(hits: list[SearchHit]) -> list[str]:
    return [h.id for h in hits]


class SearchIndexContract:
    """Semantics of a `SearchIndex` adapter (see the `SearchIndex` port).

    Provide a ``storage`` fixture (a fresh, empty Storage) and a ``search_index`` fixture: the
    index over that storage's read model.
    """

    def test_finds_english_words_best_match_first(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        deploy = rows.add("Deploys to staging need the VPN and a fresh token")
        rows.add("The staging database is reset every Sunday")
        rows.add("Prefers tabs over spaces")
        hits = search_index.search(_query("staging VPN"))
        assert _ids(hits)[0] == deploy and len(hits) == 2
        assert all(h.score > 0 for h in hits)
        assert search_index.search(_query("kubernetes")) == []

    def test_case_and_diacritics_do_not_matter(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        cafe = rows.add("The Café in München serves ÉCLAIRS")
        for q in ("cafe", "CAFÉ", "munchen", "éclairs", "Eclairs"):
            assert _ids(search_index.search(_query(q))) == [cafe], q

    def test_chinese_japanese_and_mixed_text(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        build = rows.add("项目构建命令是 make build，发布前要先跑类型检查")
        tower = rows.add("東京タワーに行くなら夜がいい")
        mixed = rows.add("用pytest运行测试，覆盖率要求80%")
        rows.add("The release checklist lives in the wiki")
        assert _ids(search_index.search(_query("构建命令")))[0] == build
        assert _ids(search_index.search(_query("类型检查")))[0] == build
        assert _ids(search_index.search(_query("タワー")))[0] == tower
        assert _ids(search_index.search(_query("pytest")))[0] == mixed
        assert _ids(search_index.search(_query("运行测试 pytest")))[0] == mixed
        assert _ids(search_index.search(_query("make build 构建")))[0] == build
        assert tower in _ids(search_index.search(_query("京")))  # lone char: starts a bigram

    def test_rows_matching_every_term_come_first(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        partial = [rows.add(f"redis cache note {i}") for i in range(5)]
        both = rows.add("redis eviction policy is allkeys-lru for the session cache backend")
        hits = search_index.search(_query("redis eviction"))
        assert _ids(hits)[0] == both
        assert set(_ids(hits)) == {both, *partial}
        scores = [h.score for h in hits[1:]]
        assert scores == sorted(scores, reverse=True)

    def test_rows_matching_only_common_terms_come_last(
        self, storage: Any, search_index: Any
    ) -> None:
        rows = EventWriter(storage)
        common = [rows.add(f"the cache warms up slowly, step {i}") for i in range(4)]
        kafka = {rows.add("kafka broker notes"), rows.add("the kafka cluster has three nodes")}
        hits = search_index.search(_query("the kafka zookeeper"))
        assert set(_ids(hits)[:2]) == kafka  # "the" is in most rows: no weight
        # such rows may follow (the built-in indexes never return them: KeywordRelevanceContract)
        assert set(_ids(hits)[2:]) <= set(common)

    def test_limit(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        for i in range(25):
            rows.add(f"shared keyword number {i}")
        assert len(search_index.search(_query("keyword"))) == 10
        assert len(search_index.search(_query("keyword", limit=20))) == 20
        assert len(search_index.search(_query("keyword", limit=3))) == 3

    def test_scope_applies_before_the_limit(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        for i in range(30):  # better matches (shorter, repeated term) in another project
            rows.add(f"queue queue {i}", Target.PROJECT, project="other")
        mine = rows.add(
            "the queue consumer of this project retries three times", Target.PROJECT, "mine"
        )
        clause = (ScopeClause(Target.PROJECT, ("mine",)),)
        assert _ids(search_index.search(_query("queue", clause, limit=1))) == [mine]

    def test_project_clauses_isolate_projects(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        a = rows.add("Port 8080 serves the API", Target.PROJECT, project="a")
        b = rows.add("Port 9090 serves the API", Target.PROJECT, project="b")
        g = rows.add("Port numbers live in the env file", Target.MEMORY)
        only_a = (ScopeClause(Target.PROJECT, ("a",)), ScopeClause(Target.MEMORY))
        assert set(_ids(search_index.search(_query("port", only_a)))) == {a, g}
        assert set(_ids(search_index.search(_query("port")))) == {a, b, g}
        only_b = (ScopeClause(Target.PROJECT, ("b",)),)
        assert _ids(search_index.search(_query("port", only_b))) == [b]
        assert search_index.search(_query("port", ())) == []

    def test_failure_clause_with_unattributed_rows(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        mine = rows.add("pip failed on old setuptools", Target.FAILURE, project="a")
        other = rows.add("pip failed behind the proxy", Target.FAILURE, project="b")
        glob = rows.add("pip failed without network", Target.FAILURE)
        clause = (ScopeClause(Target.FAILURE, ("a", None)),)
        assert set(_ids(search_index.search(_query("pip failed", clause)))) == {mine, glob}
        assert set(_ids(search_index.search(_query("pip failed")))) == {mine, other, glob}

    def test_category_filter(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        quirk = rows.add(
            "npm ci ignores the lockfile", Target.FAILURE, None, FailureCategory.TOOL_QUIRK
        )
        rows.add("npm publish needs 2FA", Target.FAILURE, None, FailureCategory.CONVENTION)
        rows.add("npm is the package manager", Target.MEMORY)
        hits = search_index.search(_query("npm", category=FailureCategory.TOOL_QUIRK))
        assert _ids(hits) == [quirk]
        assert hits[0].category is FailureCategory.TOOL_QUIRK and hits[0].target is Target.FAILURE

    def test_history_only_when_asked_and_marked(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        old = rows.add("The API listens on port 8080", Target.PROJECT, project="a")
        new = rows.replace(old, "The API listens on port 9090", Target.PROJECT, project="a")
        other = rows.add("The API of b listens on port 7070", Target.PROJECT, project="b")
        rows.replace(other, "The API of b listens on port 6060", Target.PROJECT, project="b")
        clause = (ScopeClause(Target.PROJECT, ("a",)),)
        assert _ids(search_index.search(_query("API port", clause))) == [new]
        hits = search_index.search(_query("API port", clause, include_superseded=True))
        assert set(_ids(hits)) == {old, new}  # history never crosses the scope
        history = next(h for h in hits if h.id == old)
        assert history.superseded_by == new and history.superseded_at == date(2026, 8, 2)
        assert next(h for h in hits if h.id == new).superseded_by is None
        assert _ids(search_index.search(_query("8080", clause))) == []

    def test_hit_fields(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        rows.add(
            "Flaky test: retry the e2e suite once", Target.FAILURE, "a", FailureCategory.INSIGHT
        )
        (hit,) = search_index.search(_query("flaky"))
        assert hit.target is Target.FAILURE and hit.project == "a"
        assert hit.category is FailureCategory.INSIGHT
        assert hit.text == "Flaky test: retry the e2e suite once"
        assert hit.created == DAY and hit.last_referenced == DAY
        assert hit.superseded_by is None and hit.superseded_at is None

    def test_removed_rows_are_gone(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        gone = rows.add("temporary note about graphql")
        with storage.transaction() as uow:
            version = uow.journal.version(STREAM)
            event = MemoryRemoved(
                stream=STREAM, version=version + 1, at=AT, entry_id=gone, reason=RemovalReason.TOOL
            )
            uow.journal.append(STREAM, version, [event])
            uow.projection.apply([event])
        assert search_index.search(_query("graphql")) == []

    def test_rows_by_id_apply_the_scope_and_keep_the_order(
        self, storage: Any, search_index: Any
    ) -> None:
        rows = EventWriter(storage)
        a = rows.add("alpha note of project a", Target.PROJECT, project="a")
        b = rows.add("beta note of project b", Target.PROJECT, project="b")
        g = rows.add("a global gamma note", Target.MEMORY)
        old = rows.add("the old delta note", Target.MEMORY)
        new = rows.replace(old, "the new delta note", Target.MEMORY)
        only_a = (ScopeClause(Target.PROJECT, ("a",)), ScopeClause(Target.MEMORY))
        found = search_index.rows([new, "no-such-id", g, b, a, old, g], _query("", only_a))
        assert _ids(found) == [new, g, a]  # b out of scope, old is history, g once
        assert all(h.score == 0.0 for h in found)
        assert found[2].project == "a" and found[2].text == "alpha note of project a"
        history = search_index.rows([old], _query("", only_a, include_superseded=True))
        assert _ids(history) == [old] and history[0].superseded_by == new
        assert search_index.rows([], _query("x")) == []
        assert search_index.rows([a], _query("x", ())) == []
        many = [rows.add(f"bulk row {i}") for i in range(1200)]  # more ids than one SQL chunk
        assert _ids(search_index.rows(reversed(many), _query(""))) == list(reversed(many))

    def test_hostile_queries_never_raise(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        rows.add("deploy with make deploy; 项目构建 uses NEAR and AND as words")
        for text in HOSTILE_QUERIES:
            hits = search_index.search(_query(text))
            assert isinstance(hits, list) and len(hits) <= 10, text[:40]
        assert search_index.search(_query("")) == []
        assert search_index.search(_query("!!! ??? ---")) == []


class KeywordRelevanceContract(SearchIndexContract):
    """What the built-in indexes add to `SearchIndexContract` (issue 27, ADR 0068): stop words
    never match on their own, English words match their inflections, and `SearchHit.score` is
    the keyword relevance in [0, 1] that `SearchQuery.min_score` floors."""

    def test_rows_matching_only_stop_words_never_match(
        self, storage: Any, search_index: Any
    ) -> None:
        rows = EventWriter(storage)
        for i in range(4):
            rows.add(f"the cache warms up slowly, step {i}")
        kafka = {rows.add("kafka broker notes"), rows.add("the kafka cluster has three nodes")}
        hits = search_index.search(_query("the kafka zookeeper", min_score=0.0))
        assert set(_ids(hits)) == kafka  # "the" never matches on its own (issue 27)
        for only_stop_words in ("the", "what is it", "的 了 是", "der und das", "и в не"):
            assert search_index.search(_query(only_stop_words, min_score=0.0)) == []

    def test_scores_are_keyword_relevance_between_0_and_1(
        self, storage: Any, search_index: Any
    ) -> None:
        rows = EventWriter(storage)
        for i in range(6):
            rows.add(f"note {i} about the weekly planning meeting")
        both = rows.add("the deploy script needs the corporate VPN")
        one = rows.add("the corporate wiki lists the holidays")
        hits = search_index.search(_query("corporate VPN deploy", min_score=0.0))
        assert _ids(hits)[:2] == [both, one]
        assert hits[0].score > 0.9 and 0 < hits[1].score < 0.5  # the share of the query
        assert _ids(search_index.search(_query("corporate VPN deploy", min_score=0.5))) == [both]
        assert search_index.search(_query("does the user like pizza")) == []

    def test_english_words_match_their_inflections(self, storage: Any, search_index: Any) -> None:
        rows = EventWriter(storage)
        deploy = rows.add("Run the deploy script from the release branch")
        deployed = rows.add("We deployed the billing service twice today")
        deployment = rows.add("The deployment pipeline is slow")
        tabs = rows.add("Tabs are preferred over spaces")
        for query in ("deploy", "deploys", "deployed", "deployment", "deploying"):
            found = set(_ids(search_index.search(_query(query))))
            assert found == {deploy, deployed, deployment}, query
        assert _ids(search_index.search(_query("which tab is preferred"))) == [tabs]
