"""SQLite storage: the event journal and its read models in one file (ADR 0003).

A `transaction()` is one BEGIN IMMEDIATE … COMMIT: appended events, the memory rows, the FTS
index and the Markdown render ledger commit together or not at all.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import apsw
from pi_hermes_memory.adapters.sqlite.checked import (
    Stamp,
    StampCache,
    read_checked,
    record_checked,
    stamp_of,
)
from pi_hermes_memory.adapters.sqlite.connection import connect, database_present, enable_wal
from pi_hermes_memory.adapters.sqlite.eventlog import SCRUB_PENDING, EventLog, default_log_path
from pi_hermes_memory.adapters.sqlite.failures import damaged_message, map_error, map_os_error
from pi_hermes_memory.adapters.sqlite.fts import merge_step
from pi_hermes_memory.adapters.sqlite.schema import check_ours, migrate
from pi_hermes_memory.adapters.sqlite.scrub import scrub, secure_delete
from pi_hermes_memory.adapters.sqlite.write_index import SqliteWriteIndex
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.errors import DatabaseDamaged, StorageFailed, StoreClosed, StoreReadOnly

if TYPE_CHECKING:
    # the events, their codec and the row projection load with the first event read or
    # written: a search on a store proven caught up needs none of them (ADR 0105)
    from pi_hermes_memory.adapters.sqlite.mirror import SqliteProjection
    from pi_hermes_memory.domain.memory.events import Event
    from pi_hermes_memory.ports.memory import ScrubReport


# The rebuild and the damage check (`recovery`, with its value class) load when a database is
# missing or its files carry no sound stamp, not by every open (ADR 0112). Module functions,
# so that a test can count the calls.
def restore_if_missing(path: Path, log: EventLog) -> list[str]:
    """`recovery.restore_if_missing`, after the one look that finds the database present."""
    if database_present(path) or not log.exists():
        return []
    from pi_hermes_memory.adapters.sqlite import recovery

    return recovery.restore_if_missing(path, log)


def store_damage(path: Path) -> str | None:
    """`recovery.store_damage`: why the database at `path` is damaged, or None."""
    from pi_hermes_memory.adapters.sqlite import recovery

    return recovery.store_damage(path)


class SqliteJournal:
    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def version(self, stream: str) -> int:
        row = self._conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = ?", (stream,)
        ).get
        return int(row)

    def append(self, stream: str, expected_version: int, events: Sequence[Event]) -> None:
        from pi_hermes_memory.journal.codec import encode

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
            self._conn.executemany(
                "INSERT INTO events (stream, version, tag, at, data) VALUES (?, ?, ?, ?, ?)", rows
            )
        except apsw.ConstraintError as exc:  # UNIQUE(stream, version): the backstop
            raise VersionConflict(stream, expected_version, self.version(stream)) from exc

    def streams(self, prefix: str) -> list[str]:
        # a range on the (stream, version) index: exact (binary), unlike LIKE
        return [
            str(row[0])
            for row in self._conn.execute(
                "SELECT DISTINCT stream FROM events WHERE stream >= ? AND stream < ? "
                "ORDER BY stream",
                (prefix, prefix + "\U0010ffff"),
            )
        ]

    def read(self, stream: str, after: int = 0, upto: int | None = None) -> list[Event]:
        from pi_hermes_memory.journal.codec import decode

        upper = upto if upto is not None else 2**62
        return [
            decode(tag, data)
            for tag, data in self._conn.execute(
                "SELECT tag, data FROM events WHERE stream = ? AND version > ? AND version <= ? "
                "ORDER BY version",
                (stream, after, upper),
            )
        ]

    def snapshot(self, stream: str) -> tuple[int, str] | None:
        row = self._conn.execute(
            "SELECT version, data FROM snapshots WHERE stream = ?", (stream,)
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def snapshot_version(self, stream: str) -> int | None:
        row = self._conn.execute(
            "SELECT version FROM snapshots WHERE stream = ?", (stream,)
        ).fetchone()
        return None if row is None else int(row[0])

    def save_snapshot(self, stream: str, version: int, data: str) -> None:
        self._conn.execute(
            "INSERT INTO snapshots (stream, version, data) VALUES (?, ?, ?) "
            "ON CONFLICT (stream) DO UPDATE SET version = excluded.version, data = excluded.data",
            (stream, version, data),
        )

    def redact(self, events: Sequence[Event]) -> None:
        """In place (ADR 0026); inside the unit of work's transaction, so a refusal (an event
        without a stored counterpart) rolls back with it."""
        from pi_hermes_memory.journal.codec import encode

        for event in events:
            tag, data = encode(event)
            self._conn.execute(
                "UPDATE events SET data = ? WHERE stream = ? AND version = ? AND tag = ?",
                (data, event.stream, event.version, tag),
            )
            if self._conn.changes() != 1:
                raise VersionConflict(event.stream, event.version, self.version(event.stream))
        if events:  # the event log holds the old text until `scrub` rewrites it
            self._conn.execute(
                "INSERT INTO store_meta (key, value) VALUES (?, '1') "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (SCRUB_PENDING,),
            )


class SqliteLedger:
    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def rendered(self, stream: str, replica: str) -> tuple[int, str] | None:
        """What was last rendered into this replica; a row migrated from schema 3 (replica '')
        stands for the one replica that store had until a replica records its own."""
        row = self._conn.execute(
            "SELECT version, sha256 FROM markdown_replicas WHERE stream = ? AND replica IN (?, '') "
            "ORDER BY replica DESC LIMIT 1",
            (stream, replica),
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def record(self, stream: str, replica: str, version: int, sha256: str) -> None:
        self._conn.execute(
            "INSERT INTO markdown_replicas (stream, replica, version, sha256) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (stream, replica) DO UPDATE SET version = excluded.version, "
            "sha256 = excluded.sha256",
            (stream, replica, version, sha256),
        )
        # the migrated row belonged to the first replica that records its own
        self._conn.execute(
            "DELETE FROM markdown_replicas WHERE stream = ? AND replica = ''", (stream,)
        )

    def store_id(self) -> str:
        return str(self._conn.execute("SELECT value FROM store_meta WHERE key = 'store_id'").get)


class SqliteUnitOfWork:
    """The journal, the read-model projection, the render ledger and the write index of one
    connection. The projection (with the events and the row model) is built on first use: a
    read that only asks versions and the ledger loads none of it (ADR 0105)."""

    __slots__ = ("_conn", "_projection", "journal", "ledger", "write_index")

    def __init__(
        self,
        journal: SqliteJournal,
        conn: apsw.Connection,
        ledger: SqliteLedger,
        write_index: SqliteWriteIndex,
    ) -> None:
        self.journal = journal
        self._conn = conn
        self._projection: SqliteProjection | None = None
        self.ledger = ledger
        #: the persisted write index (ADR 0084), advanced by `projection.apply`
        self.write_index = write_index

    @property
    def projection(self) -> SqliteProjection:
        if self._projection is None:
            from pi_hermes_memory.adapters.sqlite.mirror import SqliteProjection

            self._projection = SqliteProjection(self._conn)
        return self._projection


def _require_writable(path: Path) -> None:
    """Opening writes nothing when the schema is current (ADR 0024), so a read-only database
    file or folder (permissions or a read-only file system) is found here, not at the first
    write: the store then opens read-only (ADR 0023)."""
    for place in (path, path.parent):
        if not os.access(place, os.W_OK):
            raise StoreReadOnly(
                f"{place} is read-only; nothing can be written until it is writable again "
                "(list and search keep working).",
                path=place,
            )


class SqliteStorage:
    """Opens (creating or migrating) our database file; refuses a foreign one.

    Driver errors never leave it (ADR 0023): a damaged file raises `DatabaseDamaged`, a full
    disk `StorageFull`, a read-only file or folder `StoreReadOnly` (pi_hermes_memory.errors).
    A write that failed because the file could not be written reopens the connection before
    the next one, so the store works again as soon as the cause is gone.

    Every COMMIT that appended events is copied to the event log (`event_log`, default
    `sessions.journal.jsonl` beside the database; None: no log) before `transaction()`
    returns. A missing database whose log holds events is rebuilt from the log at open;
    `warnings` says so.
    """

    def __init__(
        self, path: Path, *, event_log: Path | EllipsisType | None = ..., logger: Any = None
    ) -> None:
        self.path = path
        self._log_path: Path | None = (
            default_log_path(path) if isinstance(event_log, EllipsisType) else event_log
        )
        self.event_log = None if self._log_path is None else EventLog(self._log_path)
        self._logger = logger
        self.warnings: list[str] = []
        self._lock = threading.RLock()
        self._logged = -1  # the largest seq this process knows the log holds
        self._reopen = False
        self._closed = False
        # the files' stamp as a sound check or this process's own commits left them (ADR 0086)
        self._sound: Stamp | None = None
        self._changed = False  # whether this session's own commits changed the file
        self._stamps = StampCache()  # digests the files' stat still proves (ADR 0106)
        if self.event_log is not None:
            try:
                self.warnings.extend(restore_if_missing(path, self.event_log))
            except apsw.Error as exc:
                raise map_error(exc, path) from exc
            except OSError as exc:
                raise map_os_error(exc, path) from exc
        self._conn = self._connect()
        self._uow = self._unit_of_work()
        with self._lock:
            if self._scrub_pending() and not self._conn.readonly("main"):
                # a purge committed, then its process died before scrubbing (ADR 0026)
                try:
                    self.warnings.extend(self.scrub().warnings)
                except (OSError, apsw.Error) as exc:
                    self.warnings.append(f"finishing an interrupted purge failed: {exc}")
            self._copy_to_log()

    def _connect(self) -> apsw.Connection:
        try:
            conn = connect(self.path)
        except OSError as exc:
            raise map_os_error(exc, self.path) from exc
        except apsw.Error as exc:
            raise map_error(exc, self.path) from exc
        try:
            check_ours(conn, self.path)
            enable_wal(conn)
            migrate(conn, self.path)
            damage = self._damage()
            if damage is not None:  # refused now, not at the first write (issue 26 §6)
                raise DatabaseDamaged(damaged_message(self.path, damage), path=self.path)
            _require_writable(self.path)
        except apsw.Error as exc:
            errno = conn.system_errno
            conn.close()
            raise map_error(exc, self.path, errno) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _damage(self) -> str | None:
        """`store_damage`, skipped when the files carry the stamp a sound check and then this
        library's own sessions left (ADR 0086). A sound check is recorded only by a session
        that then changes the file itself (at its close): a session that writes nothing leaves
        the folder as it found it (a dry run writes nothing)."""
        before = stamp_of(self.path, self._stamps)
        if before is not None and read_checked(self.path) == before:
            self._sound = before
            return None
        damage = store_damage(self.path)
        sound = (
            damage is None and before is not None and stamp_of(self.path, self._stamps) == before
        )
        self._sound = before if sound else None
        return damage

    def _unit_of_work(self) -> SqliteUnitOfWork:
        return SqliteUnitOfWork(
            SqliteJournal(self._conn),
            self._conn,
            SqliteLedger(self._conn),
            SqliteWriteIndex(self._conn),
        )

    @property
    def connection(self) -> apsw.Connection:
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[SqliteUnitOfWork]:
        """One IMMEDIATE transaction. Opened inside another one (e.g. the skill tables written
        inside a skill move, ADR 0031) it is a savepoint of the outer one: it commits or rolls
        back with it, and only the outermost copies its events to the log after COMMIT (a
        savepoint's events are not durable until then)."""
        with self._lock:
            self._open()
            nested = self._conn.in_transaction
            if not nested:
                self._writable()
            chained = False
            try:
                with self._conn:
                    # under the write lock (IMMEDIATE): is this commit the next link of a
                    # chain of our own changes since a sound check (ADR 0086)?
                    chained = not nested and self._sound is not None
                    chained = chained and stamp_of(self.path, self._stamps) == self._sound
                    yield self._uow
            except apsw.Error as exc:
                self._sound = None
                raise self._mapped(exc) from exc
            except BaseException:
                self._sound = None
                raise
            if not nested:
                self._merge_fts()
                after = stamp_of(self.path, self._stamps) if chained else None
                self._changed = self._changed or (after is not None and after != self._sound)
                self._sound = after
                self._copy_to_log()

    @contextlib.contextmanager
    def bookkeeping(self) -> Iterator[SqliteUnitOfWork]:
        """A write transaction whose COMMIT is not synced to disk (synchronous=NORMAL for it
        alone, ADR 0085): for what a crash may lose because the next operation recomputes it
        (the render ledger's record of a file already written: "written, then crashed before
        the ledger"). It is as visible to other connections as any commit; the next synced
        commit makes it durable. Never for events or read models."""
        with self._lock:
            self._open()
            if self._conn.in_transaction:  # a savepoint of a durable transaction
                with self.transaction() as uow:
                    yield uow
                return
            try:
                self._conn.execute("PRAGMA synchronous=NORMAL")
            except apsw.Error as exc:
                raise self._mapped(exc) from exc
            try:
                with self.transaction() as uow:
                    yield uow
            finally:
                try:
                    self._conn.execute("PRAGMA synchronous=FULL")
                except apsw.Error:
                    # never write on at NORMAL: the next write reconnects (FULL by `connect`)
                    self._reopen = True

    @contextlib.contextmanager
    def erasing(self) -> Iterator[SqliteUnitOfWork]:
        """A write transaction with `secure_delete` on: what it deletes or overwrites is
        zeroed in the file, not left in free space (a purge, ADR 0026)."""
        with self._lock:
            self._open()
            self._writable()
            with secure_delete(self._conn), self.transaction() as uow:
                yield uow

    def scrub(self) -> ScrubReport:
        """After a purge committed: merge the FTS segments, rewrite the event log, truncate
        the WAL; name the copies moved aside (adapters/sqlite/scrub.py)."""
        with self._lock:
            self._open()
            self._sound = None  # it rewrites the WAL and the FTS segments: check at next open
            try:
                report = scrub(self._conn, self.path, self.event_log)
            except apsw.Error as exc:
                raise self._mapped(exc) from exc
            self._logged = -1
        return report

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[SqliteUnitOfWork]:
        """A read-only unit of work on a WAL snapshot (a deferred transaction: it never waits
        for a writer, ADR 0024). Nothing may be written through it."""
        with self.read():
            yield self._uow

    @contextlib.contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A consistent read snapshot (deferred transaction: readers never take the write lock)."""
        with self._lock:
            self._open()
            try:
                self._conn.execute("BEGIN DEFERRED")
                try:
                    yield self._conn
                finally:
                    self._conn.execute("COMMIT")
            except apsw.Error as exc:
                raise self._mapped(exc) from exc

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            chained = self._sound is not None and stamp_of(self.path, self._stamps) == self._sound
            self._conn.close()
            if chained and self._changed:  # the last close checkpoints the WAL: stamp after
                after = stamp_of(self.path, self._stamps)
                if after is not None:
                    record_checked(self.path, after)

    def _open(self) -> None:
        """Refuse a use after `close()` with the library's error, not the driver's."""
        if self._closed:
            raise StoreClosed(
                f"{self.path}: this store was closed; open a new one with pi_hermes_memory.open()"
            )

    # -- failures and the event log (ADR 0023) ------------------------------------------------

    def _mapped(self, exc: apsw.Error) -> StorageFailed:
        mapped = map_error(exc, self.path, self._conn.system_errno)
        if isinstance(mapped, StoreReadOnly):
            self._reopen = True  # a connection that met a read-only file stays read-only
        return mapped

    def _writable(self) -> None:
        """Reopen a connection that could not write before (the cause may be gone); refuse
        to start a write on one that still cannot."""
        if not (self._reopen or self._conn.readonly("main")):
            return
        fresh = self._connect()
        self._conn.close()
        self._conn, self._reopen = fresh, False
        self._uow = self._unit_of_work()
        if self._conn.readonly("main"):
            self._reopen = True
            raise map_error(apsw.ReadOnlyError("the database file is read-only"), self.path)

    def _merge_fts(self) -> None:
        """After the COMMIT that acknowledged a write to `memories`: one bounded merge of its
        FTS index in its own transaction (ADR 0102). Never fails the write it follows."""
        projection = self._uow.projection
        if not projection.fts_written:
            return
        projection.fts_written = False
        try:
            merge_step(self._conn)
        except apsw.Error:
            self._reopen = True  # e.g. synchronous not restored: the next write reconnects

    def _scrub_pending(self) -> bool:
        try:
            row = self._conn.execute(
                "SELECT 1 FROM store_meta WHERE key = ?", (SCRUB_PENDING,)
            ).fetchone()
        except apsw.Error:
            return False
        return row is not None

    def _copy_to_log(self) -> None:
        """After COMMIT: append the events the log lacks. A failure is a warning: the events
        are durable in the database and the next commit or open appends them."""
        if self.event_log is None or self._scrub_pending():
            return  # after a purge the scrub rewrites the whole log
        try:
            top = int(self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").get)
            if top == self._logged:
                return
            _, warnings = self.event_log.catch_up(self._conn)
            self._logged = top
        except (OSError, apsw.Error) as exc:
            warnings = [
                f"could not append to {self.event_log.path} ({exc}); the change is saved in "
                f"{self.path.name} and will be copied by the next write"
            ]
        self.warnings.extend(warnings)
        del self.warnings[:-50]
        for warning in warnings:
            if self._logger is not None:
                self._logger.warning("eventlog.warning", detail=warning)
