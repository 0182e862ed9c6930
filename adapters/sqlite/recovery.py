"""Rebuilding `sessions.db` from the event log, and moving a damaged one aside (ADR 0023).

A rebuild writes a new database next to the old path (`<name>.rebuilding`), inserts every valid
event of the log with its original seq, the store's identity, and the `memories` rows of the
folded documents (the same repair code as sync-markdown, ADR 0013), closes it (checkpointing
the WAL away) and renames it into place: the database is either absent or complete. Derived
data is not in the log and comes back on its own: embeddings (`reembed`), the session index
(`index-sessions`), the Markdown render ledger (the next open recognises files that equal the
render of the journal head).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
import attrs
from pi_hermes_memory.adapters.sqlite.connection import (
    SIDE_FILES,
    connect,
    database_present,
    enable_wal,
)
from pi_hermes_memory.adapters.sqlite.eventlog import (
    EventLog,
    EventRecord,
    fsync_directory,
    same_event,
)
from pi_hermes_memory.adapters.sqlite.schema import check_ours, migrate
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import CorruptEvent

if TYPE_CHECKING:
    # the events, their codec, the fold and the mirror load when a store is rebuilt from
    # its event log, not by every open (ADR 0105)
    from pi_hermes_memory.domain.memory.document import MemoryDocument
    from pi_hermes_memory.domain.memory.events import Event

__all__ = [
    "LogRepair",
    "Rebuilt",
    "damaged",
    "move_aside",
    "read_events",
    "rebuild_from_log",
    "repair_log",
    "restore_if_missing",
    "store_damage",
]


@attrs.frozen(kw_only=True)
class Rebuilt:
    """A database rebuilt from the log: how many events and entries it holds, what was left
    out (damaged lines, events after a gap)."""

    events: int
    entries: int
    problems: tuple[str, ...]


def stamp() -> str:
    """A UTC timestamp for file names that sorts and never repeats within a process."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{time.time_ns() % 10**6:06d}"


def move_aside(db_path: Path, label: str) -> list[Path]:
    """Rename the database and its side files to `<name>.<label>-<stamp>` (+ `-wal`, …): never
    deleted, and still openable by sqlite3 with their WAL. Returns the new paths."""
    suffix = f".{label}-{stamp()}"
    moved = []
    for side in ("", *SIDE_FILES):
        source = db_path.with_name(db_path.name + side)
        if source.exists():
            target = db_path.with_name(db_path.name + suffix + side)
            os.replace(source, target)
            moved.append(target)
    if moved:
        fsync_directory(db_path.parent)
    return moved


#: tables of the session history: they can hold gigabytes, so the check at every open leaves
#: them out (`recover` checks the whole file; a damaged page there is met by session search)
_HISTORY_PREFIXES = ("session_", "sessions")


def store_damage(db_path: Path) -> str | None:
    """Why the memory store's part of the database cannot be trusted, checked at every open
    (issue 26 §6): bytes after the last page (something other than SQLite wrote the file), or
    a `quick_check` of the store's own tables (events, rows, ledger, skills; not the session
    history) that fails, as garbage written over the file's tail does. None when sound.
    On a connection of its own (read-only), closed again: the store's connection keeps a cold
    page cache, so damage done later is still met by its queries."""
    conn = connect(db_path, read_only=True)
    try:
        return _store_damage(conn, db_path)
    finally:
        conn.close()


def _store_damage(conn: apsw.Connection, db_path: Path) -> str | None:
    extra = _bytes_after_last_page(conn, db_path)
    if extra:
        return f"{extra:,} bytes of unknown data after the last page"
    try:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND rootpage > 0"
            )
        ]
        for table in tables:
            if table.startswith(_HISTORY_PREFIXES):  # the write index is checked (ADR 0087)
                continue
            quoted = table.replace('"', '""')
            problems = [str(row[0]) for row in conn.execute(f'PRAGMA quick_check("{quoted}")')]
            if problems != ["ok"]:
                found = " ".join("; ".join(problems[:2]).split())  # one line
                return f"table {table}: " + found.replace("*** in database main *** ", "")
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        return str(exc)
    return None


def _bytes_after_last_page(conn: apsw.Connection, db_path: Path) -> int:
    """Bytes of the main file past the pages SQLite counts, when no WAL content can explain
    them (a WAL frame may shrink the database before a checkpoint truncates the file)."""
    wal = db_path.with_name(db_path.name + "-wal")
    try:
        if wal.exists() and wal.stat().st_size > 0:
            return 0
        size = db_path.stat().st_size
    except OSError:
        return 0
    pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
    page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    assert isinstance(pages, int) and isinstance(page_size, int)
    return max(0, size - pages * page_size)


def damaged(db_path: Path) -> str | None:
    """Why the database cannot be trusted (a failed `quick_check`, or it cannot be read as a
    database), or None when it is sound or absent. Opens it read-only; writes nothing."""
    if not db_path.exists() or db_path.stat().st_size == 0:
        return None
    try:
        conn = connect(db_path, read_only=True)
    except apsw.CantOpenError:
        return None
    except apsw.Error as exc:
        return str(exc)
    try:
        problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(5)")]
        extra = _bytes_after_last_page(conn, db_path)
        if extra and problems == ["ok"]:
            problems = [f"{extra:,} bytes of unknown data after the last page"]
    except (apsw.CorruptError, apsw.NotADBError, apsw.IOError) as exc:
        return str(exc)
    except apsw.CantOpenError:
        return None  # permissions or a read-only folder, not damage
    finally:
        conn.close()
    return None if problems == ["ok"] else "; ".join(problems)


