"""Indexing session history: whole trees incrementally, one live file cheaply, or turns recorded
through the API (ADR 0020).

`SessionIndexer.index_all` lists the session files (`SessionSource`) and compares each with
what the `SessionIndex` holds of it (`pi_hermes_memory.domain.sessions.classify`):

- unchanged (same device/inode, size and mtime): not read at all;
- changed (grew, or only touched): the fingerprints (sha256 of the first 4 KiB and of the 4 KiB
  before the indexed offset) are checked, then only the bytes after the offset are read;
- rewritten (another inode, shorter than what was read, or a fingerprint differs): what was
  indexed from it is dropped and the file is read again from the start;
- gone (no longer listed and no longer on disk): its rows are dropped.

Only complete lines (ending in `\\n`) are read; a trailing partial line is a file being written
and waits for the next run without counting as a problem. Files are read in windows of
`WINDOW_BYTES`; each window is one short write transaction holding the file's new progress and
its turns, so an interrupted run resumes where it stopped and memory writers wait at most one
window. A line longer than `MAX_LINE_BYTES` is skipped unparsed and counted.
"""

from __future__ import annotations

import functools
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
import structlog
from pi_hermes_memory.domain.model import is_safe_project_name
from pi_hermes_memory.domain.sessions import (
    FINGERPRINT_BYTES,
    INDEXED_ROLES,
    MAX_LINE_BYTES,
    FileChange,
    FileProgress,
    HeaderLine,
    LineSkip,
    MessageLine,
    SessionChunk,
    SessionFile,
    StaleProgress,
    classify,
    digest,
    fallback_session_id,
    fingerprints_match,
    parse_line,
    project_of,
)

if TYPE_CHECKING:
    from pi_hermes_memory.ports import Clock, SessionIndex, SessionSource

#: Bytes read (and committed) per window; larger than MAX_LINE_BYTES so that any line short
#: enough to be indexed fits in one window.
WINDOW_BYTES = 8 * 1024 * 1024
MAX_SESSION_ID_CHARS = 200


@attrs.frozen(kw_only=True)
class IndexProgress:
    """Reported after every window: files done of the files listed, turns indexed, bytes read."""

    files_done: int
    files_total: int
    messages: int
    bytes_read: int
    seconds: float

    @property
    def mb_per_second(self) -> float:
        return self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0


@attrs.frozen(kw_only=True)
class IndexReport:
    """What one indexing run did. `skipped`: complete lines not indexed, by reason (see
    `LineSkip`; `problems` counts the damaged ones). `failures`: files that could not be read
    (`path: reason`)."""

    files_seen: int = 0
    files_unchanged: int = 0
    files_new: int = 0
    files_appended: int = 0
    files_reindexed: int = 0
    files_removed: int = 0
    files_failed: int = 0
    files_without_header: int = 0
    lines: int = 0
    messages: int = 0
    skipped: Mapping[str, int] = attrs.field(factory=dict)
    bytes_read: int = 0
    seconds: float = 0.0
    failures: tuple[str, ...] = ()

    @property
    def problems(self) -> int:
        return sum(n for reason, n in self.skipped.items() if LineSkip(reason).is_problem)

    @property
    def mb_per_second(self) -> float:
        return self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "files": {
                "seen": self.files_seen,
                "unchanged": self.files_unchanged,
                "new": self.files_new,
                "appended": self.files_appended,
                "reindexed": self.files_reindexed,
                "removed": self.files_removed,
                "failed": self.files_failed,
                "without_header": self.files_without_header,
            },
            "lines": self.lines,
            "messages": self.messages,
            "skipped": dict(sorted(self.skipped.items())),
            "problems": self.problems,
            "bytes": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "mb_per_second": round(self.mb_per_second, 1),
            "failures": list(self.failures),
        }


@attrs.define
class _Tally:
    """The mutable counters of one run (frozen into an IndexReport at the end)."""

    files_seen: int = 0
    files_unchanged: int = 0
    files_new: int = 0
    files_appended: int = 0
    files_reindexed: int = 0
    files_removed: int = 0
    files_failed: int = 0
    files_without_header: int = 0
    lines: int = 0
    messages: int = 0
    skipped: Counter[str] = attrs.field(factory=Counter)
    bytes_read: int = 0
    failures: list[str] = attrs.field(factory=list)

    def report(self, seconds: float) -> IndexReport:
        fields = attrs.asdict(self, recurse=False)
        fields["skipped"] = dict(self.skipped)
        fields["failures"] = tuple(self.failures)
        return IndexReport(**fields, seconds=seconds)


@attrs.frozen(kw_only=True)
class RecordResult:
    session_id: str
    project: str | None
    turn: int


