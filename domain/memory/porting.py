"""Export and import of memory entries (ADR 0046): the record codec and the import plan.

A record is one entry as a JSON object, written generically from the entry's attrs fields
(`MemoryEntry`), so a field added to the entry later appears in exports without a change here
and is read back the same way. A key that is not a field of this version's entry is refused,
never dropped. Superseded history rows are records too (`superseded_by`, `superseded_at`).

`plan_import` turns the records of one document into the events that recreate them with their
ids and dates, one supersede chain at a time: a chain none of whose ids is in the document is
added; a chain that is already there, equal, is unchanged (import is idempotent by id); a chain
that overlaps the document otherwise is a conflict and is not written (the stored version stays,
the file's is reported). Every planned chain is folded and compared with its records, so a
field this version's events cannot carry is a refusal, not a silent loss.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.errors import InvariantViolation, RecordError
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, removals
from pi_hermes_memory.domain.memory.events import (
    Event,
    MemoryAdded,
    MemoryMergedInto,
    MemoryRemoved,
    MemorySuperseded,
    Origin,
    RemovalReason,
    stamp,
)
from pi_hermes_memory.domain.memory.model import (
    MemoryEntry,
    Target,
    clean_entry_text,
    entry_text_problem,
    importance_problem,
    is_safe_project_name,
    namespace_problem,
)

#: the first line of an export file names the format and its version
EXPORT_FORMAT = "pi-hermes-memory.export"
EXPORT_VERSION = 1
#: ids an import keeps (ULIDs, UUIDs and the like)
ENTRY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def entry_fields() -> tuple[attrs.Attribute[Any], ...]:
    """The fields a record carries: every init field of `MemoryEntry`, in declaration order."""
    return tuple(f for f in attrs.fields(MemoryEntry) if f.init)


def _hints() -> dict[str, Any]:
    return typing.get_type_hints(MemoryEntry)


def _encode(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, date):  # also datetime
        return value.isoformat()
    if isinstance(value, tuple | list | frozenset):
        return [_encode(v) for v in value]
    return value


def to_record(entry: MemoryEntry) -> dict[str, Any]:
    """`entry` as a JSON-ready object: every init field by name."""
    return {f.name: _encode(getattr(entry, f.name)) for f in entry_fields()}


def _decode(tp: Any, value: Any, name: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise RecordError(f"{name} may not be null")
        problems: list[str] = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _decode(arg, value, name)
            except RecordError as e:
                problems.append(str(e))
        raise RecordError("; ".join(problems))
    if value is None:
        raise RecordError(f"{name} may not be null")
    if origin is tuple:
        if not isinstance(value, list):
            raise RecordError(f"{name} must be a list")
        inner = typing.get_args(tp)[0]
        return tuple(_decode(inner, v, name) for v in value)
    if tp is datetime or tp is date:
        if not isinstance(value, str):
            raise RecordError(f"{name} must be an ISO date string")
        try:
            return tp.fromisoformat(value) if tp is datetime else date.fromisoformat(value)
        except ValueError:
            raise RecordError(f"{name} is not an ISO date: {value[:40]!r}") from None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            raise RecordError(f"{name} must be one of {allowed}") from None
    if tp is bool:
        if not isinstance(value, bool):
            raise RecordError(f"{name} must be true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecordError(f"{name} must be an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecordError(f"{name} must be a number")
        if name == "importance" and importance_problem(value) is not None:
            raise RecordError(f"{name} must be a number from 0 to 1, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise RecordError(f"{name} must be a string")
        return value
    raise RecordError(f"{name}: this version cannot read a value of type {tp}")


def from_record(record: Mapping[str, Any]) -> MemoryEntry:
    """The entry a record describes; RecordError names a missing, unknown or wrong field."""
    fields = entry_fields()
    known = {f.name for f in fields}
    unknown = sorted(k for k in record if k not in known)
    if unknown:
        raise RecordError(
            f"unknown field(s) {', '.join(unknown)}: written by a newer version? "
            "Nothing was dropped; upgrade pi-hermes-memory to import this file"
        )
    hints = _hints()
    values: dict[str, Any] = {}
    for f in fields:
        if f.name not in record:
            if f.default is attrs.NOTHING:
                raise RecordError(f"missing field {f.name}")
            continue
        values[f.name] = _decode(hints[f.name], record[f.name], f.name)
    return MemoryEntry(**values)


def header(exported_at: datetime) -> dict[str, Any]:
    """The first line of an export: format, version, time and the entry fields it carries."""
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": exported_at.isoformat(),
        "fields": [f.name for f in entry_fields()],
    }


def check_header(data: Any) -> None:
    """Raise RecordError unless `data` is a header this version reads."""
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise RecordError(f"not a {EXPORT_FORMAT} file (the first line names the format)")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > EXPORT_VERSION:
        raise RecordError(
            f"export format version {version!r} is newer than this version reads "
            f"({EXPORT_VERSION}); upgrade pi-hermes-memory"
        )


@attrs.frozen(kw_only=True)
class Removal:
    """How a removed (restorable) entry left its document: the export line's `removed`."""

    reason: RemovalReason
    at: datetime

    def to_json(self) -> dict[str, str]:
        return {"reason": self.reason.value, "at": self.at.isoformat()}

    @classmethod
    def from_json(cls, data: Any) -> Removal:
        if not isinstance(data, dict) or set(data) != {"reason", "at"}:
            raise RecordError('removed must be {"reason": ..., "at": ...}')
        return cls(
            reason=_decode(RemovalReason, data["reason"], "removed.reason"),
            at=_decode(datetime, data["at"], "removed.at"),
        )


