"""The read port `MemoryRows` on PostgreSQL (ADR 0057): the shipped contract, a vector store
written against the port alone passing the vector contract over it, and the change log
across hosts: a write committed by another host is seen, also when it commits after a
younger transaction's write was already read, a removed row is named, and a trimmed log (or
a cursor older than the log) answers None."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pi_hermes_memory.adapters.postgres import schema
from pi_hermes_memory.adapters.postgres.rows import PgRows
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.events import MemoryAdded, MemoryRemoved, RemovalReason
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.testing import (
    MemoryRowsContract,
    VectorBackgroundContract,
    VectorStoreContract,
)
from pi_hermes_memory.testing.contracts import AT, DAY, EventWriter

from tests.support.postgres import create_database, with_dbname
from tests.support.rows_vector_store import RowsVectorStore


@pytest.fixture
def storage(pg_dsn: str) -> Iterator[PgStorage]:
    s = PgStorage(pg_dsn)
    yield s
    s.close()


@pytest.fixture
def other_host(pg_dsn: str) -> Iterator[PgStorage]:
    """A second host's storage on the same database."""
    s = PgStorage(pg_dsn)
    yield s
    s.close()


class TestPgRows(MemoryRowsContract):
    @pytest.fixture
    def rows(self, storage: PgStorage) -> PgRows:
        return PgRows(storage)


class TestRowsVectorStoreOnPostgres(VectorStoreContract, VectorBackgroundContract):
    @pytest.fixture
    def vector_store(self, storage: PgStorage) -> RowsVectorStore:
        return RowsVectorStore(PgRows(storage))


def _added(entry_id: str, version: int) -> MemoryAdded:
    return MemoryAdded(
        stream=stream_for(Target.MEMORY),
        version=version,
        at=AT,
        entry_id=entry_id,
        target=Target.MEMORY,
        text=f"note {entry_id}",
        project=None,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )


def test_changes_written_by_another_host_are_seen(
    storage: PgStorage, other_host: PgStorage
) -> None:
    rows = PgRows(storage)
    cursor = rows.cursor()
    written = EventWriter(other_host).add("written on the other host", entry_id="b0001")
    changes = rows.changed_since(cursor)
    assert changes.ids == {written} and changes.cursor > cursor
    assert rows.by_id([written])[written].text == "written on the other host"
    assert rows.changed_since(changes.cursor).ids == frozenset()
    EventWriter(storage).add("and one on this host", entry_id="a0001")
    assert PgRows(other_host).changed_since(changes.cursor).ids == {"a0001"}


def test_a_write_committed_after_a_younger_one_was_read_is_not_skipped(
    storage: PgStorage, other_host: PgStorage, pg_dsn: str
) -> None:
    """A sequence stamp would skip it: the slow host drew its number first, the fast host's
    larger one was read, then the slow host committed below it."""
    reader_storage = PgStorage(pg_dsn)
    try:
        rows = PgRows(reader_storage)
        cursor = rows.cursor()
        # the slow host: a memory stream write, left open (its transaction id is drawn)
        with storage.transaction() as slow:
            stream = stream_for(Target.MEMORY)
            event = _added("slow", slow.journal.version(stream) + 1)
            slow.journal.append(stream, event.version - 1, [event])
            slow.projection.apply([event])
            # the fast host: another stream, never waits for the slow one, commits first
            fast = EventWriter(other_host).add("fast", Target.USER, entry_id="fast")
            seen = rows.changed_since(cursor)
            assert seen.ids == {fast}
        after = rows.changed_since(seen.cursor)
        assert after.ids is not None and "slow" in after.ids
        settled = rows.changed_since(after.cursor)
        assert settled.ids == frozenset() and settled.cursor >= after.cursor
    finally:
        reader_storage.close()


def test_a_removed_row_is_named(storage: PgStorage) -> None:
    rows = PgRows(storage)
    writer = EventWriter(storage)
    kept, gone = writer.add("kept"), writer.add("gone")
    cursor = rows.cursor()
    with storage.transaction() as uow:
        stream = stream_for(Target.MEMORY)
        version = uow.journal.version(stream)
        removed = MemoryRemoved(
            stream=stream, version=version + 1, at=AT, entry_id=gone, reason=RemovalReason.TOOL
        )
        uow.journal.append(stream, version, [removed])
        uow.projection.apply([removed])
    assert rows.changed_since(cursor).ids == {gone}
    assert list(rows.by_id([kept, gone])) == [kept]


def test_a_trimmed_log_answers_none_then_names_again(storage: PgStorage) -> None:
    rows = PgRows(storage)
    writer = EventWriter(storage)
    cursor = rows.cursor()
    for n in range(3):
        writer.add(f"note {n}")
    with storage.writing() as conn:
        conn.execute("SELECT memories_changes_trim(1)")  # keeps the newest entry only
    trimmed = rows.changed_since(cursor)
    assert trimmed.ids is None and trimmed.cursor > cursor
    assert rows.changed_since(trimmed.cursor).ids == frozenset()
    newest = writer.add("after the trim")
    assert rows.changed_since(trimmed.cursor).ids == {newest}


def test_the_trim_keeps_the_newest_entries(storage: PgStorage) -> None:
    writer = EventWriter(storage)
    for n in range(5):
        writer.add(f"note {n}")
    with storage.writing() as conn:
        conn.execute("SELECT memories_changes_trim(2)")
        left = conn.execute("SELECT count(*) FROM memories_changes").fetchone()
    assert left is not None and left[0] == 2


def test_a_database_migrated_from_schema_2_answers_none_below_the_log(
    pg_admin_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin, _template = pg_admin_dsn.split("\x00")
    name = f"phm_rows_schema_2_{os.getpid()}"
    create_database(admin, name)
    dsn = with_dbname(admin, name)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 2)
    old = PgStorage(dsn)
    try:
        before = EventWriter(old).add("written before the log existed")
    finally:
        old.close()
    monkeypatch.undo()
    storage = PgStorage(dsn)
    try:
        with storage.read() as conn:
            version = conn.execute(
                "SELECT value FROM store_meta WHERE key = 'schema_version'"
            ).fetchone()
        assert version is not None and int(version[0]) == schema.SCHEMA_VERSION >= 3
        rows = PgRows(storage)
        assert rows.changed_since(0).ids is None  # the log does not reach back to the start
        assert rows.by_id([before])[before].text == "written before the log existed"
        cursor = rows.cursor()
        after = EventWriter(storage).add("written after", entry_id="later")
        assert rows.changed_since(cursor).ids == {after}
    finally:
        storage.close()
