"""In-memory adapters: real implementations of the ports, for tests and embedding.

They honour the same contracts as the SQLite and Markdown adapters (the shared contract suite
in `pi_hermes_memory.testing` runs against both): a failed transaction leaves no trace.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import threading
from collections.abc import Iterator, Sequence

import attrs
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.domain.events import (
    Event,
    MemoryAdded,
    MemoryMergedInto,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemorySuperseded,
)
from pi_hermes_memory.domain.model import Target


@attrs.define
class _State:
    events: dict[str, list[Event]] = attrs.Factory(dict)
    rows: dict[str, dict[str, object]] = attrs.Factory(dict)
    ledger: dict[str, tuple[int, str]] = attrs.Factory(dict)


class InMemoryJournal:
    def __init__(self, state: _State) -> None:
        self._state = state

    def version(self, stream: str) -> int:
        return len(self._state.events.get(stream, []))

    def append(self, stream: str, expected_version: int, events: Sequence[Event]) -> None:
        current = self.version(stream)
        if current != expected_version:
            raise VersionConflict(stream, expected_version, current)
        for i, event in enumerate(events, start=1):
            if event.stream != stream or event.version != expected_version + i:
                raise VersionConflict(stream, expected_version + i, event.version)
        self._state.events.setdefault(stream, []).extend(events)

    def read(self, stream: str, after: int = 0, upto: int | None = None) -> list[Event]:
        events = self._state.events.get(stream, [])
        return list(events[after:upto])


class InMemoryProjection:
    """The same read model as the SQLite `memories` table, as dicts."""

    def __init__(self, state: _State) -> None:
        self._state = state

    @property
    def rows(self) -> dict[str, dict[str, object]]:
        return self._state.rows

    def apply(self, events: Sequence[Event]) -> None:
        rows = self._state.rows
        for event in events:
            match event:
                case MemoryAdded():
                    if event.target is Target.PROJECT and event.project is None:
                        continue
                    rows[event.entry_id] = {
                        "target": event.target.value,
                        "project": event.project,
                        "text": event.text,
                        "superseded_by": None,
                    }
                case MemoryReplaced():
                    old = rows.get(event.old_id)
                    target = old["target"] if old else event.stream.split(":", 1)[1]
                    if old is not None:
                        old["superseded_by"] = event.new_id
                    if target == Target.PROJECT.value and event.project is None:
                        continue
                    rows[event.new_id] = {
                        "target": target,
                        "project": event.project,
                        "text": event.text,
                        "superseded_by": None,
                    }
                case MemorySuperseded():
                    if event.old_id in rows:
                        rows[event.old_id]["superseded_by"] = event.by_id
                case MemoryRemoved():
                    rows.pop(event.entry_id, None)
                case MemoryMovedIn():
                    row = rows.setdefault(
                        event.entry_id, {"text": event.text, "superseded_by": None}
                    )
                    row.update(target=event.target.value, project=event.project)
                case MemoryMergedInto():
                    if event.entry_id in rows:
                        rows[event.entry_id]["superseded_by"] = event.into_id
                case MemoryReferenced() | MemoryMovedOut():
                    pass


class InMemoryLedger:
    def __init__(self, state: _State) -> None:
        self._state = state

    def rendered(self, stream: str) -> tuple[int, str] | None:
        return self._state.ledger.get(stream)

    def record(self, stream: str, version: int, sha256: str) -> None:
        self._state.ledger[stream] = (version, sha256)


@attrs.frozen
class InMemoryUnitOfWork:
    journal: InMemoryJournal
    projection: InMemoryProjection
    ledger: InMemoryLedger


class InMemoryStorage:
    def __init__(self) -> None:
        self._state = _State()
        self._lock = threading.RLock()

    @property
    def rows(self) -> dict[str, dict[str, object]]:
        return self._state.rows

    @contextlib.contextmanager
    def transaction(self) -> Iterator[InMemoryUnitOfWork]:
        with self._lock:
            work = copy.deepcopy(self._state)
            yield InMemoryUnitOfWork(
                InMemoryJournal(work), InMemoryProjection(work), InMemoryLedger(work)
            )
            self._state = work  # commit only when the block ended without an exception

    def close(self) -> None:
        pass


class InMemoryMarkdown:
    def __init__(self) -> None:
        self.files: dict[Target, bytes] = {}
        self._lock = threading.RLock()

    def read(self, target: Target) -> bytes | None:
        return self.files.get(target)

    def write(self, target: Target, data: bytes) -> None:
        self.files[target] = data

    def lock(self, timeout: float = 30.0) -> contextlib.AbstractContextManager[object]:
        return self._lock

    def describe(self, target: Target) -> str:
        return f"<memory:{target.value}>"

    def distinct_roots(self) -> bool:
        return True

    def stamp(self, target: Target) -> object:
        data = self.files.get(target)
        return None if data is None else hashlib.sha256(data).digest()
