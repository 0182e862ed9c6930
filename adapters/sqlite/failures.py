"""Driver and OS errors of the database, as the library's typed errors (ADR 0023).

Driver exceptions never cross a port (style rule 31): a damaged file becomes `DatabaseDamaged`,
a full disk `StorageFull`, a read-only file, folder or file system `StoreReadOnly`, any other
I/O failure `StorageFailed`, a wait for another process that ran out `StoreBusy` (ADR 0024).
Each message is one line that says what is wrong and what to do. Any other driver error is a
plain `StorageFailed` naming the driver's error class; an adapter that expects one (the
journal's UNIQUE backstop) catches it before mapping.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import apsw
from pi_hermes_memory.errors import (
    DatabaseDamaged,
    StorageFailed,
    StorageFull,
    StoreBusy,
    StoreReadOnly,
)

__all__ = ["READ_ONLY_ERRNOS", "damaged_message", "map_error", "map_os_error"]

READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_LOW_SPACE = 64 * 1024


def damaged_message(path: Path, detail: str) -> str:
    return (
        f"{path} is damaged ({detail}); the store is read-only until you run "
        "`pi-hermes-memory recover` (it moves the file aside and rebuilds it from the event log "
        "with history and ids)"
    )


def map_error(exc: apsw.Error, path: Path, os_errno: int = 0) -> StorageFailed:
    """The typed error for `exc` raised on the database at `path` (`os_errno`: the
    connection's `system_errno`, 0 when unknown)."""
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        return DatabaseDamaged(damaged_message(path, str(exc)), path=path)
    if isinstance(exc, apsw.FullError) or os_errno in _FULL_ERRNOS or _no_space(exc, path):
        return StorageFull(
            f"the disk holding {path} is full ({exc}); nothing was written. Free some space "
            "and try again.",
            path=path,
        )
    if isinstance(exc, apsw.ReadOnlyError | apsw.CantOpenError | apsw.PermissionsError) or (
        isinstance(exc, apsw.IOError) and os_errno in READ_ONLY_ERRNOS
    ):
        return StoreReadOnly(
            f"{path} cannot be written ({exc}); nothing was written. Check that the file and "
            "its folder are writable (permissions, read-only mount), then try again.",
            path=path,
        )
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return StoreBusy(
            f"{path} is busy: another process held it for longer than the wait allowed "
            f"({exc}); nothing was written. Try again.",
            path=path,
        )
    if isinstance(exc, apsw.IOError):
        return StorageFailed(
            f"could not write {path} ({exc}); nothing was written. Check the disk and try again.",
            path=path,
        )
    # anything else the driver raises (a constraint, a schema or SQL error, an interrupt) is
    # still a storage failure to callers: no driver exception crosses a port (style rule 31)
    return StorageFailed(f"the database {path} failed ({type(exc).__name__}: {exc})", path=path)


def map_os_error(exc: OSError, path: Path) -> StorageFailed:
    """The typed error of an OSError met while creating or opening the database files."""
    if exc.errno in _FULL_ERRNOS:
        return StorageFull(
            f"the disk holding {path} is full ({exc.strerror}); nothing was written. Free some "
            "space and try again.",
            path=path,
        )
    if exc.errno in READ_ONLY_ERRNOS:
        return StoreReadOnly(
            f"{path} cannot be created or written ({exc.strerror}); check that its folder is "
            "writable.",
            path=path,
        )
    return StorageFailed(f"could not open {path} ({exc.strerror or exc})", path=path)


def _no_space(exc: apsw.Error, path: Path) -> bool:
    """An I/O error whose errno SQLite did not keep (e.g. creating the `-shm`) on a disk with
    no space left counts as a full disk."""
    if not isinstance(exc, apsw.IOError):
        return False
    try:
        info = os.statvfs(path.parent)
    except (OSError, AttributeError):
        return False
    return info.f_bavail * info.f_frsize < _LOW_SPACE
