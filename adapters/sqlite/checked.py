"""The damage check at open, skipped for a file nothing but this library changed (ADR 0086).

Every open checks the store's own tables (`recovery.store_damage`: bytes after the last page,
then `quick_check`), because something other than SQLite may have written the file since it was
last used (issue 26 §6). That check reads every page of those tables: ~95 ms of CPU at 100,000
entries, on every new process. A file that is byte for byte what a sound check, and then only
this library's own commits, left behind needs no second check.

The proof is the files' stamps: size, mtime, ctime (set by the kernel on every change; a
program cannot set it back), inode and a digest of the first 4 KiB and the last 64 KiB of the
database and of its WAL (an empty or missing WAL holds nothing). The digest covers the case
the times cannot: a same-size write within the same clock tick as our last one. A stamp is
recorded in `.<database>.checked` beside the database:

- by `SqliteStorage.close()` of a session that changed the file, when its own commits are the
  only changes since the stamp it opened on and that stamp was sound (checked, or recorded):
  a chain, each commit's stamp before its COMMIT, taken under the write lock, must equal the
  one after the previous commit; any other writer breaks it. A session that changes nothing
  writes nothing (a dry run leaves the folder as it found it).

An open whose files have the recorded stamp skips the check; any other stamp (another writer,
a crash before close, damage, a copy, a restore) means the full check. The record is a hint
that can only make an open cheaper: lost, stale or unreadable, the check simply runs. It is
written atomically without fsync (a power loss costs one check).

Within one process the chain stamps the files before and after each of its commits: four
stamps per add. The database file changes only at a checkpoint, so its digest is reused
(`StampCache`, ADR 0106) while its stat (device, inode, size, mtime, ctime) is the one it was
hashed under and that stat was already older than a clock tick when the hashing began: the
racy-git rule. A write after the hashing began gets a ctime no earlier than that start (less
one timestamp granule and one kernel clock tick), so it cannot keep a ctime older than that;
a file changed within the tick before the hashing could be changed again under the same stat,
and is hashed every time until it is older. The WAL, written by every commit, is hashed each
time in practice.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from pathlib import Path

__all__ = [
    "FileStamp",
    "Stamp",
    "StampCache",
    "checked_path",
    "read_checked",
    "record_checked",
    "stamp_of",
]

#: (size, mtime_ns, ctime_ns, inode, digest of the sampled bytes) of the database, then of its
#: WAL (None: no WAL content)
FileStamp = tuple[int, int, int, int, str]
Stamp = tuple[FileStamp, FileStamp | None]

#: the bytes sampled at each end of a file: a write that lands within the same timestamp tick
#: as our last one and keeps the size (a clock tick is 1–10 ms) still changes them when it
#: smashes the file's tail or its header, the damage issue 26 §6 describes
_SAMPLE = 64 * 1024


#: how long after its last change (mtime or ctime) a file's stat proves its bytes: the kernel
#: stamps a change with a clock that lags the real time by up to one tick (1-10 ms), truncated
#: to the file system's granularity, a divisor of one second (Linux's `s_time_gran`) or FAT's
#: two seconds. The granularity is bounded by what the two timestamps are multiples of: neither
#: a whole microsecond, it is at most 7.8 ms (the largest divisor of 10**9 that 10**3 does
#: not divide); neither a whole millisecond, at most 62.5 ms; else anything up to two seconds
#: (a nanosecond clock gives a whole microsecond once in 10**3 timestamps: then the tick is
#: only longer than it needs to be).
_TICKS_NS = ((1_000, 25_000_000), (1_000_000, 100_000_000))
_COARSE_TICK_NS = 3_000_000_000

_Key = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns


def _key(st: os.stat_result) -> _Key:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def settled(mtime_ns: int, ctime_ns: int, began_ns: int) -> bool:
    """Whether a file last changed at `mtime_ns`/`ctime_ns` and hashed from `began_ns` on (the
    wall clock before it was opened) would show any later change in its stat: its last change
    is older than a tick of the clock that stamps changes."""
    return max(mtime_ns, ctime_ns) < began_ns - tick_ns(mtime_ns, ctime_ns)


def tick_ns(mtime_ns: int, ctime_ns: int) -> int:
    """The bound on the clock tick plus the granularity of the timestamps `mtime_ns` and
    `ctime_ns` (see `_TICKS_NS`)."""
    for unit, tick in _TICKS_NS:
        if mtime_ns % unit and ctime_ns % unit:  # the coarser of the two decides
            return tick
    return _COARSE_TICK_NS


class StampCache:
    """The digests of files whose stat, unchanged since they were hashed, proves their bytes
    unchanged (the module's racy-git rule): one per storage, so a steady session hashes its
    database only after a checkpoint changed it. A file in doubt is hashed."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[_Key, str]] = {}
        #: per file, the last sampled bytes hashed and their digest (ADR 0119): a stamp that
        #: reads the very same bytes again has their digest without hashing them (equal bytes,
        #: equal digest); the bytes are still read every time
        self._sampled: dict[str, tuple[bytes, bytes, str]] = {}

    def sampled(self, path: str, head: bytes, tail: bytes) -> str | None:
        known = self._sampled.get(path)
        if known is not None and known[0] == head and known[1] == tail:
            return known[2]
        return None

    def hashed(self, path: str, head: bytes, tail: bytes, digest: str) -> None:
        self._sampled[path] = (head, tail, digest)

    def holds(self, path: str) -> bool:
        return path in self._known

    def digest(self, path: str, st: os.stat_result) -> str | None:
        known = self._known.get(path)
        return known[1] if known is not None and known[0] == _key(st) else None

    def learn(self, path: str, st: os.stat_result, began_ns: int, digest: str) -> None:
        if settled(st.st_mtime_ns, st.st_ctime_ns, began_ns):
            self._known[path] = (_key(st), digest)
        else:
            self._known.pop(path, None)


def _file(name: str, cache: StampCache | None = None) -> FileStamp | None:
    try:
        if cache is not None and cache.holds(name):
            st = os.stat(name)
            known = cache.digest(name, st)
            if known is not None:
                return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, known)
        began = time.time_ns()
        with open(name, "rb") as f:
            st = os.fstat(f.fileno())
            head, tail = f.read(4096), b""
            if st.st_size > 4096:
                f.seek(max(4096, st.st_size - _SAMPLE))
                tail = f.read(_SAMPLE)
    except OSError:
        return None
    hexdigest = None if cache is None else cache.sampled(name, head, tail)
    if hexdigest is None:
        digest = hashlib.blake2b(head, digest_size=16)
        if tail:
            digest.update(tail)
        hexdigest = digest.hexdigest()
        if cache is not None:
            cache.hashed(name, head, tail, hexdigest)
    if cache is not None:
        cache.learn(name, st, began, hexdigest)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, hexdigest)


