"""The one factory for our APSW connections (ADR 0004).

Each connection gets the individual bestpractice settings (never the process-global
`bestpractice.apply`), WAL with synchronous=FULL (a saved memory must survive power loss), a
busy timeout of 10 s and IMMEDIATE outer transactions, so a writer takes the write lock at BEGIN
where waiting is safe.

The database holds every memory, its history and indexed session transcripts, so its files are
private (0600) like the Markdown files: the file is created 0600 before SQLite opens it (SQLite
gives `-wal` and `-shm` the mode of the database file), and looser existing files are tightened
(ADR 0023).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import urllib.parse
from pathlib import Path

import apsw
from pi_hermes_memory.errors import StoreVersionError

BUSY_TIMEOUT_MS = 10_000


# The `apsw.bestpractice.connection_*` settings we use (ADR 0004), written out: importing
# `apsw.bestpractice` imports `apsw.ext` (decimal, fractions, html, …), ~15 ms of every process
# that opens a store (issue 29, ADR 0080). Each body is that of apsw's function;
# tests/integration/test_sqlite_practice.py checks that a connection configured here reads back
# exactly as one configured by `apsw.bestpractice`.
def busy_timeout(conn: apsw.Connection, duration_ms: int) -> None:
    """`bestpractice.connection_busy_timeout`: wait for a lock instead of failing at once."""
    conn.set_busy_timeout(duration_ms)


def enable_foreign_keys(conn: apsw.Connection) -> None:
    """`bestpractice.connection_enable_foreign_keys`."""
    conn.pragma("foreign_keys", "ON")


def no_double_quoted_strings(conn: apsw.Connection) -> None:
    """`bestpractice.connection_dqs`: double quotes are for identifiers only."""
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def recursive_triggers(conn: apsw.Connection) -> None:
    """`bestpractice.connection_recursive_triggers`."""
    conn.pragma("recursive_triggers", "ON")


MIN_SQLITE = (3, 51, 3)


def check_sqlite_version() -> None:
    version = tuple(int(p) for p in apsw.sqlite_lib_version().split(".")[:3])
    if version < MIN_SQLITE:
        raise StoreVersionError(
            f"SQLite {apsw.sqlite_lib_version()} is older than 3.51.3 (WAL-reset corruption "
            "bug); upgrade apsw to >= 3.51.3.0"
        )


PRIVATE_MODE = 0o600
#: the files SQLite keeps beside the database
SIDE_FILES = ("-wal", "-shm", "-journal")


def database_present(db_path: Path) -> bool:
    """Whether the database holds anything: a non-empty file, or a 0-byte one whose WAL
    still holds its pages."""
    try:
        if db_path.stat().st_size > 0:
            return True
    except FileNotFoundError:
        return False
    wal = db_path.with_name(db_path.name + "-wal")
    return wal.exists() and wal.stat().st_size > 0


def make_private(path: Path) -> None:
    """Create `path` empty with mode 0600 unless it exists; remove group/other bits from an
    existing one and its side files. Raises OSError (e.g. read-only folder: EROFS/EACCES)
    only when the file must be created; tightening is best effort."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_MODE)
    except OSError:
        if not path.exists():
            raise
    else:
        os.close(fd)
    for candidate in (path, *(path.with_name(path.name + s) for s in SIDE_FILES)):
        tighten(candidate)
    _writable_like(path)


def _writable_like(path: Path) -> None:
    """Give `-wal`/`-shm` back the owner's write bit when the database has it: SQLite created
    them with the database's mode, so after a `chmod 0444` and back they would otherwise keep
    the store unwritable (best effort)."""
    try:
        if not path.stat().st_mode & stat.S_IWUSR:
            return
    except OSError:
        return
    for side in SIDE_FILES:
        candidate = path.with_name(path.name + side)
        with contextlib.suppress(OSError):
            info = candidate.lstat()
            if stat.S_ISREG(info.st_mode) and not info.st_mode & stat.S_IWUSR:
                os.chmod(candidate, PRIVATE_MODE)


def tighten(path: Path) -> None:
    """Drop the group and other permission bits of an existing regular file (best effort:
    a read-only file system or a file owned by someone else is left as it is)."""
    with contextlib.suppress(OSError):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)


def connect(path: Path, *, read_only: bool = False) -> apsw.Connection:
    """A configured connection. `read_only`: open with SQLITE_OPEN_READONLY (reads a WAL
    database even where its `-shm` cannot be created, e.g. in a read-only folder)."""
    check_sqlite_version()
    if read_only:
        return _connect_read_only(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    make_private(path)
    conn = apsw.Connection(str(path))
    busy_timeout(conn, BUSY_TIMEOUT_MS)
    enable_foreign_keys(conn)
    no_double_quoted_strings(conn)
    recursive_triggers(conn)
    conn.execute("PRAGMA synchronous=FULL")
    conn.transaction_mode = "IMMEDIATE"
    return conn


def enable_wal(conn: apsw.Connection) -> None:
    """Switch to WAL (persistent in the file); only after the file was checked to be ours.

    Several processes opening a new store at once: the switch needs an exclusive lock, and
    SQLite answers BUSY at once, without its busy handler, when waiting could deadlock (a
    reader upgrading while another holds a lock). Retried here, a few ms apart, for as long as
    the busy timeout allows; then the BusyError stands (`StoreBusy`)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.002
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").get
            break
        except apsw.BusyError:
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    if str(mode).lower() != "wal":
        raise apsw.CantOpenError(f"could not switch the database to WAL (got {mode!r})")


def _connect_read_only(path: Path) -> apsw.Connection:
    """SQLITE_OPEN_READONLY; where SQLite cannot create the `-shm` (a read-only folder) and no
    WAL holds pages beyond the file, the file is opened as immutable (a snapshot)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.execute("PRAGMA schema_version").fetchall()
    except apsw.CantOpenError:
        conn.close()
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?immutable=1"
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    busy_timeout(conn, BUSY_TIMEOUT_MS)
    no_double_quoted_strings(conn)
    return conn
