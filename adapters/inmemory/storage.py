"""In-memory adapters: real implementations of the ports, for tests and embedding.

They honour the same contracts as the SQLite and Markdown adapters (the shared contract suite
in `pi_hermes_memory.testing` runs against both): a failed transaction leaves no trace.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import date
from typing import assert_never

import attrs
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.rows import (
    DeleteRows,
    InsertRow,
    ReferenceRow,
    Row,
    RowChange,
    SupersedeRow,
    UpsertRow,
    projected,
)
from pi_hermes_memory.errors import MarkdownChanged
from pi_hermes_memory.memory.mirror import RepairTally, in_scope, plan_mirror
from pi_hermes_memory.ports.memory import RebuildReport, ScrubReport
from pi_hermes_memory.ports.store import UNCHECKED

#: commits whose changed row ids are remembered for the read port (`changed_since`)
_CHANGES_KEPT = 4096


@attrs.define
class _State:
    events: dict[str, list[Event]] = attrs.Factory(dict)
    rows: dict[str, dict[str, object]] = attrs.Factory(dict)
    ledger: dict[tuple[str, str], tuple[int, str]] = attrs.Factory(dict)
    store_id: str = attrs.Factory(lambda: uuid.uuid4().hex[:16])
    snapshots: dict[str, tuple[int, str]] = attrs.Factory(dict)

    def fork(self) -> _State:
        """A copy a transaction may change: every container it mutates is copied; events,
        ledger and snapshot values and row values are immutable and shared (a deepcopy of
        100k events took seconds and gigabytes for nothing)."""
        return _State(
            events={stream: list(events) for stream, events in self.events.items()},
            rows={entry_id: dict(row) for entry_id, row in self.rows.items()},
            ledger=dict(self.ledger),
            store_id=self.store_id,
            snapshots=dict(self.snapshots),
        )


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

    def streams(self, prefix: str) -> list[str]:
        return sorted(
            s for s, events in self._state.events.items() if events and s.startswith(prefix)
        )

    def read(self, stream: str, after: int = 0, upto: int | None = None) -> list[Event]:
        events = self._state.events.get(stream, [])
        return list(events[after:upto])

    def snapshot(self, stream: str) -> tuple[int, str] | None:
        return self._state.snapshots.get(stream)

    def snapshot_version(self, stream: str) -> int | None:
        stored = self._state.snapshots.get(stream)
        return None if stored is None else stored[0]

    def save_snapshot(self, stream: str, version: int, data: str) -> None:
        self._state.snapshots[stream] = (version, data)

    def redact(self, events: Sequence[Event]) -> None:
        stored = self._state.events
        for event in events:
            stream = stored.get(event.stream, [])
            index = event.version - 1
            if not 0 <= index < len(stream) or type(stream[index]) is not type(event):
                raise VersionConflict(event.stream, event.version, len(stream))
        for event in events:  # checked first: a refused redaction writes nothing
            stored[event.stream][event.version - 1] = event


class InMemoryProjection:
    """The same read model as the SQLite `memories` table, as dicts."""

    def __init__(self, state: _State) -> None:
        self._state = state

    @property
    def rows(self) -> dict[str, dict[str, object]]:
        return self._state.rows

    def rebuild(self, documents: Sequence[MemoryDocument]) -> RebuildReport:
        """Repair the rows of these documents' targets to their folded state (ADR 0013)."""
        plan = plan_mirror(documents)
        tally = RepairTally(plan)
        rows = self._state.rows
        for entry_id, entry in plan.rows.items():
            row = rows.get(entry_id)
            want: dict[str, object] = {
                "target": entry.target.value,
                "project": entry.project,
                "namespace": entry.namespace,
                "text": entry.text,
                "superseded_by": entry.superseded_by,
                "superseded_at": entry.superseded_at,
                "category": entry.category.value if entry.category else None,
                "created": entry.created,
                # never moved back: a merge references the survivor in the mirror only
                "last_referenced": max(entry.last_referenced, _last(row) or entry.last_referenced),
                "flagged": entry.flagged,
            }
            if row is None:
                rows[entry_id] = want
                tally.count(entry.target, "added")
            elif any(row.get(key) != value for key, value in want.items()):
                row.update(want)
                tally.count(entry.target, "updated")
        for entry_id, row in list(rows.items()):
            target = str(row["target"])
            if entry_id in plan.rows or not in_scope(plan, entry_id, target):
                continue
            if row.get("superseded_by") is None:
                del rows[entry_id]
                tally.count(target, "removed")
            else:  # history is never deleted by a repair
                tally.count(target, "kept_history")
        return tally.report()

    def apply(self, events: Sequence[Event]) -> None:
        for event in events:
            for change in projected(event):
                self._execute(change)

    def _execute(self, change: RowChange) -> None:
        rows = self._state.rows
        match change:
            case InsertRow():
                old = None if change.scope_of is None else rows.get(change.scope_of)
                scope = (
                    None if old is None else (Target(str(old["target"])), _text(old, "namespace"))
                )
                _insert(rows, change.resolved(scope))
            case UpsertRow():
                row = rows.get(change.row.id)
                if row is None:
                    _insert(rows, InsertRow(row=change.row).resolved(None))
                else:
                    values = _values(change.row)
                    row.update({column: values[column] for column in change.columns})
            case SupersedeRow():
                if change.id in rows:
                    rows[change.id].update(superseded_by=change.by, superseded_at=change.at)
            case ReferenceRow():
                last = _last(rows.get(change.id))
                if last is not None and change.on > last:  # never moved back
                    rows[change.id]["last_referenced"] = change.on
            case DeleteRows():
                for entry_id in change.ids:
                    rows.pop(entry_id, None)
            case _:
                assert_never(change)


