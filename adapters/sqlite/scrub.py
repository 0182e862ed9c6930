"""Erasing purged text from the SQLite file, its WAL and the event log (ADR 0026).

A purge transaction runs with `PRAGMA secure_delete=ON`: SQLite zeroes the cells it deletes or
rewrites and the pages it frees, where it would otherwise leave the old bytes in free space.
Afterwards `scrub`:

1. merges the memory FTS index into one segment (`optimize`, again with secure_delete): FTS5
   answers an external-content delete with a tombstone in a new segment and keeps the old terms
   in the old segments until they are merged;
2. rewrites every page (`VACUUM`): secure_delete cannot reach bytes that page splits and
   defragmentation left, before the purge, in the unallocated middle of a page (measured: the
   root page of `events` kept a copy of a purged text after a split). O(file size): the cost
   of a purge grows with the session index in the same file;
3. rewrites the event log from the database (the redacted events), atomically;
4. checkpoints the WAL with TRUNCATE: the WAL holds the page images written before the purge
   until it is reset; a reader that keeps it from being truncated is reported (the next
   checkpoint does it);
5. names the copies it must not touch: a damaged database moved aside by `recover`, a database
   moved aside before a rebuild, an event log of another history. They may hold the text; the
   person decides (they may hold other data nothing else has).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
from pi_hermes_memory.adapters.sqlite.eventlog import SCRUB_PENDING, EventLog

if TYPE_CHECKING:
    from pi_hermes_memory.ports.memory import ScrubReport

__all__ = ["leftover_copies", "scrub", "secure_delete"]

_ASIDE = (".damaged-", ".orphaned-", ".stale-", ".rebuilding")


@contextlib.contextmanager
def secure_delete(conn: apsw.Connection) -> Iterator[None]:
    """`secure_delete` on for the block (a per-connection setting, restored afterwards)."""
    before = conn.execute("PRAGMA secure_delete").get
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(before)}")


def scrub(conn: apsw.Connection, db_path: Path, log: EventLog | None) -> ScrubReport:
    from pi_hermes_memory.ports.memory import ScrubReport  # a scrub's report (ADR 0105)

    warnings: list[str] = []
    with secure_delete(conn), conn:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
    # secure_delete zeroes what is freed from now on; bytes that earlier page splits and
    # defragmentation left in the unallocated part of pages are only gone once every page is
    # rewritten from the live rows
    conn.execute("VACUUM")
    if log is not None and log.rewrite(conn) < 0:
        warnings.append(
            f"{log.path} belongs to another history and was not rewritten; it may still hold "
            "the purged text"
        )
    with conn:  # the log may be appended to again
        conn.execute("DELETE FROM store_meta WHERE key = ?", (SCRUB_PENDING,))
    row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if row is not None and row[0]:
        warnings.append(
            f"another connection is reading {db_path.name}; its write-ahead log keeps the "
            "purged text until the next checkpoint (closing the other processes does it)"
        )
    names = [db_path.name] + ([log.path.name] if log is not None else [])
    return ScrubReport(
        leftovers=tuple(leftover_copies(db_path.parent, names)), warnings=tuple(warnings)
    )


def leftover_copies(directory: Path, names: list[str]) -> list[str]:
    """Files moved aside beside `names` (never deleted by the store) that may hold old text."""
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    return [
        str(p)
        for p in entries
        if any(p.name.startswith(n) and any(m in p.name[len(n) :] for m in _ASIDE) for n in names)
    ]