# -- the import plan ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Refusal:
    """Records not written, and why (their chain is refused whole)."""

    ids: tuple[str, ...]
    reason: str


@attrs.frozen(kw_only=True)
class ImportPlan:
    events: tuple[Event, ...] = ()
    added: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = ()


def chains(rows: Sequence[MemoryEntry]) -> list[list[MemoryEntry]]:
    """`rows` grouped into supersede chains (connected by `superseded_by`), in input order."""
    parent: dict[str, str] = {r.id: r.id for r in rows}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in rows:
        if r.superseded_by is not None and r.superseded_by in parent:
            parent[root(r.id)] = root(r.superseded_by)
    groups: dict[str, list[MemoryEntry]] = {}
    for r in rows:
        groups.setdefault(root(r.id), []).append(r)
    return list(groups.values())


def with_lineage(rows: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    """The rows of an export written before ADR 0074 with the stable ids a store derives: in
    a chain where no row has two predecessors, version k carries the first version's id and
    number k. Where chains joined, each row keeps its own id (the file does not say which
    link was the replace), so every one of them still names its rows."""
    out = {r.id: r for r in rows}
    for chain in chains(rows):
        by_id = {r.id: r for r in chain}
        predecessors: dict[str, int] = {}
        for r in chain:
            if r.superseded_by is not None:
                predecessors[r.superseded_by] = predecessors.get(r.superseded_by, 0) + 1
        if len(chain) < 2 or max(predecessors.values(), default=0) > 1:
            continue
        ordered = sorted(chain, key=lambda r: -_depth(r, by_id))
        root = ordered[0].id
        for number, r in enumerate(ordered, start=1):
            out[r.id] = attrs.evolve(r, memory_id=None if number == 1 else root, version_no=number)
    return [out[r.id] for r in rows]


def _depth(row: MemoryEntry, by_id: Mapping[str, MemoryEntry]) -> int:
    depth, seen, cur = 0, {row.id}, row
    while cur.superseded_by is not None and cur.superseded_by in by_id:
        cur = by_id[cur.superseded_by]
        if cur.id in seen:
            raise InvariantViolation(f"supersede cycle through {row.id}")
        seen.add(cur.id)
        depth += 1
    return depth


def chain_events(
    doc: MemoryDocument,
    chain: Sequence[MemoryEntry],
    at: datetime,
    removed: Mapping[str, Removal] | None = None,
) -> tuple[Event, ...]:
    """Unstamped events that recreate `chain` (none of whose ids is in `doc`) in `doc`; the
    rows named in `removed` end removed (restorable), as they were in the exported store."""
    added_fields = {f.name for f in attrs.fields(MemoryAdded)} - {"stream", "version", "at"}
    events: list[Event] = []
    for row in sorted(chain, key=lambda r: (r.created, r.id)):
        kwargs = {f.name: getattr(row, f.name) for f in entry_fields() if f.name in added_fields}
        if row.memory_id is None:  # the first version of its memory: the event says nothing
            kwargs["version_no"] = None
        events.append(
            MemoryAdded(
                stream=doc.stream, at=at, entry_id=row.id, origin=Origin.MIGRATION, **kwargs
            )
        )
    by_id = {r.id: r for r in chain}
    old = [r for r in chain if r.superseded_by is not None]
    old.sort(key=lambda r: -_depth(r, by_id))  # a version retires before its successor does
    for r in old:
        assert r.superseded_by is not None
        on = r.superseded_at or r.last_referenced
        successor = r.superseded_by
        if successor in by_id:
            events.append(
                MemorySuperseded(stream=doc.stream, at=at, old_id=r.id, by_id=successor, on=on)
            )
        else:  # the chain ends at a version that is not a row here (removed, or elsewhere)
            events.append(
                MemoryMergedInto(
                    stream=doc.stream,
                    at=at,
                    entry_id=r.id,
                    into_stream=doc.stream,
                    into_id=successor,
                    on=on,
                )
            )
    for row in chain:
        gone = (removed or {}).get(row.id)
        if gone is not None:
            events.append(
                MemoryRemoved(stream=doc.stream, at=gone.at, entry_id=row.id, reason=gone.reason)
            )
    return tuple(events)


def _row_problem(row: MemoryEntry, target: Target) -> str | None:
    if row.target is not target:
        return f"entry {row.id} is a {row.target.value} entry, not {target.value}"
    if not ENTRY_ID.fullmatch(row.id):
        return f"entry id {shown(row.id)} is not valid (letters, digits, '.', '_', ':', '-')"
    problem = entry_text_problem(row.text)
    if problem is not None:
        return f"entry {row.id}: {problem}"
    if target in (Target.USER, Target.MEMORY) and row.project is not None:
        return f"entry {row.id}: {target.value} entries have no project"
    if row.project is not None and not is_safe_project_name(row.project):
        return f"entry {row.id}: project name {shown(row.project)} is not valid"
    problem = namespace_problem(row.namespace, target)
    if problem is not None:
        return f"entry {row.id}: {problem}"
    return None


def _known(doc: MemoryDocument, stored: Mapping[str, MemoryEntry], entry_id: str) -> bool:
    return entry_id in stored or entry_id in doc.removed or entry_id in doc.purged


def plan_import(
    doc: MemoryDocument,
    rows: Iterable[MemoryEntry],
    at: datetime,
    *,
    removed: Mapping[str, Removal] | None = None,
    stored_removed: Mapping[str, MemoryEntry] | None = None,
) -> ImportPlan:
    """The events that import `rows` (all of `doc`'s target) into `doc`, chain by chain.

    `removed`: the rows that were removed (restorable) in the exported store; they come back
    removed. `stored_removed`: the entries `doc` holds as removed (from its journal), so a
    second import of a removed row is `unchanged`."""
    removed = removed or {}
    gone = stored_removed or {}
    events: list[Event] = []
    added: list[str] = []
    unchanged: list[str] = []
    refused: list[Refusal] = []
    actives = {(e.key, e.project, e.namespace): e.id for e in doc.active}
    stored = {e.id: e for e in doc.all_entries()}  # one pass, not a scan per row
    stored.update(gone)
    for chain in chains(list(rows)):
        ids = tuple(r.id for r in chain)
        problem = next((p for r in chain if (p := _row_problem(r, doc.target))), None)
        if problem is not None:
            refused.append(Refusal(ids=ids, reason=problem))
            continue
        present = [r for r in chain if _known(doc, stored, r.id)]
        outside = next(
            (
                r.superseded_by
                for r in chain
                if r.superseded_by is not None
                and r.superseded_by not in ids
                and _known(doc, stored, r.superseded_by)
            ),
            None,
        )
        if not present and outside is not None:
            refused.append(
                Refusal(ids=ids, reason=f"its newer version {outside} is already in the store")
            )
            continue
        if present:
            same = all(
                stored.get(r.id) == r and ((r.id in removed) == (r.id in gone)) for r in chain
            )
            if len(present) == len(chain) and same:
                unchanged.extend(ids)
            else:
                differ = next(
                    (
                        r.id
                        for r in present
                        if stored.get(r.id) != r or (r.id in removed) != (r.id in gone)
                    ),
                    present[0].id,
                )
                refused.append(
                    Refusal(
                        ids=ids,
                        reason=f"id {differ} is already in the store with other content, history "
                        "or state (active/removed); the stored version is kept",
                    )
                )
            continue
        dup = next(
            (
                actives[(r.key, r.project, r.namespace)]
                for r in chain
                if r.active and r.id not in removed and (r.key, r.project, r.namespace) in actives
            ),
            None,
        )
        if dup is not None:
            refused.append(Refusal(ids=ids, reason=f"the same text is already stored as {dup}"))
            continue
        try:
            planned = chain_events(doc, chain, at, removed)
            numbered = stamp(doc.stream, 0, planned)
            check = fold(MemoryDocument.empty(doc.target), numbered)
            left = {i: entry for i, (entry, _) in removals(doc.target, numbered).items()}
        except InvariantViolation as e:
            refused.append(Refusal(ids=ids, reason=f"cannot recreate this history: {e}"))
            continue
        lost = _lost_fields(check, left, chain)
        if lost:
            refused.append(
                Refusal(ids=ids, reason=f"this version cannot store field(s) {', '.join(lost)}")
            )
            continue
        events.extend(planned)
        added.extend(ids)
        for r in chain:
            if r.active and r.id not in removed:
                actives[(r.key, r.project, r.namespace)] = r.id
    return ImportPlan(
        events=tuple(events),
        added=tuple(added),
        unchanged=tuple(unchanged),
        refused=tuple(refused),
    )


def _lost_fields(
    check: MemoryDocument, left: Mapping[str, MemoryEntry], chain: Sequence[MemoryEntry]
) -> list[str]:
    lost: set[str] = set()
    for r in chain:
        got = check.find(r.id) or left.get(r.id)
        for f in entry_fields():
            if got is None or getattr(got, f.name) != getattr(r, f.name):
                lost.add(f.name)
    return sorted(lost)


# -- the second seed's export format (`migrate`) -----------------------------------------

#: the second seed's scopes, mapped to this library's targets (ADR 0046)
SEED_SCOPE_HELP = (
    "global, agent:<id>, custom:<name> -> memory; user:<id> -> user; project:<x> -> project"
)


@attrs.frozen(kw_only=True)
class Migrated:
    """One record of a second-seed export as an entry, with what changed on the way."""

    entry: MemoryEntry
    source_id: str | None
    notes: tuple[str, ...] = ()


def seed_records(data: Any) -> list[Any]:
    """The memory records of a second-seed export: `{"memories": [...]}` (its `export`
    command's document) or a bare list of records."""
    if isinstance(data, dict) and isinstance(data.get("memories"), list):
        return list(data["memories"])
    if isinstance(data, list):
        return data
    raise RecordError('expected {"memories": [...]} (the second seed\'s export) or a JSON list')


def _seed_date(value: Any) -> date | None:
    """The seed's `timestamp`: epoch milliseconds (or seconds), or an ISO string."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 10_000_000_000 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC).date()
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).date()
        except ValueError:
            return None
    return None


def from_seed(record: Any, *, new_id: str, today: date) -> Migrated:
    """One second-seed record (id, text, category, scope, importance, timestamp, metadata) as
    an entry. Scopes map to targets (SEED_SCOPE_HELP); the id is kept when it fits ENTRY_ID,
    else `new_id`; a field this version's entry has no place for is named in `notes`."""
    if not isinstance(record, dict):
        raise RecordError("a memory record must be a JSON object")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise RecordError("text must be a non-empty string")
    notes: list[str] = []
    scope = record.get("scope") or "global"
    if not isinstance(scope, str):
        raise RecordError("scope must be a string")
    target, project, namespace = Target.MEMORY, None, None
    kind, _, name = scope.partition(":")
    if scope == "global":
        pass
    elif kind in ("agent", "custom"):
        namespace = scope
    elif kind == "user":
        target, namespace = Target.USER, scope
    elif kind == "project" and name:
        target, project = Target.PROJECT, name
    else:
        raise RecordError(f"scope {shown(scope)} is not one of {SEED_SCOPE_HELP}")
    source = record.get("id")
    source_id = source if isinstance(source, str) else None
    entry_id = source_id if source_id and ENTRY_ID.fullmatch(source_id) else new_id
    when = _seed_date(record.get("timestamp"))
    if when is None:
        notes.append("no readable timestamp: dated today")
        when = today
    values: dict[str, Any] = {
        "id": entry_id,
        "target": target,
        "text": clean_entry_text(text),
        "project": project,
        "category": None,
        "created": when,
        "last_referenced": when,
        "namespace": namespace,
    }
    hints = _hints()
    # the seed's `category` (preference, fact, decision, entity, other) is this library's
    # `kind` (ADR 0045); the failure `category` is another vocabulary the seed never writes
    for key, field in (("importance", "importance"), ("category", "kind")):
        if record.get(key) is None:
            continue
        try:
            values[field] = _decode(hints[field], record[key], key)
        except RecordError as e:
            notes.append(f"{key} {shown(str(record[key]))} not kept: {e}")
    return Migrated(entry=MemoryEntry(**values), source_id=source_id, notes=tuple(notes))
