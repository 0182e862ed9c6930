"""sessions.db read for the doctor without any write, not even a `-wal`/`-shm` file (ADR 0036).

A read-only SQLite connection to a WAL database creates the `-wal` and `-shm` files when they
are missing, and leaves them behind. No `-wal` file means no connection has the database open
and every committed page is in the main file, so the doctor then opens it `immutable=1` (no
side file, no lock). With a `-wal` there (another process has the store open), it opens
SQLITE_OPEN_READONLY, which reads the live WAL and writes no byte of the database or the WAL.
Every read happens in one read transaction: one consistent snapshot.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import apsw
from pi_hermes_memory.adapters.sqlite.connection import (
    BUSY_TIMEOUT_MS,
    busy_timeout,
    no_double_quoted_strings,
)
from pi_hermes_memory.adapters.sqlite.mirror import _COLUMNS, _SUPERSEDED_BY, _TARGET, _values
from pi_hermes_memory.adapters.sqlite.recovery import read_events
from pi_hermes_memory.adapters.sqlite.schema import SCHEMA_VERSION, check_ours
from pi_hermes_memory.adapters.sqlite.sessions import _FILES, _progress
from pi_hermes_memory.domain.history.transcripts import FileProgress
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.memory.mirror import plan_mirror

__all__ = ["SnapshotDatabase", "event_log_problems", "open_snapshot"]


def event_log_problems(db_path: Path) -> tuple[str, ...] | None:
    """The damaged lines and left-out streams of the event log beside `db_path` (ADR 0118),
    read without a lock or any write (a torn last line is a killed writer, not damage); None
    when there is no log. OSError when it cannot be read. A log whose every checksum holds is
    proved by its bytes (`EventLog.whole`); a line removed whole, which breaks no checksum, is
    then not seen (a rebuild says so: the events after it are left out)."""
    from pi_hermes_memory.adapters.sqlite.eventlog import EventLog, default_log_path

    log = EventLog(default_log_path(db_path))
    if not log.exists():
        return None
    return () if log.whole() else log.read().problems  # the checksums alone, when they hold


def _connect(path: Path) -> apsw.Connection:
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    else:
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?immutable=1"
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    busy_timeout(conn, BUSY_TIMEOUT_MS)
    no_double_quoted_strings(conn)
    return conn


@contextlib.contextmanager
def open_snapshot(path: Path) -> Iterator[SnapshotDatabase]:
    """The database as one read snapshot. Raises `apsw.Error` or `OSError` when it cannot be
    read, `ForeignDatabaseError` when it is not ours or newer than this code."""
    conn = _connect(path)
    try:
        version = check_ours(conn, path)
        conn.execute("BEGIN DEFERRED")
        try:
            yield SnapshotDatabase(conn, path, version)
        finally:
            conn.execute("COMMIT")
    finally:
        conn.close()


class SnapshotDatabase:
    """The doctor's reads of sessions.db (the `DoctorDatabase` port)."""

    def __init__(self, conn: apsw.Connection, path: Path, version: int) -> None:
        self._conn = conn
        self.path = path
        #: the schema version; lower than SCHEMA_VERSION until the next open migrates it
        self.schema_version = version
        self.current_schema = version == SCHEMA_VERSION

    def _has(self, table: str) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return row is not None

    def events(self) -> list[Event]:
        return read_events(self._conn) if self._has("events") else []

    def store_id(self) -> str | None:
        if not self._has("store_meta"):
            return None
        row = self._conn.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchone()
        return None if row is None else str(row[0])

    def mirror_diff(self, documents: Sequence[MemoryDocument]) -> dict[str, dict[str, int]]:
        """Per target: active rows in the mirror, rows missing, extra (active rows the journal
        lacks), different, and superseded rows (the comparison `rebuild_rows` repairs)."""
        plan = plan_mirror(documents)
        counts: dict[str, Counter[str]] = {d.target.value: Counter() for d in documents}
        if not self._has("memories"):
            return {t: dict(c) for t, c in counts.items()}
        columns = ", ".join(_COLUMNS)
        current = {
            str(row[0]): tuple(row[1:])
            for row in self._conn.execute(f"SELECT id, {columns} FROM memories")
        }
        for entry_id, entry in plan.rows.items():
            have = current.get(entry_id)
            bucket = counts.setdefault(entry.target.value, Counter())
            if have is None:
                bucket["missing"] += 1
            elif have != _values(entry, have):
                bucket["different"] += 1
        for entry_id, have in current.items():
            bucket = counts.setdefault(str(have[_TARGET]), Counter())
            if have[_SUPERSEDED_BY] is None:
                bucket["active"] += 1
                if entry_id not in plan.rows:
                    bucket["extra"] += 1
            else:
                bucket["superseded"] += 1
        return {t: dict(c) for t, c in counts.items()}

    def vector_models(self) -> dict[str, dict[str, int]]:
        """Active rows with a vector, per target and model."""
        out: dict[str, dict[str, int]] = {}
        if not self._has("memories"):
            return out
        for target, model, n in self._conn.execute(
            "SELECT target, embedding_model, count(*) FROM memories WHERE superseded_by IS NULL "
            "AND embedding IS NOT NULL GROUP BY target, embedding_model"
        ):
            out.setdefault(str(target), {})[str(model)] = int(n)
        return out

    def scan_rows(
        self, model: str | None
    ) -> list[tuple[str, str, str | None, str | None, str, bytes | None]]:
        """Active rows of the memory and project targets: (id, target, project, namespace,
        text, the vector BLOB when it is `model`'s)."""
        if not self._has("memories"):
            return []
        rows = self._conn.execute(
            "SELECT id, target, project, namespace, text, "
            "CASE WHEN embedding_model = ? THEN embedding END FROM memories "
            "WHERE superseded_by IS NULL AND target IN ('memory', 'project') ORDER BY id",
            (model,),
        )
        return [(str(a), str(b), c, d, str(e), f) for a, b, c, d, e, f in rows]

    def session_files(self) -> dict[str, FileProgress]:
        if not self._has("session_files"):
            return {}
        return {row[0]: _progress(row) for row in self._conn.execute(_FILES)}

    def hidden_skills(self) -> dict[str, tuple[str, ...]]:
        """Project -> the skills hidden there."""
        out: dict[str, list[str]] = {}
        if not self._has("skill_visibility"):
            return {}
        for project, skill in self._conn.execute(
            "SELECT project, skill_id FROM skill_visibility WHERE state = 'hidden' "
            "ORDER BY project, skill_id"
        ):
            out.setdefault(str(project), []).append(str(skill))
        return {p: tuple(s) for p, s in out.items()}

    def size_bytes(self) -> int:
        """The database file and its WAL."""
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += self.path.with_name(self.path.name + suffix).stat().st_size
        return total
