"""The event log: a second durable copy of the journal beside the database (ADR 0023).

`<memoryDir>/sessions.journal.jsonl` (mode 0600) holds one JSON line per journal event, exactly
as the `events` table stores it (seq, stream, version, tag, at, data), each line ending in a
checksum of itself, plus one `meta` line with the store's identity (`store_meta`). It is
appended and fsynced after every COMMIT that appended events, so a damaged or deleted
`sessions.db` can be rebuilt with its supersede history and entry ids.

Appending is idempotent and ordered: under the log's own lock, the writer reads the last valid
line, then appends every event of the database with a larger seq. Whoever appends first writes
what every process committed so far, so two processes never interleave or reorder lines, and a
log that lags (a crash between COMMIT and append, a store older than the log) catches up on the
next write or open. A torn last line (a writer killed mid-append) is cut off before appending;
a damaged line elsewhere is skipped with a warning when the log is read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import apsw
import attrs
from pi_hermes_memory.adapters.markdown.atomic import FileLock, atomic_write, stale_temp_files
from pi_hermes_memory.adapters.sqlite.connection import PRIVATE_MODE, tighten

__all__ = [
    "SCRUB_PENDING",
    "EventLog",
    "EventRecord",
    "LogContents",
    "default_log_path",
    "same_event",
]

#: `store_meta` key set by a purge's redaction until the log was rewritten (ADR 0026): while it
#: is set, the log holds events the database redacted, so nobody appends to it (the scrub
#: rewrites it whole); never copied into the log's meta line
SCRUB_PENDING = "scrub_pending"

_TAIL_BLOCK = 64 * 1024
_SUM_CHARS = 16
_COLUMNS = ("seq", "stream", "version", "tag", "at", "data")
#: how `_line` closes a line: the checksum field after the body it sums
_SUM_OPEN, _SUM_CLOSE = b',"sum":"', b'"}'


def default_log_path(db_path: Path) -> Path:
    """`sessions.db` -> `sessions.journal.jsonl`: beside the database, but not matched by a
    `sessions.db*` glob, so deleting the database with its side files keeps the log."""
    return db_path.with_name(f"{db_path.stem}.journal.jsonl")


@attrs.frozen(kw_only=True)
class EventRecord:
    """One row of the `events` table, as stored (the payload stays the codec's JSON text)."""

    seq: int
    stream: str
    version: int
    tag: str
    at: str
    data: str

    def row(self) -> tuple[int, str, int, str, str, str]:
        return (self.seq, self.stream, self.version, self.tag, self.at, self.data)


@attrs.frozen(kw_only=True)
class LogContents:
    """What a full read of the log found: events by seq (each stream cut at its first gap),
    the store's identity, and one message per line or event that was left out."""

    events: tuple[EventRecord, ...]
    meta: dict[str, str]
    problems: tuple[str, ...]


def _checksum(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:_SUM_CHARS]


def _line(payload: dict[str, object]) -> bytes:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return (body[:-1] + f',"sum":"{_checksum(body)}"}}\n').encode("utf-8")


def _parse(raw: bytes) -> dict[str, object] | None:
    """The payload of one line without its newline, or None when it is damaged."""
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(payload, dict):
        return None
    declared = payload.pop("sum", None)
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return payload if declared == _checksum(body) else None


def _record(payload: dict[str, object]) -> EventRecord | None:
    values = [payload.get(c) for c in _COLUMNS]
    if not (isinstance(values[0], int) and isinstance(values[2], int)):
        return None
    if not all(isinstance(v, str) for v in (values[1], *values[3:])):
        return None
    seq, stream, version, tag, at, data = values
    return EventRecord(
        seq=int(str(seq)),
        stream=str(stream),
        version=int(str(version)),
        tag=str(tag),
        at=str(at),
        data=str(data),
    )


def _fsync(fd: int) -> None:
    if sys.platform == "darwin":  # fsync alone stops at the drive's cache on macOS
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
            return
    os.fsync(fd)


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable (no-op on Windows)."""
    if sys.platform == "win32":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class EventLog:
    """The append-only JSONL copy of the journal at `path`."""

    def __init__(self, path: Path, *, lock_timeout: float = 30.0) -> None:
        self.path = path
        self._lock_path = path.with_name(f".{path.name}.lock")
        self._lock_timeout = lock_timeout

    def exists(self) -> bool:
        return self.path.exists()

    def lock(self) -> FileLock:
        """The log's own lock (a sidecar file): held while appending or rebuilding from it."""
        return FileLock(self._lock_path, timeout=self._lock_timeout)

    # -- writing ------------------------------------------------------------------------------

    def catch_up(self, conn: apsw.Connection) -> tuple[int, list[str]]:
        """Append the events of `conn`'s database that the log lacks; fsync. Returns how many
        lines were appended and warnings (a log of another history was moved aside).

        Call it after COMMIT, outside any transaction of `conn`. Raises OSError when the log
        cannot be written (the events stay in the database; the next call appends them)."""
        warnings: list[str] = []
        with self.lock():
            tighten(self._lock_path)
            last = self._cut_torn_tail()
            if last is not None and not same_event(conn, last):
                aside = self.path.with_name(f"{self.path.name}.stale-{_stamp()}")
                os.replace(self.path, aside)
                warnings.append(
                    f"{self.path} did not match {_main_file(conn)} (its last event is not the "
                    f"database's); it was moved to {aside.name} and the log was written anew "
                    "from the database."
                )
                last = None
            after = 0 if last is None else last.seq
            rows = _events_after(conn, after)
            if not rows and self.path.exists():
                return 0, warnings
            meta = _meta(conn) if last is None and not self._has_lines() else None
            appended = self._append(rows, meta)
        return appended, warnings

    def rewrite(self, conn: apsw.Connection) -> int:
        """Replace the log with the database's journal as it is now (meta line, then every
        event), atomically: after a purge redacted events in place (ADR 0026). The log never
        holds an event the database lacks (a log of another history is moved aside by
        `catch_up`), so nothing is lost; damaged lines are dropped with the old file. Returns
        how many events it holds. Call it outside any transaction of `conn`."""
        with self.lock():
            tighten(self._lock_path)
            if self.path.exists():
                last = self._cut_torn_tail()
                if last is not None and not same_event(conn, last, data=False):
                    return -1  # another history: left alone (catch_up moves it aside)
            rows = _events_after(conn, 0)
            data = b"".join(
                [_line({"meta": _meta(conn)})]
                + [_line({c: v for c, v in zip(_COLUMNS, r.row(), strict=True)}) for r in rows]
            )
            for leftover in stale_temp_files(self.path.parent, older_than_s=0):
                if leftover.name.startswith(f".{self.path.name}."):
                    leftover.unlink(missing_ok=True)  # a rewrite killed midway: old text
            atomic_write(self.path, data)
            tighten(self.path)
        return len(rows)

    def _has_lines(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except FileNotFoundError:
            return False

    def _append(self, rows: Sequence[EventRecord], meta: dict[str, str] | None) -> int:
        data = b"".join(
            ([_line({"meta": meta})] if meta is not None else [])
            + [_line({c: v for c, v in zip(_COLUMNS, r.row(), strict=True)}) for r in rows]
        )
        created = not self.path.exists()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, PRIVATE_MODE)
        try:
            tighten(self.path)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            _fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_directory(self.path.parent)
        return len(rows)

    def _cut_torn_tail(self) -> EventRecord | None:
        """Cut off an incomplete last line (its writer died; the database still has the
        event), then return the last valid event line, or None for an empty log."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return None
        if size == 0:
            return None
        keep = _end_of_last_line(self.path, size)
        if keep != size:
            os.truncate(self.path, keep)
        return self._last_record(keep)

    def _last_record(self, size: int) -> EventRecord | None:
        block = _TAIL_BLOCK
        with open(self.path, "rb") as f:
            while True:
                start = max(0, size - block)
                f.seek(start)
                record = _last_valid(f.read(size - start), whole=start == 0)
                if record is not None or start == 0:
                    return record
                block *= 4

    # -- reading ------------------------------------------------------------------------------

    def read(self) -> LogContents:
        """Every valid event (by seq; a stream stops at its first missing version), the meta
        line, and a message for each damaged line or event left out. Never raises for damaged
        content; OSError when the file cannot be read at all."""
        problems: list[str] = []
        by_seq: dict[int, EventRecord] = {}
        meta: dict[str, str] = {}
        for number, raw in self._lines():
            payload = _parse(raw)
            if payload is None:
                problems.append(f"{self.path.name} line {number} is damaged; skipped")
                continue
            if isinstance(found := payload.get("meta"), dict):
                meta.update({str(k): str(v) for k, v in found.items()})
                continue
            record = _record(payload)
            if record is None:
                problems.append(f"{self.path.name} line {number} is not an event; skipped")
                continue
            by_seq.setdefault(record.seq, record)
        return LogContents(
            events=tuple(_contiguous(sorted(by_seq.values(), key=lambda r: r.seq), problems)),
            meta=meta,
            problems=tuple(problems),
        )

    def whole(self) -> bool:
        """Whether every complete line's checksum holds, proved from the bytes alone (no JSON):
        the doctor's quick check on a healthy log (ADR 0118). A line `_line` wrote ends in
        `,"sum":"<sum>"}` after the body it sums, so the body is the line with that tail cut
        and `}` put back. True: `read` finds no damaged line. False is no verdict (a line not
        in our exact spelling may still be whole): `read` says what is wrong."""
        tail = len(_SUM_OPEN) + _SUM_CHARS + len(_SUM_CLOSE)
        for _, raw in self._lines():
            if not raw.endswith(_SUM_CLOSE) or raw[-tail : -tail + len(_SUM_OPEN)] != _SUM_OPEN:
                return False
            body = raw[:-tail] + b"}"
            declared = raw[-tail + len(_SUM_OPEN) : -len(_SUM_CLOSE)]
            if hashlib.sha256(body).hexdigest()[:_SUM_CHARS].encode() != declared:
                return False
        return True

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        with open(self.path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                if raw.endswith(b"\n"):
                    yield number, raw[:-1]
                elif raw:  # torn last line: its event is in the database, if anywhere
                    continue


def _last_valid(data: bytes, *, whole: bool) -> EventRecord | None:
    """The last valid event line of `data` (lines split at newlines), last first; `whole`:
    `data` starts at the file's start, else its first piece may be the end of a longer line
    and is skipped. The lines are cut from the end one at a time (ADR 0119): the last one is
    valid in practice, and splitting the whole 64 KiB block cost more than parsing it."""
    end = len(data)
    while True:
        cut = data.rfind(b"\n", 0, end)
        if cut < 0 and not whole:
            return None
        raw = data[cut + 1 : end]
        payload = _parse(raw) if raw else None
        record = None if payload is None else _record(payload)
        if record is not None:
            return record
        if cut < 0:
            return None
        end = cut


def _end_of_last_line(path: Path, size: int) -> int:
    """The offset just after the file's last newline (0 when it has none)."""
    with open(path, "rb") as f:
        end = size
        while end > 0:
            start = max(0, end - _TAIL_BLOCK)
            f.seek(start)
            found = f.read(end - start).rfind(b"\n")
            if found >= 0:
                return start + found + 1
            end = start
    return 0


def _contiguous(records: Sequence[EventRecord], problems: list[str]) -> Iterator[EventRecord]:
    """Each stream's events while their versions run 1, 2, 3, …; the rest of a stream after a
    gap cannot be folded and is left out (its current text comes back from Markdown)."""
    expected: dict[str, int] = {}
    broken: dict[str, int] = {}
    for record in records:
        if record.stream in broken:
            broken[record.stream] += 1
            continue
        if record.version != expected.get(record.stream, 0) + 1:
            broken[record.stream] = 1
            continue
        expected[record.stream] = record.version
        yield record
    for stream, count in sorted(broken.items()):
        problems.append(
            f"{count} event(s) of {stream} after version {expected.get(stream, 0)} left out: "
            "an earlier event of that stream is missing from the log"
        )


def same_event(conn: apsw.Connection, record: EventRecord, *, data: bool = True) -> bool:
    """Whether the database holds this event; `data=False`: the same event up to its payload
    (a purge may have redacted it since it was appended)."""
    row = conn.execute(
        "SELECT seq, stream, version, tag, at, data FROM events WHERE seq = ?", (record.seq,)
    ).fetchone()
    width = 6 if data else 5
    return row is not None and tuple(row)[:width] == record.row()[:width]


def _events_after(conn: apsw.Connection, seq: int) -> list[EventRecord]:
    return [
        EventRecord(seq=r[0], stream=r[1], version=r[2], tag=r[3], at=r[4], data=r[5])
        for r in conn.execute(
            "SELECT seq, stream, version, tag, at, data FROM events WHERE seq > ? ORDER BY seq",
            (seq,),
        )
    ]


def _meta(conn: apsw.Connection) -> dict[str, str]:
    try:
        rows = conn.execute("SELECT key, value FROM store_meta WHERE key != ?", (SCRUB_PENDING,))
        return {str(k): str(v) for k, v in rows}
    except apsw.SQLError:  # a schema without store_meta
        return {}


def _main_file(conn: apsw.Connection) -> str:
    return Path(conn.filename).name or "the database"


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 1_000_000:06d}"