class SessionIndexer:
    """Feeds a `SessionIndex` from a `SessionSource` (and from `record`)."""

    def __init__(
        self,
        *,
        source: SessionSource,
        index: SessionIndex,
        clock: Clock,
        project_map: Mapping[str, str] | None = None,
        window_bytes: int = WINDOW_BYTES,
        logger: Any = None,
    ) -> None:
        if window_bytes <= FINGERPRINT_BYTES:
            raise ValueError(f"window_bytes must exceed {FINGERPRINT_BYTES}")
        self._source = source
        self._index = index
        self._clock = clock
        self._map = dict(project_map or {})
        self._window = window_bytes
        self._log = logger or structlog.get_logger("pi_hermes_memory")

    def project_of(self, cwd: str | None) -> str | None:
        return project_of(cwd, self._map)

    # -- whole tree ---------------------------------------------------------------------------

    def index_all(self, progress: Callable[[IndexProgress], None] | None = None) -> IndexReport:
        started = time.perf_counter()
        tally = _Tally()
        self._index.reproject(self.project_of)
        stored = self._index.files()
        listed = {f.path: f for f in self._source.files()}
        gone = []
        for path in sorted(set(stored) - set(listed)):  # e.g. indexed live from elsewhere
            found = self._source.stat(path)
            if found is None or found.path != path:
                gone.append(path)
            else:
                listed[path] = found
        if gone:
            tally.files_removed = self._index.forget(gone)
        files = [listed[p] for p in sorted(listed)]
        tally.files_seen = len(files)

        def tick(done: int) -> None:
            if progress is not None:
                progress(
                    IndexProgress(
                        files_done=done,
                        files_total=len(files),
                        messages=tally.messages,
                        bytes_read=tally.bytes_read,
                        seconds=time.perf_counter() - started,
                    )
                )

        for done, file in enumerate(files):
            self._index_file(file, stored.get(file.path), tally, functools.partial(tick, done))
            tick(done + 1)
        report = tally.report(time.perf_counter() - started)
        self._log.info(
            "sessions.indexed",
            files=report.files_seen,
            read=report.files_new + report.files_appended + report.files_reindexed,
            messages=report.messages,
            problems=report.problems,
            seconds=round(report.seconds, 3),
        )
        return report

    # -- one file (live) ----------------------------------------------------------------------

    def index_file(self, path: str | os.PathLike[str]) -> IndexReport:
        """Index the new complete lines of one session file (e.g. the running session's, on
        every turn): one stat and one lookup when nothing changed. A missing file's rows are
        dropped."""
        started = time.perf_counter()
        tally = _Tally()
        file = self._source.stat(os.fspath(path))
        if file is None:
            tally.files_removed = self._index.forget([os.path.abspath(os.fspath(path))])
            return tally.report(time.perf_counter() - started)
        tally.files_seen = 1
        self._index_file(file, self._index.progress_of(file.path), tally, lambda: None)
        return tally.report(time.perf_counter() - started)

    # -- recorded turns -----------------------------------------------------------------------

    def record(
        self,
        session_id: str,
        role: str,
        text: str,
        *,
        at: datetime | None = None,
        cwd: str | None = None,
        project: str | None = None,
        tools: tuple[str, ...] = (),
    ) -> RecordResult:
        """Store one turn of a session that has no Pi JSONL file. Raises ValueError for an
        invalid argument."""
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError("session_id must be a non-empty string")
        if len(session_id) > MAX_SESSION_ID_CHARS:
            raise ValueError(f"session_id must be at most {MAX_SESSION_ID_CHARS} characters")
        if role not in INDEXED_ROLES:
            raise ValueError(
                f"role must be one of {', '.join(sorted(INDEXED_ROLES))}; got {role!r}"
            )
        if not isinstance(text, str) or not (text.strip() or tools):
            raise ValueError("text must be a non-empty string")
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
            raise ValueError("at must be a timezone-aware datetime")
        if project is not None and not is_safe_project_name(project):
            raise ValueError(f"project {project!r} is not a valid project name")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("cwd must be a string")
        name = project if project is not None else self.project_of(cwd)
        message = MessageLine.create(
            role=role, text=text, tools=tuple(tools), at=at or self._clock.now()
        )
        turn = self._index.record(
            session_id=session_id.strip(), cwd=cwd or None, project=name, message=message
        )
        return RecordResult(session_id=session_id.strip(), project=name, turn=turn)

    # -- reading ------------------------------------------------------------------------------

    def _index_file(
        self,
        file: SessionFile,
        stored: FileProgress | None,
        tally: _Tally,
        tick: Callable[[], None],
    ) -> None:
        change = classify(file, stored)
        if change is FileChange.UNCHANGED:
            tally.files_unchanged += 1
            return
        try:
            self._read(file, stored, change, tally, tick)
        except StaleProgress:  # another indexer is reading this file: it will finish it
            self._log.info("sessions.concurrent_update", path=file.path)
        except OSError as exc:  # vanished, unreadable: the next run tries again
            tally.files_failed += 1
            tally.failures.append(f"{file.path}: {exc.strerror or type(exc).__name__}")
            self._log.warning("sessions.read_failed", path=file.path, error=str(exc))

    def _read(
        self,
        file: SessionFile,
        stored: FileProgress | None,
        change: FileChange,
        tally: _Tally,
        tick: Callable[[], None],
    ) -> None:
        read = self._source.read
        head = tail = b""
        if change is FileChange.CHANGED and stored is not None:
            head = read(file.path, 0, stored.head_len)
            start = max(0, stored.offset - FINGERPRINT_BYTES)
            tail = read(file.path, start, stored.offset - start)
            if not fingerprints_match(stored, head, tail):
                change = FileChange.REWRITTEN
        if change is FileChange.CHANGED and stored is not None:
            tally.files_appended += 1
            pos, line_no, headed, reset = stored.offset, stored.lines, stored.headed, False
        else:
            if change is FileChange.REWRITTEN:
                tally.files_reindexed += 1
            else:
                tally.files_new += 1
            head = tail = b""
            pos, line_no, headed, reset = 0, 0, False, stored is not None
        fallback = fallback_session_id(file.path)
        indexed_any = False
        while True:
            want = min(self._window, file.size - pos)
            data = read(file.path, pos, want) if want > 0 else b""
            cut = data.rfind(b"\n") + 1
            raw_lines: list[bytes] = []
            too_long = 0
            new_tail = tail
            if cut:
                raw_lines = data[:cut].split(b"\n")[:-1]
                new_tail = (tail + data[:cut])[-FINGERPRINT_BYTES:]
            elif len(data) == self._window:  # a line longer than a window: find its end
                end = self._line_end(file, pos + len(data))
                if end is not None:
                    too_long, cut = 1, end + 1 - pos
                    new_tail = read(file.path, pos + cut - FINGERPRINT_BYTES, FINGERPRINT_BYTES)
            header: HeaderLine | None = None
            messages: list[tuple[int, MessageLine]] = []
            for raw in raw_lines:
                line_no += 1
                parsed = parse_line(raw)
                if isinstance(parsed, MessageLine):
                    messages.append((line_no, parsed))
                elif isinstance(parsed, HeaderLine):
                    if headed:
                        tally.skipped[LineSkip.EXTRA_HEADER.value] += 1
                    else:
                        header, headed = parsed, True
                else:
                    tally.skipped[parsed.reason.value] += 1
            if too_long:
                line_no += 1
                tally.skipped[LineSkip.TOO_LONG.value] += 1
            if cut:
                if len(head) < FINGERPRINT_BYTES:  # then `pos` == len(head): data continues it
                    head += data[: min(cut, FINGERPRINT_BYTES - len(head))]
                tail = new_tail
            pos += cut
            final = not cut or pos >= file.size
            progress = FileProgress(
                path=file.path,
                size=file.size if final else pos,  # an unfinished read is never "unchanged"
                mtime_ns=file.mtime_ns,
                device=file.device,
                inode=file.inode,
                offset=pos,
                lines=line_no,
                head_len=len(head),
                head_sha=digest(head),
                tail_sha=digest(tail),
                headed=headed,
            )
            self._index.apply(
                SessionChunk(
                    progress=progress,
                    reset=reset,
                    start=pos - cut,
                    fallback_id=fallback,
                    header=header,
                    project=self.project_of(header.cwd) if header is not None else None,
                    messages=tuple(messages),
                )
            )
            reset = False
            indexed_any = indexed_any or bool(messages)
            tally.lines += len(raw_lines) + too_long
            tally.messages += len(messages)
            tally.bytes_read += cut
            if final:
                break
            tick()
        if indexed_any and not headed:
            tally.files_without_header += 1

    def _line_end(self, file: SessionFile, start: int) -> int | None:
        """The offset of the next newline at or after `start` (None: not written yet)."""
        pos = start
        while pos < file.size:
            data = self._source.read(file.path, pos, min(self._window, file.size - pos))
            if not data:
                return None
            found = data.find(b"\n")
            if found >= 0:
                return pos + found
            pos += len(data)
        return None


__all__ = [
    "MAX_LINE_BYTES",
    "WINDOW_BYTES",
    "IndexProgress",
    "IndexReport",
    "RecordResult",
    "SessionIndexer",
]
