"""PostgreSQL storage: the shared journal and its read models (issue 16, ADR 0050).

Many hosts write one database. A `transaction()` is one READ COMMITTED transaction on a pooled
connection; before it reads or writes a stream it takes that stream's transaction-scoped
advisory lock (`pg_advisory_xact_lock(hashtextextended(stream, 0))`), so writers of one stream
serialise across hosts while writers of different streams never wait for each other, and the
expected-version check of `append` (with UNIQUE(stream, version) as the backstop) always sees
the latest committed version. `snapshot()` is a REPEATABLE READ READ ONLY transaction: one
consistent state that never waits for a writer.

Within one process the storage is used like the SQLite one: one re-entrant lock, one
transaction at a time, a nested `transaction()` is a savepoint of the outer one.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any, assert_never

import attrs
import psycopg
from pi_hermes_memory.adapters.postgres.connection import (
    OPEN_RETRY_S,
    describe,
    mapped,
    open_pool,
    with_retry,
)
from pi_hermes_memory.adapters.postgres.keys import row_keys
from pi_hermes_memory.adapters.postgres.mirror import rebuild_rows
from pi_hermes_memory.adapters.postgres.schema import migrate
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.rows import (
    DeleteRows,
    InsertRow,
    ReferenceRow,
    Row,
    RowChange,
    SupersedeRow,
    UpsertRow,
    projected,
)
from pi_hermes_memory.errors import StorageFailed, StoreClosed
from pi_hermes_memory.journal.codec import decode, encode
from pi_hermes_memory.ports.memory import RebuildReport, ScrubReport


class _Streams:
    """The stream locks one transaction holds (none in a read-only snapshot)."""

    def __init__(self, conn: psycopg.Connection[Any], writing: bool) -> None:
        self.conn, self._writing = conn, writing
        self._held: set[str] = set()

    def touch(self, stream: str) -> None:
        if self._writing and stream not in self._held:
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (stream,))
            self._held.add(stream)


class PgJournal:
    def __init__(self, streams: _Streams) -> None:
        self._s = streams
        self._conn = streams.conn

    def version(self, stream: str) -> int:
        self._s.touch(stream)
        row = self._conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = %s", (stream,)
        ).fetchone()
        return int(row[0]) if row else 0

    def append(self, stream: str, expected_version: int, events: Sequence[Event]) -> None:
        current = self.version(stream)
        if current != expected_version:
            raise VersionConflict(stream, expected_version, current)
        rows = []
        for i, event in enumerate(events, start=1):
            if event.stream != stream or event.version != expected_version + i:
                raise VersionConflict(stream, expected_version + i, event.version)
            tag, data = encode(event)
            rows.append((stream, event.version, tag, event.at.isoformat(), data))
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO events (stream, version, tag, at, data) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    rows,
                )
        except psycopg.errors.UniqueViolation as exc:  # the backstop
            raise VersionConflict(stream, expected_version, self.version(stream)) from exc

    def streams(self, prefix: str) -> list[str]:
        return [
            str(row[0])
            for row in self._conn.execute(
                # byte order, as SQLite's and Python's, whatever the database's collation
                'SELECT DISTINCT stream COLLATE "C" FROM events WHERE stream COLLATE "C" >= %s '
                'AND stream COLLATE "C" < %s ORDER BY 1',
                (prefix, prefix + "\U0010ffff"),
            )
        ]

    def read(self, stream: str, after: int = 0, upto: int | None = None) -> list[Event]:
        self._s.touch(stream)
        upper = upto if upto is not None else 2**31 - 1
        return [
            decode(tag, data)
            for tag, data in self._conn.execute(
                "SELECT tag, data FROM events WHERE stream = %s AND version > %s "
                "AND version <= %s ORDER BY version",
                (stream, after, upper),
            )
        ]

    def snapshot(self, stream: str) -> tuple[int, str] | None:
        self._s.touch(stream)
        row = self._conn.execute(
            "SELECT version, data FROM snapshots WHERE stream = %s", (stream,)
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def snapshot_version(self, stream: str) -> int | None:
        self._s.touch(stream)
        row = self._conn.execute(
            "SELECT version FROM snapshots WHERE stream = %s", (stream,)
        ).fetchone()
        return None if row is None else int(row[0])

    def save_snapshot(self, stream: str, version: int, data: str) -> None:
        self._s.touch(stream)
        self._conn.execute(
            "INSERT INTO snapshots (stream, version, data) VALUES (%s, %s, %s) "
            "ON CONFLICT (stream) DO UPDATE SET version = excluded.version, data = excluded.data",
            (stream, version, data),
        )

    def redact(self, events: Sequence[Event]) -> None:
        """In place (ADR 0026), inside the unit of work's transaction."""
        for event in events:
            self._s.touch(event.stream)
            tag, data = encode(event)
            cur = self._conn.execute(
                "UPDATE events SET data = %s WHERE stream = %s AND version = %s AND tag = %s",
                (data, event.stream, event.version, tag),
            )
            if cur.rowcount != 1:
                raise VersionConflict(event.stream, event.version, self.version(event.stream))


