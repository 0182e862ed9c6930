"""Repairing the `memories` table to the folded journal state (ADR 0013) on PostgreSQL; the
plan and the tally are the SQLite repair's (`pi_hermes_memory.memory.mirror`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_hermes_memory.adapters.postgres.keys import row_keys
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import MemoryEntry
from pi_hermes_memory.memory.mirror import RepairTally, in_scope, plan_mirror
from pi_hermes_memory.ports.memory import RebuildReport

_COLUMNS = (
    "target",
    "project",
    "category",
    "namespace",
    "text",
    "created",
    "last_referenced",
    "superseded_by",
    "superseded_at",
    "flagged",
)
_TARGET, _LAST = _COLUMNS.index("target"), _COLUMNS.index("last_referenced")
_TEXT, _SUPERSEDED_BY = _COLUMNS.index("text"), _COLUMNS.index("superseded_by")
_Row = tuple[object, ...]


def _values(entry: MemoryEntry, have: _Row | None) -> _Row:
    last = entry.last_referenced.isoformat()
    current = None if have is None else have[_LAST]
    if isinstance(current, str) and current > last:
        last = current  # never moved back (see adapters/sqlite/mirror.py)
    return (
        entry.target.value,
        entry.project,
        entry.category.value if entry.category else None,
        entry.namespace,
        entry.text,
        entry.created.isoformat(),
        last,
        entry.superseded_by,
        entry.superseded_at.isoformat() if entry.superseded_at else None,
        entry.flagged,
    )


def rebuild_rows(conn: Any, documents: Sequence[MemoryDocument]) -> RebuildReport:
    """Inside the caller's transaction: make the rows equal to `documents`' state."""
    plan = plan_mirror(documents)
    tally = RepairTally(plan)
    columns = ", ".join(_COLUMNS)
    current: dict[str, _Row] = {
        str(row[0]): tuple(row[1:])
        for row in conn.execute(f"SELECT id, {columns} FROM memories").fetchall()
    }
    for entry_id, entry in plan.rows.items():
        have = current.get(entry_id)
        want = _values(entry, have)
        keys, count = row_keys(entry.text)
        if have is None:
            conn.execute(
                f"INSERT INTO memories (id, {columns}, keys, nkeys) "
                f"VALUES (%s{', %s' * len(_COLUMNS)}, array_to_tsvector(%s::text[]), %s)",
                (entry_id, *want, keys, count),
            )
            tally.count(entry.target, "added")
        elif have != want:
            assignments = ", ".join(f"{c} = %s" for c in _COLUMNS)
            assignments += ", keys = array_to_tsvector(%s::text[]), nkeys = %s"
            if have[_TEXT] != want[_TEXT]:  # the vector belongs to the old text (ADR 0015)
                assignments += ", embedding = NULL, embedding_model = NULL"
            conn.execute(
                f"UPDATE memories SET {assignments} WHERE id = %s", (*want, keys, count, entry_id)
            )
            tally.count(entry.target, "updated")
    for entry_id, have in current.items():
        target = str(have[_TARGET])
        if entry_id in plan.rows or not in_scope(plan, entry_id, target):
            continue
        if have[_SUPERSEDED_BY] is None:
            conn.execute("DELETE FROM memories WHERE id = %s", (entry_id,))
            tally.count(target, "removed")
        else:  # history is never deleted by a repair
            tally.count(target, "kept_history")
    return tally.report(fts_rebuilt=False)
