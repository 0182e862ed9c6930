"""Reading and parsing session files for `SessionIndexer` (ADR 0020), in this process or in a
helper process.

`FileReader.events(file, stored, change)` reads one file's new complete lines in windows and
yields what the indexer does with them, in order: `FileStarted` (how the file is read),
one `WindowRead` per window (the `SessionChunk` to apply and what it adds to the report),
then `FileDone`, or `FileFailed` when the file could not be read. It touches no index, so a
helper process can run it (`parse_in_worker`) while this process only writes: JSON parsing
is about half of an indexing run, and on two cores the two halves overlap.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import attrs
from pi_hermes_memory.domain.history.transcripts import (
    FINGERPRINT_BYTES,
    FileChange,
    FileProgress,
    HeaderLine,
    LineSkip,
    MessageLine,
    SessionChunk,
    SessionFile,
    digest,
    fallback_session_id,
    fingerprints_match,
    parse_line,
    project_of,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pi_hermes_memory.ports.store import SessionSource

#: Events the helper process sends per message (fewer, larger messages cost less).
_BATCH = 16


@attrs.frozen
class FileStarted:
    """The file is read from its stored offset (`appended`) or from the start (`new`,
    `reindexed`)."""

    path: str
    kind: str


@attrs.frozen
class WindowRead:
    """One window: the chunk to apply, the lines skipped in it by reason (counted whether or
    not the chunk is applied), and what it adds once applied."""

    path: str
    chunk: SessionChunk
    skipped: Counter[str]
    lines: int
    messages: int
    bytes_read: int
    final: bool


@attrs.frozen
class FileDone:
    path: str
    without_header: bool


@attrs.frozen
class FileFailed:
    """An OSError while reading (the file vanished or is unreadable)."""

    path: str
    reason: str
    error: str


FileEvent = FileStarted | WindowRead | FileDone | FileFailed
Events = Generator[FileEvent, None, None]


@attrs.frozen
class FileReader:
    """Reads session files through a `SessionSource` in windows of `window` bytes."""

    source: SessionSource
    window: int
    project_map: Mapping[str, str] = attrs.field(factory=dict)

    def events(self, file: SessionFile, stored: FileProgress | None, change: FileChange) -> Events:
        try:
            yield from self._read(file, stored, change)
        except OSError as exc:  # vanished, unreadable: the next run tries again
            yield FileFailed(file.path, exc.strerror or type(exc).__name__, str(exc))

    def _read(self, file: SessionFile, stored: FileProgress | None, change: FileChange) -> Events:
        read = self.source.read
        head = tail = b""
        if change is FileChange.CHANGED and stored is not None:
            head = read(file.path, 0, stored.head_len)
            start = max(0, stored.offset - FINGERPRINT_BYTES)
            tail = read(file.path, start, stored.offset - start)
            if not fingerprints_match(stored, head, tail):
                change = FileChange.REWRITTEN
        if change is FileChange.CHANGED and stored is not None:
            yield FileStarted(file.path, "appended")
            pos, line_no, headed, reset = stored.offset, stored.lines, stored.headed, False
        else:
            yield FileStarted(file.path, "reindexed" if change is FileChange.REWRITTEN else "new")
            head = tail = b""
            pos, line_no, headed, reset = 0, 0, False, stored is not None
        fallback = fallback_session_id(file.path)
        indexed_any = False
        while True:
            want = min(self.window, file.size - pos)
            data = read(file.path, pos, want) if want > 0 else b""
            cut = data.rfind(b"\n") + 1
            raw_lines: list[bytes] = []
            too_long = 0
            new_tail = tail
            if cut:
                raw_lines = data[:cut].split(b"\n")[:-1]
                new_tail = (tail + data[:cut])[-FINGERPRINT_BYTES:]
            elif len(data) == self.window:  # a line longer than a window: find its end
                end = self._line_end(file, pos + len(data))
                if end is not None:
                    too_long, cut = 1, end + 1 - pos
                    new_tail = read(file.path, pos + cut - FINGERPRINT_BYTES, FINGERPRINT_BYTES)
            header: HeaderLine | None = None
            messages: list[tuple[int, MessageLine]] = []
            skipped: Counter[str] = Counter()
            for raw in raw_lines:
                line_no += 1
                parsed = parse_line(raw)
                if isinstance(parsed, MessageLine):
                    if parsed.header is not None and not headed:  # Claude Code's turns
                        header, headed = parsed.header, True
                    messages.append((line_no, parsed))
                elif isinstance(parsed, HeaderLine):
                    if headed:
                        skipped[LineSkip.EXTRA_HEADER.value] += 1
                    else:
                        header, headed = parsed, True
                else:
                    skipped[parsed.reason.value] += 1
            if too_long:
                line_no += 1
                skipped[LineSkip.TOO_LONG.value] += 1
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
            chunk = SessionChunk(
                progress=progress,
                reset=reset,
                start=pos - cut,
                fallback_id=fallback,
                header=header,
                project=project_of(header.cwd, self.project_map) if header is not None else None,
                messages=tuple(messages),
            )
            yield WindowRead(
                file.path,
                chunk,
                skipped,
                lines=len(raw_lines) + too_long,
                messages=len(messages),
                bytes_read=cut,
                final=final,
            )
            reset = False
            indexed_any = indexed_any or bool(messages)
            if final:
                break
        yield FileDone(file.path, without_header=indexed_any and not headed)

    def _line_end(self, file: SessionFile, start: int) -> int | None:
        """The offset of the next newline at or after `start` (None: not written yet)."""
        pos = start
        while pos < file.size:
            data = self.source.read(file.path, pos, min(self.window, file.size - pos))
            if not data:
                return None
            found = data.find(b"\n")
            if found >= 0:
                return pos + found
            pos += len(data)
        return None


# --- the helper process -------------------------------------------------------------------------

Job = tuple[SessionFile, FileProgress | None, FileChange]


@attrs.frozen
class _Crashed:
    error: str


@attrs.frozen
class _PackedWindow:
    """A WindowRead with its turns as plain tuples: unpickling a tuple costs a fraction of
    an attrs instance, and the parent is the busier process."""

    window: WindowRead
    turns: tuple[tuple[int, str, str, tuple[str, ...], datetime | None, str | None], ...]


def _pack(event: WindowRead) -> _PackedWindow:
    turns = tuple(
        (line, m.role, m.text, m.tools, m.at, m.message_id) for line, m in event.chunk.messages
    )
    chunk = attrs.evolve(event.chunk, messages=())
    return _PackedWindow(attrs.evolve(event, chunk=chunk), turns)


def _unpack(packed: _PackedWindow) -> WindowRead:
    messages = tuple(
        (line, MessageLine(role=role, text=text, tools=tools, at=at, message_id=message_id))
        for line, role, text, tools, at, message_id in packed.turns
    )
    window = packed.window
    return attrs.evolve(window, chunk=attrs.evolve(window.chunk, messages=messages))


def _work(reader: FileReader, jobs: Sequence[Job], send: Callable[[object], None]) -> None:
    """Every job's events, in order, in batches (a batch ends with each file); then None."""
    try:
        batch: list[object] = []
        for file, stored, change in jobs:
            for event in reader.events(file, stored, change):
                batch.append(_pack(event) if isinstance(event, WindowRead) else event)
                if len(batch) >= _BATCH or isinstance(event, FileDone | FileFailed):
                    send(batch)
                    batch = []
        if batch:
            send(batch)
    except Exception:  # reported to the parent, which raises
        send([_Crashed(traceback.format_exc())])
    send(None)


