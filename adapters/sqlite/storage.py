"""SQLite storage: the event journal and its read models in one file (ADR 0003).

A `transaction()` is one BEGIN IMMEDIATE … COMMIT: appended events, the memory rows, the FTS
index and the Markdown render ledger commit together or not at all.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import apsw
import attrs
from pi_hermes_memory.adapters.sqlite.connection import connect, enable_wal
from pi_hermes_memory.adapters.sqlite.fts import grams
from pi_hermes_memory.adapters.sqlite.mirror import rebuild_rows
from pi_hermes_memory.adapters.sqlite.schema import check_ours, migrate
from pi_hermes_memory.codec import decode, encode
from pi_hermes_memory.domain.document import MemoryDocument
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.domain.events import (
    Event,
    MemoryAdded,
    MemoryMergedInto,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemorySuperseded,
)
from pi_hermes_memory.domain.model import Target
from pi_hermes_memory.mirror import RebuildReport


class SqliteJournal:
    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def version(self, stream: str) -> int:
        row = self._conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = ?", (stream,)
        ).get
        return int(row)

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
            self._conn.executemany(
                "INSERT INTO events (stream, version, tag, at, data) VALUES (?, ?, ?, ?, ?)", rows
            )
        except apsw.ConstraintError as exc:  # UNIQUE(stream, version): the backstop
            raise VersionConflict(stream, expected_version, self.version(stream)) from exc

    def read(self, stream: str, after: int = 0, upto: int | None = None) -> list[Event]:
        upper = upto if upto is not None else 2**62
        return [
            decode(tag, data)
            for tag, data in self._conn.execute(
                "SELECT tag, data FROM events WHERE stream = ? AND version > ? AND version <= ? "
                "ORDER BY version",
                (stream, after, upper),
            )
        ]


class SqliteProjection:
    """The `memories` table (active rows + superseded history) and its FTS index.

    Project rows without a project attribution live only in Markdown and are skipped here.
    """

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def apply(self, events: Sequence[Event]) -> None:
        for event in events:
            self._apply(event)

    def rebuild(self, documents: Sequence[MemoryDocument]) -> RebuildReport:
        """Repair the rows of these documents' targets to their folded state (ADR 0013)."""
        return rebuild_rows(self._conn, documents)

    def _apply(self, event: Event) -> None:
        c = self._conn
        match event:
            case MemoryAdded():
                if event.target is Target.PROJECT and event.project is None:
                    return
                c.execute(
                    "INSERT INTO memories (id, target, project, category, text, grams, created, "
                    "last_referenced, namespace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        event.entry_id,
                        event.target.value,
                        event.project,
                        event.category.value if event.category else None,
                        event.text,
                        grams(event.text),
                        event.created.isoformat(),
                        event.last_referenced.isoformat(),
                        event.namespace,
                    ),
                )
            case MemoryReplaced():
                found = c.execute(
                    "SELECT target, namespace FROM memories WHERE id = ?", (event.old_id,)
                ).fetchone()
                old, namespace = (None, None) if found is None else found
                c.execute(
                    "UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ?",
                    (event.new_id, event.at.date().isoformat(), event.old_id),
                )
                target = old if old is not None else _target_of(event.stream)
                if target == Target.PROJECT.value and event.project is None:
                    return
                c.execute(
                    "INSERT INTO memories (id, target, project, category, text, grams, created, "
                    "last_referenced, namespace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        event.new_id,
                        target,
                        event.project,
                        event.category.value if event.category else None,
                        event.text,
                        grams(event.text),
                        event.created.isoformat(),
                        event.last_referenced.isoformat(),
                        namespace,  # a new version stays in its namespace
                    ),
                )
            case MemorySuperseded():
                c.execute(
                    "UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ?",
                    (event.by_id, event.on.isoformat(), event.old_id),
                )
                c.execute(
                    "UPDATE memories SET last_referenced = MAX(last_referenced, ?) WHERE id = ?",
                    (event.on.isoformat(), event.by_id),
                )
            case MemoryRemoved():
                c.execute("DELETE FROM memories WHERE id = ?", (event.entry_id,))
            case MemoryMovedOut():
                pass  # the MemoryMovedIn of the same transaction updates the row in place
            case MemoryMovedIn():
                # in place: the row keeps its id, supersede ancestry and embedding
                values = (
                    event.target.value,
                    event.project,
                    event.category.value if event.category else None,
                    event.created.isoformat(),
                    event.last_referenced.isoformat(),
                )
                c.execute(
                    "UPDATE memories SET target = ?, project = ?, category = ?, created = ?, "
                    "last_referenced = ? WHERE id = ?",
                    (*values, event.entry_id),
                )
                if c.changes() == 0 and not (
                    event.target is Target.PROJECT and event.project is None
                ):
                    c.execute(
                        "INSERT INTO memories (id, target, project, category, created, "
                        "last_referenced, text, grams) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (event.entry_id, *values, event.text, grams(event.text)),
                    )
            case MemoryMergedInto():
                c.execute(
                    "UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ?",
                    (event.into_id, event.on.isoformat(), event.entry_id),
                )
            case MemoryReferenced():
                c.execute(
                    "UPDATE memories SET last_referenced = MAX(last_referenced, ?) WHERE id = ?",
                    (event.on.isoformat(), event.entry_id),
                )


def _target_of(stream: str) -> str:
    return stream.split(":", 1)[1]


class SqliteLedger:
    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def rendered(self, stream: str) -> tuple[int, str] | None:
        row = self._conn.execute(
            "SELECT version, sha256 FROM markdown_ledger WHERE stream = ?", (stream,)
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def record(self, stream: str, version: int, sha256: str) -> None:
        self._conn.execute(
            "INSERT INTO markdown_ledger (stream, version, sha256) VALUES (?, ?, ?) "
            "ON CONFLICT (stream) DO UPDATE SET version = excluded.version, "
            "sha256 = excluded.sha256",
            (stream, version, sha256),
        )


@attrs.frozen
class SqliteUnitOfWork:
    journal: SqliteJournal
    projection: SqliteProjection
    ledger: SqliteLedger


class SqliteStorage:
    """Opens (creating or migrating) our database file; refuses a foreign one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = connect(path)
        try:
            check_ours(self._conn, path)
            enable_wal(self._conn)
            migrate(self._conn, path)
        except BaseException:
            self._conn.close()
            raise
        self._uow = SqliteUnitOfWork(
            SqliteJournal(self._conn), SqliteProjection(self._conn), SqliteLedger(self._conn)
        )
        self._lock = threading.RLock()

    @property
    def connection(self) -> apsw.Connection:
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[SqliteUnitOfWork]:
        with self._lock, self._conn:
            yield self._uow

    @contextlib.contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A consistent read snapshot (deferred transaction: readers never take the write lock)."""
        with self._lock:
            self._conn.execute("BEGIN DEFERRED")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