class PgProjection:
    """The `memories` table; executes `pi_hermes_memory.domain.memory.rows` (the one place of the
    event → row semantics), with the full-text keys derived here."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def apply(self, events: Sequence[Event]) -> None:
        for event in events:
            for change in projected(event):
                self._execute(change)

    def rebuild(self, documents: Sequence[MemoryDocument]) -> RebuildReport:
        return rebuild_rows(self._conn, documents)

    def _execute(self, change: RowChange) -> None:
        c = self._conn
        match change:
            case InsertRow():
                scope = None
                if change.scope_of is not None:
                    found = c.execute(
                        "SELECT target, namespace FROM memories WHERE id = %s", (change.scope_of,)
                    ).fetchone()
                    scope = None if found is None else (Target(found[0]), found[1])
                self._insert(change.resolved(scope))
            case UpsertRow():
                values = _values(change.row)
                assignments = ", ".join(f"{column} = %s" for column in change.columns)
                cur = c.execute(
                    f"UPDATE memories SET {assignments} WHERE id = %s",
                    (*(values[column] for column in change.columns), change.row.id),
                )
                if cur.rowcount == 0:
                    self._insert(InsertRow(row=change.row).resolved(None))
                elif "text" in change.columns:
                    keys, count = row_keys(change.row.text)
                    c.execute(
                        "UPDATE memories SET keys = array_to_tsvector(%s::text[]), nkeys = %s "
                        "WHERE id = %s",
                        (keys, count, change.row.id),
                    )
            case SupersedeRow():
                c.execute(
                    "UPDATE memories SET superseded_by = %s, superseded_at = %s WHERE id = %s",
                    (change.by, change.at.isoformat(), change.id),
                )
            case ReferenceRow():
                c.execute(
                    "UPDATE memories SET last_referenced = GREATEST(last_referenced, %s) "
                    "WHERE id = %s",
                    (change.on.isoformat(), change.id),
                )
            case DeleteRows():  # their vectors go with them
                c.execute("DELETE FROM memories WHERE id = ANY(%s)", (list(change.ids),))
            case _:
                assert_never(change)

    def _insert(self, row: Row | None) -> None:
        if row is None:
            return  # not stored (an unattributed project row lives in Markdown only)
        values = _values(row)
        keys, count = row_keys(row.text)
        self._conn.execute(
            f"INSERT INTO memories (id, {', '.join(values)}, keys, nkeys) "
            f"VALUES (%s{', %s' * len(values)}, array_to_tsvector(%s::text[]), %s)",
            (row.id, *values.values(), keys, count),
        )


def _values(row: Row) -> dict[str, object]:
    """The stored form of a row's columns (dates as ISO text, enums as their values)."""
    return {
        "target": row.target.value,
        "project": row.project,
        "namespace": row.namespace,
        "category": row.category.value if row.category else None,
        "text": row.text,
        "created": row.created.isoformat(),
        "last_referenced": row.last_referenced.isoformat(),
        "flagged": row.flagged,
    }