def main() -> int:  # pragma: no cover - runs in the helper process
    """The helper process's entry point: (reader, jobs) pickled on stdin, pickled
    event batches on stdout, None last."""
    reader, jobs = pickle.load(sys.stdin.buffer)
    out = sys.stdout.buffer

    def send(batch: object) -> None:
        pickle.dump(batch, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    _work(reader, jobs, send)
    return 0


def parse_in_worker(reader: FileReader, jobs: Sequence[Job]) -> Events | None:
    """The events of `jobs`, read and parsed in a helper process (`sys.executable -m
    pi_hermes_memory.history.reading`: a fresh interpreter, so nothing of this process, open
    databases or the caller's `__main__` included, is inherited or re-run); None when the
    helper cannot be used (the reader cannot be pickled, e.g. an in-memory source; no
    interpreter to start; the helper fails before its first answer), so the caller reads in
    this process. Closing the iterator early stops the helper."""
    try:
        payload = pickle.dumps((reader, list(jobs)), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    if not sys.executable:
        return None
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from pi_hermes_memory.history.reading import main; sys.exit(main())",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
    except OSError:
        return None
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(payload)
        process.stdin.close()
        first = pickle.load(process.stdout)
    except (OSError, EOFError, pickle.UnpicklingError):
        _stop(process)
        return None
    return _drain(process, first)


def _drain(process: subprocess.Popen[bytes], first: object) -> Events:
    assert process.stdout is not None
    batch = first
    try:
        while batch is not None:
            assert isinstance(batch, list)
            for event in batch:
                if isinstance(event, _Crashed):
                    raise RuntimeError("the session parsing process failed:\n" + event.error)
                yield _unpack(event) if isinstance(event, _PackedWindow) else event
            try:
                batch = pickle.load(process.stdout)
            except EOFError:
                raise RuntimeError(
                    f"the session parsing process exited early (code {process.wait()})"
                ) from None
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


__all__ = [
    "Events",
    "FileDone",
    "FileEvent",
    "FileFailed",
    "FileReader",
    "FileStarted",
    "Job",
    "WindowRead",
    "parse_in_worker",
]