def _values(row: Row) -> dict[str, object]:
    """A row's columns as the in-memory model keeps them (enums as values, dates as dates)."""
    return {
        "target": row.target.value,
        "project": row.project,
        "namespace": row.namespace,
        "text": row.text,
        "category": row.category.value if row.category else None,
        "created": row.created,
        "last_referenced": row.last_referenced,
        "flagged": row.flagged,
    }


def _insert(rows: dict[str, dict[str, object]], row: Row | None) -> None:
    if row is not None:  # None: not stored (an unattributed project row: Markdown only)
        rows[row.id] = {**_values(row), "superseded_by": None}


def _text(row: dict[str, object], key: str) -> str | None:
    value = row.get(key)
    return value if isinstance(value, str) else None


def _last(row: dict[str, object] | None) -> date | None:
    value = None if row is None else row.get("last_referenced")
    return value if isinstance(value, date) else None


class InMemoryLedger:
    def __init__(self, state: _State) -> None:
        self._state = state

    def rendered(self, stream: str, replica: str) -> tuple[int, str] | None:
        return self._state.ledger.get((stream, replica))

    def record(self, stream: str, replica: str, version: int, sha256: str) -> None:
        self._state.ledger[(stream, replica)] = (version, sha256)

    def store_id(self) -> str:
        return self._state.store_id


@attrs.frozen
class InMemoryUnitOfWork:
    journal: InMemoryJournal
    projection: InMemoryProjection
    ledger: InMemoryLedger


class InMemoryStorage:
    def __init__(self) -> None:
        self._state = _State()
        self._lock = threading.RLock()
        #: (position, ids of the rows a commit changed), the newest `_CHANGES_KEPT` commits
        self._changes: collections.deque[tuple[int, frozenset[str]]] = collections.deque(
            maxlen=_CHANGES_KEPT
        )
        self._position = 0

    @property
    def rows(self) -> dict[str, dict[str, object]]:
        return self._state.rows

    @property
    def position(self) -> int:
        """The number of commits that changed a row (the read port's cursor)."""
        return self._position

    def changes_after(self, position: int) -> frozenset[str] | None:
        """The ids of the rows changed by the commits after `position`, or None when they
        are no longer all remembered."""
        changes = list(self._changes)
        if position >= self._position:
            return frozenset()
        if not changes or changes[0][0] > position + 1:
            return None
        return frozenset().union(*(ids for at, ids in changes if at > position))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[InMemoryUnitOfWork]:
        with self._lock:
            work = self._state.fork()
            yield InMemoryUnitOfWork(
                InMemoryJournal(work), InMemoryProjection(work), InMemoryLedger(work)
            )
            before = self._state.rows
            self._state = work  # commit only when the block ended without an exception
            changed = frozenset(
                i for i in before.keys() | work.rows.keys() if before.get(i) != work.rows.get(i)
            )
            if changed:
                self._position += 1
                self._changes.append((self._position, changed))

    def erasing(self) -> contextlib.AbstractContextManager[InMemoryUnitOfWork]:
        """A transaction: the replaced state object holds no copy of what it erased."""
        return self.transaction()

    def scrub(self) -> ScrubReport:
        return ScrubReport()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[InMemoryUnitOfWork]:
        """The committed state, read without the lock: a commit replaces the state object and
        never changes it, so this one stays consistent. Nothing may be written through it."""
        state = self._state
        yield InMemoryUnitOfWork(
            InMemoryJournal(state), InMemoryProjection(state), InMemoryLedger(state)
        )

    def close(self) -> None:
        pass


class InMemoryMarkdown:
    """Markdown documents as bytes in a dict. `name` tells replicas apart: two of them on one
    storage are two agent roots sharing a journal (ADR 0022)."""

    def __init__(self, name: str = "in-memory", *, lock: threading.RLock | None = None) -> None:
        self.files: dict[Target, bytes] = {}
        self.name = name
        self._lock = lock or threading.RLock()

    def replica(self, target: Target) -> str:
        return f"{self.name}/{target.value}"

    def read(self, target: Target) -> bytes | None:
        return self.files.get(target)

    def write(self, target: Target, data: bytes, *, expected: object = UNCHECKED) -> None:
        if expected is not UNCHECKED and self.stamp(target) != expected:
            raise MarkdownChanged(f"<memory:{target.value}> changed while it was rendered")
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
