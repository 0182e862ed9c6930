"""Indexing session history: whole trees incrementally, one live file cheaply, or turns recorded
through the API (ADR 0020).

`SessionIndexer.index_all` lists the session files (`SessionSource`) and compares each with
what the `SessionIndex` holds of it (`pi_hermes_memory.domain.history.transcripts.classify`):

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
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.history.transcripts import (
    FINGERPRINT_BYTES,
    INDEXED_ROLES,
    MAX_LINE_BYTES,
    FileChange,
    FileProgress,
    LineSkip,
    MessageLine,
    SessionFile,
    classify,
    project_of,
)
from pi_hermes_memory.domain.memory.model import project_name_problem
from pi_hermes_memory.errors import InvalidArgument, StaleProgress
from pi_hermes_memory.history.reading import (
    Events,
    FileDone,
    FileReader,
    FileStarted,
    Job,
    WindowRead,
    parse_in_worker,
)
from pi_hermes_memory.log import library_logger

if TYPE_CHECKING:
    from pi_hermes_memory.ports.store import Clock, SessionIndex, SessionSource

#: Bytes read (and committed) per window; larger than MAX_LINE_BYTES so that any line short
#: enough to be indexed fits in one window.
WINDOW_BYTES = 8 * 1024 * 1024
#: A run with at least this many bytes to read parses them in a helper process (when asked
#: to and the machine has two cores or more); below it, starting the process costs more.
WORKER_MIN_BYTES = 64 * 1024 * 1024
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


_PYTHON_EXECUTABLE = re.compile(r"(python|pypy)[0-9.]*(\.exe)?", re.IGNORECASE)


def can_start_python_worker(executable: str | None = None, *, frozen: bool | None = None) -> bool:
    """Whether `sys.executable` can safely start the parsing helper: a plain `python…` /
    `pypy…` interpreter, not a frozen application (PyInstaller and the like) nor a host that
    embeds Python (its `sys.executable` is the host program, which `-c` would start again)."""
    path = sys.executable if executable is None else executable
    is_frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    return (
        bool(path)
        and not is_frozen
        and bool(_PYTHON_EXECUTABLE.fullmatch(re.split(r"[\\/]", path)[-1]))
    )


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
        parse_in_worker: bool | None = None,
        worker_min_bytes: int = WORKER_MIN_BYTES,
        logger: Any = None,
    ) -> None:
        """`parse_in_worker`: let `index_all` read and parse the files in a helper process
        while this one writes, for runs with at least `worker_min_bytes` to read (None: when
        the machine has two cores or more and `sys.executable` is a plain Python interpreter,
        see `can_start_python_worker`). A source that cannot be sent to another process is
        read here."""
        if window_bytes <= FINGERPRINT_BYTES:
            raise InvalidArgument(f"window_bytes must exceed {FINGERPRINT_BYTES}")
        self._source = source
        self._index = index
        self._clock = clock
        self._map = dict(project_map or {})
        self._window = window_bytes
        if parse_in_worker is None:
            parse_in_worker = (os.cpu_count() or 1) >= 2 and can_start_python_worker()
        self._parse_in_worker = parse_in_worker
        self._worker_min_bytes = worker_min_bytes
        self._log = logger or library_logger()

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

        jobs = [(f, stored.get(f.path), classify(f, stored.get(f.path))) for f in files]
        events = None
        if self._parse_in_worker and _bytes_to_read(jobs) >= self._worker_min_bytes:
            events = parse_in_worker(
                self._reader(), [j for j in jobs if j[2] is not FileChange.UNCHANGED]
            )
        try:
            for done, (file, before, change) in enumerate(jobs):
                if events is None or change is FileChange.UNCHANGED:
                    self._index_file(file, before, tally, functools.partial(tick, done))
                else:
                    self._apply(events, tally, functools.partial(tick, done))
                tick(done + 1)
        finally:
            if events is not None:
                events.close()
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
            raise InvalidArgument("session_id must be a non-empty string")
        if len(session_id) > MAX_SESSION_ID_CHARS:
            raise InvalidArgument(f"session_id must be at most {MAX_SESSION_ID_CHARS} characters")
        if role not in INDEXED_ROLES:
            raise InvalidArgument(
                f"role must be one of {', '.join(sorted(INDEXED_ROLES))}; got {shown(role)}"
            )
        if not isinstance(text, str) or not (text.strip() or tools):
            raise InvalidArgument("text must be a non-empty string")
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
            raise InvalidArgument("at must be a timezone-aware datetime")
        problem = None if project is None else project_name_problem(project)
        if problem is not None:
            raise InvalidArgument(problem)
        if cwd is not None and not isinstance(cwd, str):
            raise InvalidArgument("cwd must be a string")
        name = project if project is not None else self.project_of(cwd)
        message = MessageLine.create(
            role=role, text=text, tools=tuple(tools), at=at or self._clock.now()
        )
        turn = self._index.record(
            session_id=session_id.strip(), cwd=cwd or None, project=name, message=message
        )
        return RecordResult(session_id=session_id.strip(), project=name, turn=turn)

    def unrecord(self, session_id: str, *, keep: int = 0) -> int:
        """Drop the turns of a recorded session past its first `keep` (ADR 0103)."""
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidArgument("session_id must be a non-empty string")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise InvalidArgument(f"keep must be a non-negative integer; got {shown(keep)}")
        return self._index.unrecord(session_id=session_id.strip(), keep=keep)

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
        events = self._reader().events(file, stored, change)
        try:
            self._apply(events, tally, tick)
        finally:
            events.close()

    def _reader(self) -> FileReader:
        return FileReader(source=self._source, window=self._window, project_map=self._map)

    def _apply(self, events: Events, tally: _Tally, tick: Callable[[], None]) -> None:
        """Apply one file's events (up to its FileDone or FileFailed) to the index and the
        report. After a StaleProgress, the file's remaining events are consumed unapplied."""
        stale = False
        for event in events:
            if isinstance(event, FileStarted):
                if event.kind == "appended":
                    tally.files_appended += 1
                elif event.kind == "reindexed":
                    tally.files_reindexed += 1
                else:
                    tally.files_new += 1
            elif isinstance(event, WindowRead):
                if stale:
                    continue
                tally.skipped.update(event.skipped)
                try:
                    self._index.apply(event.chunk)
                except StaleProgress:  # another indexer is reading this file: it will finish it
                    self._log.info("sessions.concurrent_update", path=event.path)
                    stale = True
                    continue
                tally.lines += event.lines
                tally.messages += event.messages
                tally.bytes_read += event.bytes_read
                if not event.final:
                    tick()
            elif isinstance(event, FileDone):
                if event.without_header and not stale:
                    tally.files_without_header += 1
                return
            else:
                tally.files_failed += 1
                tally.failures.append(f"{event.path}: {event.reason}")
                self._log.warning("sessions.read_failed", path=event.path, error=event.error)
                return


def _bytes_to_read(jobs: Sequence[Job]) -> int:
    total = 0
    for file, stored, change in jobs:
        if change is FileChange.CHANGED and stored is not None:
            total += max(0, file.size - stored.offset)
        elif change is not FileChange.UNCHANGED:
            total += file.size
    return total


__all__ = [
    "MAX_LINE_BYTES",
    "WINDOW_BYTES",
    "WORKER_MIN_BYTES",
    "IndexProgress",
    "IndexReport",
    "RecordResult",
    "SessionIndexer",
]
