"""Repairing the `memories` table (and its FTS index) to the folded journal state (ADR 0013).

Row changes go through ordinary INSERT/UPDATE/DELETE, so the triggers keep the external-content
FTS index in step; the index is then checked and rebuilt from the rows if it still disagrees.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
from pi_hermes_memory.adapters.sqlite.fts import grams
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import MemoryEntry
from pi_hermes_memory.memory.mirror import RepairTally, in_scope, plan_mirror
from pi_hermes_memory.ports.memory import RebuildReport

__all__ = ["rebuild_rows"]

# every column the projection writes (embedding and embedding_model are left alone, except
# that a repair rewriting a row's text clears its now stale vector)
_COLUMNS = (
    "target",
    "project",
    "category",
    "namespace",
    "text",
    "grams",
    "created",
    "last_referenced",
    "superseded_by",
    "superseded_at",
    "flagged",
    "memory_id",
    "version_no",
)
_TARGET, _LAST = _COLUMNS.index("target"), _COLUMNS.index("last_referenced")
_TEXT = _COLUMNS.index("text")
_SUPERSEDED_BY = _COLUMNS.index("superseded_by")
_MEMORY_ID = _COLUMNS.index("memory_id")
_LINEAGE = slice(_MEMORY_ID, _MEMORY_ID + 2)  # memory_id, version_no: the last two columns
_Row = tuple[object, ...]


def _values(entry: MemoryEntry, have: _Row | None) -> _Row:
    last = entry.last_referenced.isoformat()
    current = None if have is None else have[_LAST]
    if isinstance(current, str) and current > last:
        last = current  # never moved back: a merge references the survivor in the mirror only
    return (
        entry.target.value,
        entry.project,
        entry.category.value if entry.category else None,
        entry.namespace,
        entry.text,
        grams(entry.text),
        entry.created.isoformat(),
        last,
        entry.superseded_by,
        entry.superseded_at.isoformat() if entry.superseded_at else None,
        entry.flagged,
        entry.stable_id,  # the lineage (ADR 0079): a repair fills what older rows lack
        entry.version_no,
    )


def rebuild_rows(conn: apsw.Connection, documents: Sequence[MemoryDocument]) -> RebuildReport:
    """Inside the caller's transaction: make the rows equal to `documents`' state."""
    plan = plan_mirror(documents)
    tally = RepairTally(plan)
    columns = ", ".join(_COLUMNS)
    current: dict[str, _Row] = {
        str(row[0]): tuple(row[1:]) for row in conn.execute(f"SELECT id, {columns} FROM memories")
    }
    for entry_id, entry in plan.rows.items():
        have = current.get(entry_id)
        want = _values(entry, have)
        if (
            have is not None
            and have[_LINEAGE] == (None, None)
            and have[:_MEMORY_ID] == want[:_MEMORY_ID]
        ):
            # an unknown lineage (a row of before schema 9, a replace of one, a row a retag
            # brought in) is no drift: filled, not counted (ADR 0079)
            conn.execute(
                "UPDATE memories SET memory_id = ?, version_no = ? WHERE id = ?",
                (*want[_LINEAGE], entry_id),
            )
            continue
        if have is None:
            conn.execute(
                f"INSERT INTO memories (id, {columns}) VALUES (?{', ?' * len(_COLUMNS)})",
                (entry_id, *want),
            )
            tally.count(entry.target, "added")
        elif have != want:
            assignments = ", ".join(f"{c} = ?" for c in _COLUMNS)
            if have[_TEXT] != want[_TEXT]:
                # the vector cache belongs to the old text (ADR 0015); otherwise it is kept
                assignments += ", embedding = NULL, embedding_model = NULL"
            conn.execute(f"UPDATE memories SET {assignments} WHERE id = ?", (*want, entry_id))
            tally.count(entry.target, "updated")
    for entry_id, have in current.items():
        target = str(have[_TARGET])
        if entry_id in plan.rows or not in_scope(plan, entry_id, target):
            continue
        if have[_SUPERSEDED_BY] is None:
            conn.execute("DELETE FROM memories WHERE id = ?", (entry_id,))
            tally.count(target, "removed")
        else:  # history is never deleted by a repair
            tally.count(target, "kept_history")
    return tally.report(fts_rebuilt=_repair_fts(conn))


def fts_consistent(conn: apsw.Connection) -> bool:
    """Whether the index is sound and matches the rows (`rank = 1` compares it with the
    external content table; the plain check looks at the index alone)."""
    try:
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    except apsw.CorruptError:
        return False
    return True


def _repair_fts(conn: apsw.Connection) -> bool:
    if fts_consistent(conn):
        return False
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
    return True
