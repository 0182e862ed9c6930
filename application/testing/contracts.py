"""The adapter contract suites (see `pi_hermes_memory.testing`)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.domain.events import (
    Event,
    MemoryAdded,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemorySuperseded,
    RemovalReason,
)
from pi_hermes_memory.domain.model import Target

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
            uow.ledger.record(STREAM, 1, "f" * 64)
            raise Boom
        with storage.transaction() as uow:
            assert uow.journal.version(STREAM) == 0
            assert uow.ledger.rendered(STREAM) is None

    def test_ledger_records_last_render(self, storage: Any) -> None:
        with storage.transaction() as uow:
            assert uow.ledger.rendered(STREAM) is None
            uow.ledger.record(STREAM, 3, "a" * 64)
            uow.ledger.record(STREAM, 4, "b" * 64)
        with storage.transaction() as uow:
            assert uow.ledger.rendered(STREAM) == (4, "b" * 64)

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