class PgLedger:
    """The render ledger, keyed by (stream, replica) as in SQLite (ADR 0022): each host's
    Markdown file records its own renders."""

    def __init__(self, streams: _Streams) -> None:
        self._s = streams
        self._conn = streams.conn

    def rendered(self, stream: str, replica: str) -> tuple[int, str] | None:
        row = self._conn.execute(
            "SELECT version, sha256 FROM markdown_replicas WHERE stream = %s AND replica = %s",
            (stream, replica),
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def record(self, stream: str, replica: str, version: int, sha256: str) -> None:
        self._conn.execute(
            "INSERT INTO markdown_replicas (stream, replica, version, sha256) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (stream, replica) DO UPDATE SET "
            "version = excluded.version, sha256 = excluded.sha256",
            (stream, replica, version, sha256),
        )

    def store_id(self) -> str:
        row = self._conn.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchone()
        return str(row[0]) if row else ""

    def adopt_store_id(self, store_id: str) -> None:
        """Take another store's identity (`migrate --to postgres` into an empty store)."""
        self._conn.execute("UPDATE store_meta SET value = %s WHERE key = 'store_id'", (store_id,))


@attrs.frozen
class PgUnitOfWork:
    journal: PgJournal
    projection: PgProjection
    ledger: PgLedger


def _unit(conn: psycopg.Connection[Any], writing: bool) -> PgUnitOfWork:
    streams = _Streams(conn, writing)
    return PgUnitOfWork(PgJournal(streams), PgProjection(conn), PgLedger(streams))


class PgStorage:
    """Opens (creating or migrating) the schema in the database of `dsn`.

    Driver errors never leave it: they become `StorageFailed` naming the server and database
    (never the DSN's password). A `VersionConflict` raised inside a transaction passes as it is.
    """

    def __init__(
        self,
        dsn: str,
        *,
        max_connections: int = 4,
        logger: Any = None,
        timeout: float = 30.0,
        retry_s: float = OPEN_RETRY_S,
    ) -> None:
        """`timeout`: seconds to wait for a connection (at the start, and from the pool);
        `retry_s`: how long the start tries again after a dropped or refused connection."""
        self.where = describe(dsn)
        self._dsn = dsn  # only to ask the server why the pool got no connection (never shown)
        self.warnings: list[str] = []
        self._logger = logger
        self._pool = open_pool(dsn, max_size=max_connections, timeout=timeout, retry_s=retry_s)
        self._lock = threading.RLock()
        self._current: tuple[psycopg.Connection[Any], PgUnitOfWork] | None = None
        try:
            with_retry(self._migrate, retry_s=min(retry_s, timeout))
        except psycopg.Error as exc:
            self._pool.close()
            raise mapped(exc, self.where) from exc
        except BaseException:
            self._pool.close()
            raise

    def _migrate(self) -> None:
        # a connection the server dropped is discarded by the pool: the next try gets a new one
        with self._pool.connection() as conn:
            migrate(conn, self.where)

    @contextlib.contextmanager
    def _scope(self, *, writing: bool) -> Iterator[PgUnitOfWork]:
        with self._lock:
            if self._pool.closed:  # the library's error, not the pool's PoolClosed
                raise StoreClosed(
                    f"{self.where}: this store was closed; open a new one with "
                    "pi_hermes_memory.open()"
                )
            if self._current is not None:  # nested: a savepoint of the outer transaction
                conn, uow = self._current
                try:
                    with conn.transaction():
                        yield uow
                except psycopg.Error as exc:
                    raise mapped(exc, self.where) from exc
                return
            try:
                with self._pool.connection() as conn:
                    uow = _unit(conn, writing)
                    with conn.transaction():
                        if not writing:
                            conn.execute(
                                "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"
                            )
                        self._current = (conn, uow)
                        try:
                            yield uow
                        finally:
                            self._current = None
            except psycopg.Error as exc:
                raise mapped(exc, self.where, self._dsn) from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PgUnitOfWork]:
        with self._scope(writing=True) as uow:
            yield uow

    @contextlib.contextmanager
    def erasing(self) -> Iterator[PgUnitOfWork]:
        """A write transaction; what it overwrites or deletes stays in dead row versions
        until `scrub` vacuums the tables (and in WAL archives and backups: see the ADR)."""
        with self.transaction() as uow:
            yield uow

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[PgUnitOfWork]:
        with self._scope(writing=False) as uow:
            yield uow

    @contextlib.contextmanager
    def writing(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection of a write transaction (for the vector and skill tables)."""
        with self._scope(writing=True) as uow:
            yield uow.projection._conn

    @contextlib.contextmanager
    def read(self) -> Iterator[psycopg.Connection[Any]]:
        """A consistent read snapshot's connection (for the search index and vectors)."""
        with self._scope(writing=False) as uow:
            yield uow.projection._conn

    def scrub(self) -> ScrubReport:
        """After a purge committed: VACUUM the tables that held the text, so their dead row
        versions are gone from the data files. WAL segments, archives, replicas and backups
        of the server still hold it until they rotate: named as a warning."""
        with self._lock:
            try:
                with self._pool.connection() as conn:
                    for table in ("events", "snapshots", "memories"):
                        conn.execute(f"VACUUM {table}")
            except psycopg.Error as exc:
                raise mapped(exc, self.where, self._dsn) from exc
        return ScrubReport(
            warnings=(
                f"{self.where}: the erased text may remain in the server's write-ahead log, "
                "WAL archives, standbys and backups until they are rotated",
            )
        )

    def analyze(self) -> None:
        """VACUUM ANALYZE the read model after a bulk load (`migrate --to postgres`): fresh
        planner statistics and visibility map, as autovacuum would leave them a while later."""
        with self._lock:
            try:
                with self._pool.connection() as conn:
                    conn.execute("VACUUM ANALYZE memories")
                    conn.execute("ANALYZE events")
            except psycopg.Error as exc:
                raise mapped(exc, self.where, self._dsn) from exc

    def close(self) -> None:
        with self._lock:
            self._pool.close()


__all__ = ["PgStorage", "StorageFailed"]
