"""The read-only store: what `open` falls back to when sessions.db cannot be used (ADR 0023).

A damaged database, or one that cannot be written (read-only file, folder or file system), must
not stop `list` and `search`. The journal is loaded into the in-memory adapters from the best
durable copy there is (the database read-only, else the event log), the Markdown files are
read as usual (hand edits show up) but never rewritten, and the facade refuses every write
with the typed error that says why.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.adapters.sqlite.connection import connect
from pi_hermes_memory.adapters.sqlite.eventlog import EventLog, default_log_path
from pi_hermes_memory.adapters.sqlite.recovery import read_events
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import CorruptEvent
from pi_hermes_memory.journal.codec import decode

__all__ = ["ReadOnlyMarkdown", "ReadOnlyStorage", "load_journal", "local_event_count"]


class ReadOnlyStorage(InMemoryStorage):
    """The in-memory storage holding a copy of the journal. Its transactions only change this
    copy (hand edits seen in the files), never a file."""

    def __init__(self, events: Sequence[Event], store_id: str | None) -> None:
        super().__init__()
        self._store_id = store_id
        by_stream: dict[str, list[Event]] = defaultdict(list)
        for event in events:
            by_stream[event.stream].append(event)
        with super().transaction() as uow:
            for stream, stream_events in by_stream.items():
                uow.journal.append(stream, 0, stream_events)
            uow.projection.apply(events)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        with super().transaction() as uow:
            yield uow if self._store_id is None else _SameStore(uow, self._store_id)


class _SameStore:
    """A unit of work whose ledger names the store the files were rendered by, so their
    version lines are recognised (ADR 0022)."""

    def __init__(self, inner: Any, store_id: str) -> None:
        self._inner = inner
        self.ledger = _Ledger(inner.ledger, store_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Ledger:
    def __init__(self, inner: Any, store_id: str) -> None:
        self._inner = inner
        self._store_id = store_id

    def store_id(self) -> str:
        return self._store_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ReadOnlyMarkdown:
    """The Markdown files, read as usual and never written: a view that may lag behind the
    real journal must not replace what a person or another process wrote."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, target: Target, data: bytes, *, expected: object = None) -> None:
        pass  # the facade refuses writes; re-renders of this view are not published

    def lock(self, timeout: float = 30.0) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()  # nothing is written; the lock file may be unwritable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def load_journal(
    db_path: Path, log: EventLog | None, *, trust_database: bool
) -> tuple[list[Event], str | None, list[str]]:
    """The journal's events, the store id and notes, from the database opened read-only
    (`trust_database`: it is not damaged) or else from the event log. Never raises for
    unreadable sources: an empty journal then (the Markdown files still show)."""
    notes: list[str] = []
    if trust_database:
        try:
            conn = connect(db_path, read_only=True)
            try:
                events = read_events(conn)
                store_id = conn.execute(
                    "SELECT value FROM store_meta WHERE key = 'store_id'"
                ).fetchone()
            finally:
                conn.close()
            return events, None if store_id is None else str(store_id[0]), notes
        except (apsw.Error, CorruptEvent, OSError) as exc:
            notes.append(f"{db_path.name} cannot be read either ({exc})")
    if log is None or not log.exists():
        notes.append("no event log to read the history from: showing the Markdown files only")
        return [], None, notes
    try:
        contents = log.read()
    except OSError as exc:
        notes.append(f"{log.path.name} cannot be read ({exc}): showing the Markdown files only")
        return [], None, notes
    notes.extend(contents.problems)
    logged: list[Event] = []
    broken: set[str] = set()
    for record in contents.events:
        if record.stream in broken:
            continue
        try:
            logged.append(decode(record.tag, record.data))
        except CorruptEvent as exc:
            broken.add(record.stream)
            notes.append(f"{record.stream} stops at version {record.version - 1}: {exc}")
    return logged, contents.meta.get("store_id"), notes


def local_event_count(db_path: Path) -> int:
    """How many events the local store at `db_path` holds (0: no database, an empty or an
    unreadable one; then its event log's size decides: 1 when it holds anything). Read-only:
    creates nothing (the check `open` makes before a shared store imports this host's files)."""
    if db_path.exists():
        try:
            conn = connect(db_path, read_only=True)
            try:
                row = conn.execute("SELECT count(*) FROM events").fetchone()
            finally:
                conn.close()
            return int(row[0]) if row is not None else 0
        except (apsw.Error, OSError):
            return 0
    log = default_log_path(db_path)
    try:
        return 1 if log.stat().st_size > 0 else 0
    except OSError:
        return 0