def rebuild_from_log(db_path: Path, log: EventLog) -> Rebuilt:
    """Write a new database at `db_path` (which must not exist) from the log."""
    from pi_hermes_memory.adapters.sqlite.mirror import rebuild_rows

    contents = log.read()
    problems = list(contents.problems)
    records, documents = _fold(contents.events, problems)
    temp = db_path.with_name(db_path.name + ".rebuilding")
    _discard(temp)
    conn = connect(temp)
    try:
        check_ours(conn, temp)
        enable_wal(conn)
        migrate(conn, temp)
        with conn:
            conn.executemany(
                "INSERT INTO events (seq, stream, version, tag, at, data) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [r.row() for r in records],
            )
            if contents.meta:
                conn.executemany(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    sorted(contents.meta.items()),
                )
            rebuild_rows(conn, documents)
    except BaseException:
        conn.close()
        _discard(temp)
        raise
    conn.close()  # the last connection checkpoints and removes the WAL
    os.replace(temp, db_path)
    fsync_directory(db_path.parent)
    entries = sum(1 for doc in documents for _ in doc.all_entries())
    return Rebuilt(events=len(records), entries=entries, problems=tuple(problems))


@attrs.frozen(kw_only=True)
class LogRepair:
    """A damaged event log beside a sound database: what it lacked (`problems`), whether it was
    written anew from the database (`events` it holds then) and where the old one is kept."""

    problems: tuple[str, ...]
    rewritten: bool
    events: int = 0
    kept: Path | None = None


def repair_log(db_path: Path, log: EventLog) -> LogRepair | None:
    """Write a damaged event log anew from a sound database (ADR 0118): None when the log reads
    clean or is absent. The log never holds an event the database lacks, so the database's
    journal is the whole log; the old file is copied to `<name>.damaged-<stamp>` first (never
    deleted). Left alone, with its problems said, when it names another store or holds an
    event the database does not: then it is not a damaged copy of this database's journal.
    Call it under the store's lock, with a database `damaged` found sound."""
    if not log.exists():
        return None
    found = log.read()
    if not found.problems:
        return None
    conn = connect(db_path)
    try:
        try:
            store = conn.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchone()
        except apsw.SQLError:  # a schema without store_meta
            store = None
        ours = found.meta.get("store_id") in (None, None if store is None else str(store[0]))
        if not ours or any(not same_event(conn, r, data=False) for r in found.events):
            return LogRepair(problems=found.problems, rewritten=False)
        kept = log.path.with_name(f"{log.path.name}.damaged-{stamp()}")
        with log.lock():
            shutil.copy2(log.path, kept)
        fsync_directory(log.path.parent)
        events = log.rewrite(conn)
    finally:
        conn.close()
    if events < 0:  # another history after all: left alone (the copy stays beside it)
        return LogRepair(problems=found.problems, rewritten=False, kept=kept)
    return LogRepair(problems=found.problems, rewritten=True, events=events, kept=kept)


def restore_if_missing(db_path: Path, log: EventLog) -> list[str]:
    """At open: rebuild a missing (or empty, 0-byte) database from its log when the log holds
    events, instead of starting a new journal from Markdown without history. Returns warnings
    (empty when nothing was done)."""
    if database_present(db_path) or not log.exists():
        return []
    with log.lock():
        if database_present(db_path):  # another process rebuilt it meanwhile
            return []
        if not log.read().events:
            return []
        moved = move_aside(db_path, "orphaned")  # a 0-byte file, a stale -wal of the old file
        rebuilt = rebuild_from_log(db_path, log)
    warnings = [
        f"{db_path} was missing; rebuilt from {log.path.name} ({rebuilt.events} events, "
        f"{rebuilt.entries} entries with their history and ids)"
        + (f"; moved {', '.join(p.name for p in moved)} aside" if moved else "")
    ]
    return warnings + list(rebuilt.problems)


def read_events(conn: apsw.Connection) -> list[Event]:
    """Every event of a readable database, in commit order (for the read-only view)."""
    from pi_hermes_memory.journal.codec import decode

    return [
        decode(tag, data) for tag, data in conn.execute("SELECT tag, data FROM events ORDER BY seq")
    ]


def _fold(
    records: Sequence[EventRecord], problems: list[str]
) -> tuple[list[EventRecord], list[MemoryDocument]]:
    """The records to keep (a stream stops at an event that cannot be decoded) and the folded
    document of every memory stream."""
    from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
    from pi_hermes_memory.journal.codec import decode

    streams = {stream_for(t): t for t in Target}
    kept: list[EventRecord] = []
    events: dict[str, list[Event]] = defaultdict(list)
    broken: set[str] = set()
    for record in records:
        if record.stream in broken:
            continue
        try:
            event = decode(record.tag, record.data)
        except CorruptEvent as exc:
            broken.add(record.stream)
            problems.append(f"{record.stream} stops at version {record.version - 1}: {exc}")
            continue
        kept.append(record)
        events[record.stream].append(event)
    documents = [
        fold(MemoryDocument.empty(target), events.get(stream, []))
        for stream, target in streams.items()
    ]
    return kept, documents


def _discard(temp: Path) -> None:
    for side in ("", *SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            temp.with_name(temp.name + side).unlink()
