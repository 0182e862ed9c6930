"""Migrate the rows of the second seed's LanceDB table into this store (ADR 0075).

The rows arrive as the seed's records (the keys of its JSON export) with their vectors; the
reader is an adapter (`adapters/files/lancedb_table.py`). Unlike a JSON export, a table is
migrated row by row: a malformed row, a duplicate id or a row the content scanner refuses is
skipped and named in the report, and the rest is imported. Ids are kept when they fit this
store's ids; any other id gets an id derived from it (the same on every run), so a second run
imports nothing. The vectors are reused when the table's model (`source_model`) and
dimension are the configured embedding's, else the imported rows are re-embedded (said in
the report's notes).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.model import MemoryEntry
from pi_hermes_memory.domain.memory.porting import Refusal, from_seed
from pi_hermes_memory.errors import RecordError
from pi_hermes_memory.memory.porting import ImportReport, import_entries

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory
    from pi_hermes_memory.ports.vectors import ReembedProgress

#: the seed's placeholder row that fixes the schema of a new table (deleted right after)
SCHEMA_ROW = "__schema__"
#: metadata keys that mean "this memory is no longer current" in the seed (smart metadata)
_RETIRED_KEYS = ("invalidated_at", "superseded_by")
#: metadata keys read into the entry; the others have no place in this store
_READ_KEYS = frozenset({"last_accessed_at", *_RETIRED_KEYS, "state"})


def derived_id(source_id: str) -> str:
    """The id of a row whose own id does not fit this store's ids: stable across runs."""
    return "lancedb-" + hashlib.sha256(source_id.encode("utf-8")).hexdigest()[:24]


def _metadata(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The metadata object, or None and why it cannot be read."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}, None
    if not isinstance(value, str):
        return None, "metadata is not a JSON string"
    try:
        data = json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return None, "metadata is not valid JSON"
    if not isinstance(data, dict):
        return None, "metadata is not a JSON object"
    return data, None


def _date_of(value: Any) -> date | None:
    """An epoch timestamp (milliseconds, or seconds as the seed's old rows) as a date."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return None
    seconds = value / 1000 if value >= 1_000_000_000_000 else value
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).date()
    except (OverflowError, OSError, ValueError):
        return None


@attrs.frozen(kw_only=True)
class VectorPlan:
    """Whether the table's vectors are reused, and the line the report shows."""

    reuse: bool
    note: str


def vector_plan(
    *,
    embeddings_model: str | None,
    embeddings_dimension: int | None,
    source_model: str | None,
    source_where: str,
    table_dimension: int | None,
) -> VectorPlan:
    """Reuse the table's vectors only when they are the configured model's (same name and,
    when both are known, the same dimension); anything else re-embeds."""
    if embeddings_model is None:
        return VectorPlan(
            reuse=False, note="embeddings are off: the table's vectors are not imported"
        )
    if table_dimension is None:
        return VectorPlan(
            reuse=False, note=f"the table has no vectors: re-embedding with {embeddings_model}"
        )
    if source_model is None:
        return VectorPlan(
            reuse=False,
            note=f"the table's embedding model is unknown (give --source-model, or the "
            f"openclaw.json embedding.model): re-embedding with {embeddings_model}",
        )
    names = {embeddings_model, embeddings_model.partition("/")[2]}
    if source_model not in names:
        return VectorPlan(
            reuse=False,
            note=f"the table's vectors are of {source_model} ({source_where}), the configured "
            f"model is {embeddings_model}: re-embedding",
        )
    if embeddings_dimension is not None and embeddings_dimension != table_dimension:
        return VectorPlan(
            reuse=False,
            note=f"the table's vectors have {table_dimension} dimensions, the configured "
            f"{embeddings_model} {embeddings_dimension}: re-embedding",
        )
    return VectorPlan(
        reuse=True,
        note=f"the table's vectors are reused ({source_model}, {table_dimension} dimensions, "
        f"{source_where})",
    )


def migrate_table(
    memory: Memory,
    records: Sequence[Any],
    vectors: Sequence[Sequence[float] | None],
    *,
    dimension: int | None,
    source_model: str | None = None,
    source_where: str = "--source-model",
    dry_run: bool = False,
    into_scope: str | None = None,
    progress: Callable[[ReembedProgress], None] | None = None,
) -> tuple[ImportReport, dict[str, str]]:
    """Import the table's rows; the report (skipped rows as `refused`, with the reason) and
    the id mapping (table id -> entry id) of the rows that got a derived id."""
    service = memory._service
    today = service.clock.now().date()
    rows: list[MemoryEntry] = []
    skipped: list[Refusal] = []
    notes: list[str] = []
    mapping: dict[str, str] = {}
    by_id: dict[str, Sequence[float]] = {}
    unkept: Counter[str] = Counter()
    seen: set[str] = set()
    for number, (raw, vector) in enumerate(zip(records, vectors, strict=True), start=1):
        source = raw.get("id") if isinstance(raw, dict) else None
        label = source if isinstance(source, str) and source else f"row {number}"
        if source == SCHEMA_ROW:
            continue  # the seed's own placeholder, never a memory
        if label in seen:
            skipped.append(Refusal(ids=(label,), reason="the id appears twice in the table"))
            continue
        seen.add(label)
        meta, problem = _metadata(raw.get("metadata"))
        if meta is None:
            notes.append(f"{label}: {problem}; metadata not kept")
            meta = {}
        retired = next((k for k in _RETIRED_KEYS if meta.get(k)), None)
        if retired is None and meta.get("state") in ("archived", "superseded", "invalidated"):
            retired = "state"
        if retired is not None:
            skipped.append(
                Refusal(
                    ids=(label,),
                    reason=f"no longer current in the source (metadata {retired} "
                    f"{json.dumps(meta[retired])[:60]}); not imported as an active memory",
                )
            )
            continue
        unkept.update(k for k in meta if k not in _READ_KEYS)
        record = {k: raw.get(k) for k in ("id", "text", "category", "scope", "importance")}
        if into_scope is not None:
            record["scope"] = into_scope
        created = _date_of(raw.get("timestamp"))
        record["timestamp"] = created.isoformat() if created is not None else None
        new_id = derived_id(label)
        try:
            migrated = from_seed(record, new_id=new_id, today=today)
        except (RecordError, InvariantViolation, ValueError) as e:
            skipped.append(Refusal(ids=(label,), reason=f"malformed row ({e})"))
            continue
        entry = migrated.entry
        used = _date_of(meta.get("last_accessed_at"))
        if used is not None and used > entry.created:
            entry = attrs.evolve(entry, last_referenced=used)
        if entry.id != label:
            mapping[label] = entry.id
        notes.extend(f"{label}: {n}" for n in migrated.notes)
        if vector is not None:
            by_id[entry.id] = vector
        rows.append(entry)
    if unkept:
        keys = ", ".join(f"{k} ({n})" for k, n in sorted(unkept.items()))
        notes.append(f"metadata keys with no place in this store, not kept: {keys}")
    embeddings = service.embeddings
    plan = vector_plan(
        embeddings_model=embeddings.model_id if embeddings is not None else None,
        embeddings_dimension=embeddings.dimension if embeddings is not None else None,
        source_model=source_model,
        source_where=source_where,
        table_dimension=dimension,
    )
    notes.append(plan.note)
    report = import_entries(
        memory,
        rows,
        dry_run=dry_run,
        notes=notes,
        vectors=by_id if plan.reuse else None,
        progress=progress,
    )
    report = attrs.evolve(report, refused=(*skipped, *report.refused))
    return report, mapping