@functools.lru_cache(maxsize=64)
def _names(db_path: Path) -> tuple[str, str]:
    """The database's and its WAL's names, built once per path (four stamps per add)."""
    return str(db_path), str(db_path.with_name(db_path.name + "-wal"))


def stamp_of(db_path: Path, cache: StampCache | None = None) -> Stamp | None:
    """The stamp of the database and its WAL; None when the database cannot be read.
    `cache`: reuse the digest of a file whose stat proves it unchanged (ADR 0106)."""
    db_name, wal_name = _names(db_path)
    main = _file(db_name, cache)
    if main is None:
        return None
    wal = _file(wal_name, cache)
    # an empty WAL (created by the first connection, reset by a checkpoint) holds no data
    return main, (wal if wal is not None and wal[0] > 0 else None)


def checked_path(db_path: Path) -> Path:
    return db_path.with_name(f".{db_path.name}.checked")


def read_checked(db_path: Path) -> Stamp | None:
    """The recorded stamp, or None (absent, unreadable, malformed: the check runs)."""
    try:
        data = json.loads(checked_path(db_path).read_text(encoding="utf-8"))
        main, wal = _file_stamp(data["db"]), data["wal"]
        return main, (None if wal is None else _file_stamp(wal))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _file_stamp(value: object) -> FileStamp:
    if not isinstance(value, list) or len(value) != 5 or not isinstance(value[4], str):
        raise ValueError("not a file stamp")
    size, mtime, ctime, inode = (int(v) for v in value[:4])
    return size, mtime, ctime, inode, value[4]


def record_checked(db_path: Path, stamp: Stamp) -> None:
    """Record `stamp` (atomic rename, no fsync); a failure only leaves the next open checking."""
    if read_checked(db_path) == stamp:
        return  # already recorded: a session that changed nothing writes nothing
    target = checked_path(db_path)
    temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    body = json.dumps({"db": list(stamp[0]), "wal": None if stamp[1] is None else list(stamp[1])})
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, body.encode("ascii"))
        finally:
            os.close(fd)
        os.replace(temp, target)
    except OSError:
        _unlink_quietly(temp)


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
