"""Store-wide porting: export, import, migrate (second seed), stats and bulk delete (ADR 0046).

Export reads every document whole (all projects and scopes: it is a backup, not a session
view) and streams one JSON line per entry, superseded history included. Import goes through
the write path (`MemoryService.run`: journal, Markdown replica, search mirror, history), one
chain at a time with its ids and dates (`domain.porting.plan_import`). The content scanner
applies to imported text; refused rows are reported, never written.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.decide import Decision
from pi_hermes_memory.domain.memory.model import GLOBAL_NAMESPACE, MemoryEntry, Target
from pi_hermes_memory.domain.memory.porting import (
    ImportPlan,
    Refusal,
    Removal,
    chains,
    check_header,
    from_record,
    from_seed,
    header,
    plan_import,
    seed_records,
    to_record,
    with_lineage,
)
from pi_hermes_memory.domain.memory.restore import restorable
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import InvalidArgument, RecordError
from pi_hermes_memory.tools.registry import MAX_BATCH_OPERATIONS

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory
    from pi_hermes_memory.memory.service import MemoryService
    from pi_hermes_memory.ports.store import UnitOfWork
    from pi_hermes_memory.ports.vectors import ReembedProgress
    from pi_hermes_memory.results import WriteResult


def _service(memory: Memory) -> MemoryService:
    return memory._service


def entry_scope(entry: MemoryEntry) -> str:
    """The scope name of a row: its namespace, `project:<name>`, or `global`."""
    if entry.namespace is not None:
        return entry.namespace
    if entry.project is not None:
        return f"project:{entry.project}"
    return GLOBAL_NAMESPACE


def _rows(memory: Memory, targets: Iterable[Target]) -> Iterator[MemoryEntry]:
    service = _service(memory)
    for target in targets:
        doc = service.document(target)
        yield from doc.active
        yield from doc.history


def export_lines(
    memory: Memory,
    *,
    targets: Sequence[Target] | None = None,
    scopes: Sequence[str] = (),
    category: str | None = None,
) -> Iterator[str]:
    """The export file, line by line (header first); filters keep whole supersede chains
    only as far as their rows match (a chain's versions share its scope). `category`: a
    failure category or a second-seed category (the entry's `kind`)."""
    service = _service(memory)
    yield json.dumps(header(service.clock.now()), ensure_ascii=False)
    for entry in _rows(memory, targets or list(Target)):
        if scopes and entry_scope(entry) not in scopes:
            continue
        if category is not None and not _of_category(entry, category):
            continue
        yield json.dumps(to_record(entry), ensure_ascii=False)
    for target in targets or list(Target):  # removed entries: `restore` can bring them back
        for gone in reversed(service.removed(target, every_scope=True)):
            entry = gone.entry
            if scopes and entry_scope(entry) not in scopes:
                continue
            if category is not None and not _of_category(entry, category):
                continue
            removal = Removal(reason=gone.reason, at=gone.removed_at)
            record = {**to_record(entry), REMOVED_KEY: removal.to_json()}
            yield json.dumps(record, ensure_ascii=False)


def _of_category(entry: MemoryEntry, category: str) -> bool:
    """Whether `entry` has this failure category or this second-seed category (`kind`)."""
    return category in (entry.category, entry.kind)


#: the key of an export line that marks a removed (restorable) entry; not an entry field
REMOVED_KEY = "removed"


@attrs.frozen(kw_only=True)
class ExportFile:
    rows: list[MemoryEntry]
    #: the ids of rows that were removed (restorable) in the exported store
    removed: dict[str, Removal]


def read_export(lines: Iterable[str]) -> ExportFile:
    """The entries of an export file; InvalidArgument names the first bad line (nothing is
    written before the whole file was read)."""
    rows: list[MemoryEntry] = []
    removed: dict[str, Removal] = {}
    seen: set[str] = set()
    first = True
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if first:
                check_header(data)
                # written before ADR 0074: no stable ids, derived from the chains below
                legacy = "memory_id" not in (data.get("fields") or ())
                first = False
                continue
            if not isinstance(data, dict):
                raise RecordError("an entry line must be a JSON object")
            removal = Removal.from_json(data.pop(REMOVED_KEY)) if REMOVED_KEY in data else None
            entry = from_record(data)
            if removal is not None:
                removed[entry.id] = removal
        except json.JSONDecodeError as e:
            raise InvalidArgument(
                f"line {number} is not JSON (column {e.colno}: {e.msg}); nothing was imported"
            ) from None
        except RecordError as e:
            raise InvalidArgument(f"line {number}: {e}; nothing was imported") from None
        except (TypeError, ValueError) as e:  # an attrs validator of a newer field
            raise InvalidArgument(f"line {number}: {e}; nothing was imported") from None
        if entry.id in seen:
            raise InvalidArgument(f"line {number}: id {entry.id} appears twice; nothing imported")
        seen.add(entry.id)
        rows.append(entry)
    if first:
        raise InvalidArgument("the file is empty: no export header; nothing was imported")
    return ExportFile(rows=with_lineage(rows) if legacy else rows, removed=removed)


@attrs.frozen(kw_only=True)
class ImportReport:
    dry_run: bool
    added: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def status(self) -> Status:
        if self.dry_run:
            return Status.PREVIEW
        if self.refused:
            return Status.PARTIAL if self.added else Status.FAILED
        return Status.ADDED if self.added else Status.NOOP

    @property
    def message(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        text = f"{verb} {len(self.added)} entries, {len(self.unchanged)} already in the store"
        if self.refused:
            text += f", refused {sum(len(r.ids) for r in self.refused)}"
        if not self.dry_run and not self.added and not self.refused:
            text += ": nothing changed"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "success": not self.refused,
            "status": self.status.value,
            "message": self.message,
            "added": list(self.added),
            "unchanged": list(self.unchanged),
            "refused": [{"ids": list(r.ids), "reason": r.reason} for r in self.refused],
            "notes": list(self.notes),
        }


def _scanned(rows: Sequence[MemoryEntry]) -> tuple[list[MemoryEntry], list[Refusal], list[str]]:
    """Rows after the content scanner: a chain with a blocked version is refused whole;
    stripped text (invisible characters) is kept stripped, with a note."""
    from pi_hermes_memory.domain.scanning.scanner import scan

    kept: list[MemoryEntry] = []
    refused: list[Refusal] = []
    notes: list[str] = []
    for chain in chains(rows):
        out: list[MemoryEntry] = []
        blocked: str | None = None
        for row in chain:
            result = scan(row.text)
            if result.blocked:
                blocked = f"entry {row.id}: {result.message()}"
                break
            if result.text != row.text:
                notes.append(f"entry {row.id}: {result.message()}")
                row = attrs.evolve(row, text=result.text)
            out.append(row)
        if blocked is not None:
            refused.append(Refusal(ids=tuple(r.id for r in chain), reason=blocked))
        else:
            kept.extend(out)
    return kept, refused, notes


def import_entries(
    memory: Memory,
    rows: Sequence[MemoryEntry],
    *,
    scopes: Sequence[str] = (),
    dry_run: bool = False,
    notes: Sequence[str] = (),
    removed: Mapping[str, Removal] | None = None,
    vectors: Mapping[str, Sequence[float]] | None = None,
    progress: Callable[[ReembedProgress], None] | None = None,
) -> ImportReport:
    """Import `rows` (only those of `scopes` when given) with their ids, dates and history.

    `vectors`: vectors by entry id, of the configured embedding model, stored for the rows
    this import adds instead of embedding them again (the second seed's table, ADR 0075).

    Idempotent by id: a chain already stored, equal, is `unchanged`. A chain with an id the
    store holds with other content is refused and reported (the stored version is kept:
    an acknowledged write is never replaced by an import). `progress` follows the embedding
    of the imported rows (the long part of a large import), as `Memory.reembed`'s."""
    service = _service(memory)
    if scopes:
        rows = [r for r in rows if entry_scope(r) in scopes]
    if not dry_run:
        memory._writable()  # the read-only check (ADR 0023)
    clean, refused, scan_notes = _scanned(rows)
    by_target: dict[Target, list[MemoryEntry]] = {}
    for row in clean:
        by_target.setdefault(row.target, []).append(row)
    now = service.clock.now()
    plans: dict[Target, ImportPlan] = {}
    stored_removed: dict[Target, dict[str, MemoryEntry]] = {}
    if dry_run:
        for target, group in by_target.items():
            gone = service.removed(target, every_scope=True)
            stored_removed[target] = {r.entry.id: r.entry for r in gone}
            plans[target] = plan_import(
                service.document(target),
                group,
                now,
                removed=removed,
                stored_removed=stored_removed[target],
            )
    elif by_target:

        def read(uow: UnitOfWork, docs: dict[Target, Any]) -> None:
            for target in by_target:
                events = uow.journal.read(docs[target].stream, upto=docs[target].version)
                gone = restorable(target, events)
                stored_removed[target] = {r.entry.id: r.entry for r in gone}

        def plan(docs: dict[Target, Any]) -> list[tuple[Target, Decision]]:
            out: list[tuple[Target, Decision]] = []
            for target, group in by_target.items():
                plans[target] = plan_import(
                    docs[target],
                    group,
                    now,
                    removed=removed,
                    stored_removed=stored_removed[target],
                )
                status = Status.ADDED if plans[target].events else Status.NOOP
                out.append(
                    (target, Decision(status=status, message="import", events=plans[target].events))
                )
            return out

        service.run(list(by_target), plan, read=read)
        added = [i for p in plans.values() for i in p.added]
        if added and service.embeddings is not None and vectors:
            reused = _store_vectors(service, clean, set(added), vectors)
            scan_notes.append(f"{reused} vectors reused from the source")
        if added and service.embeddings is not None:
            try:
                memory.reembed(progress)
            except Exception as e:
                scan_notes.append(f"vectors not computed now ({e}); run reembed")
    return ImportReport(
        dry_run=dry_run,
        added=tuple(i for p in plans.values() for i in p.added),
        unchanged=tuple(i for p in plans.values() for i in p.unchanged),
        refused=(*refused, *(r for p in plans.values() for r in p.refused)),
        notes=(*notes, *scan_notes),
    )


def _store_vectors(
    service: MemoryService,
    rows: Sequence[MemoryEntry],
    added: set[str],
    vectors: Mapping[str, Sequence[float]],
) -> int:
    """Store the given vectors of the added rows (after COMMIT); the number stored."""
    import numpy as np

    embeddings = service.embeddings
    assert embeddings is not None
    pairs = [(e.id, e.text) for e in rows if e.id in added and e.id in vectors]
    if not pairs:
        return 0
    matrix = np.asarray([vectors[i] for i, _ in pairs], dtype=np.float32)
    return embeddings.store(pairs, matrix)


def migrate_seed(
    memory: Memory,
    data: Any,
    *,
    new_id: Callable[[], str],
    dry_run: bool = False,
    into_scope: str | None = None,
    progress: Callable[[ReembedProgress], None] | None = None,
) -> tuple[ImportReport, dict[str, str]]:
    """Import a second-seed export (`{"memories": [...]}`); returns the report and the id
    mapping (seed id -> entry id) for the records that got a new id. `into_scope`: every
    record goes to this scope instead of its own (the second seed's `import --scope`)."""
    service = _service(memory)
    today = service.clock.now().date()
    rows: list[MemoryEntry] = []
    notes: list[str] = []
    mapping: dict[str, str] = {}
    try:
        records = seed_records(data)
    except RecordError as e:
        raise InvalidArgument(f"{e}; nothing was imported") from None
    for number, record in enumerate(records, start=1):
        if into_scope is not None and isinstance(record, dict):
            record = {**record, "scope": into_scope}
        try:
            migrated = from_seed(record, new_id=new_id(), today=today)
        except (RecordError, InvariantViolation, ValueError) as e:
            raise InvalidArgument(f"memory {number}: {e}; nothing was imported") from None
        entry = migrated.entry
        if migrated.source_id != entry.id:
            mapping[migrated.source_id or f"#{number}"] = entry.id
        notes.extend(f"memory {number} ({entry.id}): {n}" for n in migrated.notes)
        rows.append(entry)
    report = import_entries(memory, rows, dry_run=dry_run, notes=notes, progress=progress)
    return report, mapping


# -- stats and bulk delete ------------------------------------------------------------------


def stats(memory: Memory) -> dict[str, Any]:
    """Counts per target, scope and project; superseded and removed rows; characters of the
    active rows against each target's limit; vectors of the current model (embeddings on)."""
    service = _service(memory)
    targets: dict[str, Any] = {}
    scopes: Counter[str] = Counter()
    projects: Counter[str] = Counter()
    for target in Target:
        doc = service.document(target)
        targets[target.value] = {
            "active": len(doc.active),
            "superseded": len(doc.history),
            # what `restore` lists (every scope): `doc.removed` also holds the ids that moved
            # to another target (promote, demote) or that a merge points at, no removals
            "removed": len(service.removed(target, every_scope=True)),
            "chars": sum(len(e.text) for e in doc.active),
            "limit": service.settings.limits[target],
        }
        for e in doc.active:
            scopes[entry_scope(e)] += 1
            if e.project is not None:
                projects[e.project] += 1
    vectors: dict[str, Any] | None = None
    if service.embeddings is not None:
        rows, current = service.embeddings.coverage()
        vectors = {"model": service.embeddings.model_id, "rows": rows, "with_vector": current}
    return {
        "targets": targets,
        "scopes": dict(sorted(scopes.items())),
        "projects": dict(sorted(projects.items())),
        "vectors": vectors,
    }


def remove_rows(
    memory: Memory, rows: Sequence[MemoryEntry]
) -> list[tuple[MemoryEntry, WriteResult]]:
    """Remove `rows` by id as batches (one transaction and one Markdown write per document
    and batch, instead of one per entry; project rows and memory/user rows in batches of
    their own, as a batch requires); each row paired with its own outcome, in `rows` order."""
    outcome: dict[int, WriteResult] = {}
    for project in (False, True):
        group = [i for i, e in enumerate(rows) if (e.target is Target.PROJECT) is project]
        for start in range(0, len(group), MAX_BATCH_OPERATIONS):
            chunk = group[start : start + MAX_BATCH_OPERATIONS]
            done = memory.batch(
                [
                    {"action": "remove", "target": rows[i].target.value, "id": rows[i].id}
                    for i in chunk
                ]
            )
            outcome.update(zip(chunk, done.results, strict=True))
    return [(e, outcome[i]) for i, e in enumerate(rows)]


def bulk_candidates(
    memory: Memory, scopes: Sequence[str], *, before: date | None = None
) -> list[MemoryEntry]:
    """The active rows of `scopes` (created before `before`, when given) this session sees."""
    visible = _service(memory).settings.scope.visible
    return [e for e in _bulk_rows(memory, scopes, before) if visible(e)]


def bulk_hidden(
    memory: Memory, scopes: Sequence[str], *, before: date | None = None
) -> dict[str, int]:
    """Per scope, how many of its matching active rows this session does not see (another
    agent's scope, another project): `delete-bulk` leaves them and says so."""
    visible = _service(memory).settings.scope.visible
    hidden: Counter[str] = Counter(
        entry_scope(e) for e in _bulk_rows(memory, scopes, before) if not visible(e)
    )
    return dict(sorted(hidden.items()))


def _bulk_rows(memory: Memory, scopes: Sequence[str], before: date | None) -> Iterator[MemoryEntry]:
    if not scopes:
        raise InvalidArgument("delete-bulk needs at least one --scope")
    for e in _rows(memory, list(Target)):
        if e.active and entry_scope(e) in scopes and (before is None or e.created < before):
            yield e
