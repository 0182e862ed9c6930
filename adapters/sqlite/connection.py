"""The one factory for our APSW connections (ADR 0004).

Each connection gets the individual bestpractice settings (never the process-global
`bestpractice.apply`), WAL with synchronous=FULL (a saved memory must survive power loss), a
busy timeout of 10 s and IMMEDIATE outer transactions, so a writer takes the write lock at BEGIN
where waiting is safe.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import apsw.bestpractice as bp

BUSY_TIMEOUT_MS = 10_000
MIN_SQLITE = (3, 51, 3)


class StorageVersionError(RuntimeError):
    """The SQLite library is older than the version that fixed the WAL-reset race."""


def check_sqlite_version() -> None:
    version = tuple(int(p) for p in apsw.sqlite_lib_version().split(".")[:3])
    if version < MIN_SQLITE:
        raise StorageVersionError(
            f"SQLite {apsw.sqlite_lib_version()} is older than 3.51.3 (WAL-reset corruption "
            "bug); upgrade apsw to >= 3.51.3.0"
        )


def connect(path: Path) -> apsw.Connection:
    check_sqlite_version()
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    bp.connection_busy_timeout(conn, BUSY_TIMEOUT_MS)
    bp.connection_enable_foreign_keys(conn)
    bp.connection_dqs(conn)
    bp.connection_recursive_triggers(conn)
    conn.execute("PRAGMA synchronous=FULL")
    conn.transaction_mode = "IMMEDIATE"
    return conn


def enable_wal(conn: apsw.Connection) -> None:
    """Switch to WAL (persistent in the file); only after the file was checked to be ours."""
    mode = conn.execute("PRAGMA journal_mode=WAL").get
    if str(mode).lower() != "wal":
        raise apsw.CantOpenError(f"could not switch the database to WAL (got {mode!r})")
