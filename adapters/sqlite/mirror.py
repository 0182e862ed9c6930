"""The `memories` table (and its FTS index) as a mirror of the memory events: projecting each
event as it is appended (`SqliteProjection`), and repairing the table to the folded journal
state (`rebuild_rows`, ADR 0013).

Row changes go through ordinary INSERT/UPDATE/DELETE, so the triggers keep the external-content
FTS index in step; the index is then checked and rebuilt from the rows if it still disagrees.
`storage.py` imports this module with the first projection a unit of work asks for: a read that
only asks versions and the ledger loads neither the events nor the row model (ADR 0105).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, assert_never

import apsw
from pi_hermes_memory.adapters.sqlite.fts import grams
from pi_hermes_memory.adapters.sqlite.storage import SqliteJournal
from pi_hermes_memory.adapters.sqlite.write_index import SqliteWriteIndex
from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.document import MemoryDocument, lineage_of
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
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

if TYPE_CHECKING:
    from pi_hermes_memory.ports.memory import RebuildReport

__all__ = ["SqliteProjection", "rebuild_rows"]

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
    # a repair's plan and report load with the first repair, not with every write (ADR 0111)
    from pi_hermes_memory.memory.mirror import RepairTally, in_scope, plan_mirror

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


class SqliteProjection:
    """The `memories` table (active rows + superseded history) and its FTS index.

    It executes the row changes of `pi_hermes_memory.domain.memory.rows` (the one place of the
    event →
    row semantics); the triggers keep the FTS index in step and `grams` is derived here.
    """

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn
        #: the lineage of the row the event being applied writes (`_lineage_of`)
        self._lineage: tuple[str, str | None, int | None] | None = None
        #: whether a change since the storage last merged the FTS index wrote to it (ADR 0102)
        self.fts_written = False

    def apply(self, events: Sequence[Event]) -> None:
        for event in events:
            self._apply(event)
        SqliteWriteIndex(self._conn).apply(events)  # same transaction (ADR 0084)

    def rebuild(self, documents: Sequence[MemoryDocument]) -> RebuildReport:
        """Repair the rows of these documents' targets to their folded state (ADR 0013), and
        their write index (ADR 0084) where the document is the journal's head."""
        report = rebuild_rows(self._conn, documents)
        self.fts_written = True
        index = SqliteWriteIndex(self._conn)
        journal = SqliteJournal(self._conn)
        for doc in documents:
            stale = (index.version(doc.stream) or 0) != doc.version
            if stale and doc.version == journal.version(doc.stream):
                index.rebuild(doc)
        return report

    def _apply(self, event: Event) -> None:
        self._lineage = self._lineage_of(event)
        try:
            for change in projected(event):
                self._execute(change)
            # by its tag: a check by class would build the move's class for every event (ADR 0111)
            if event.TAG == "memory.moved_in.v1" and self._lineage is not None:
                # a move updates the row in place; its lineage travels with the event
                row_id, memory_id, version_no = self._lineage
                self._conn.execute(
                    "UPDATE memories SET memory_id = ?, version_no = ? WHERE id = ?",
                    (memory_id, version_no, row_id),
                )
        finally:
            self._lineage = None

    def _lineage_of(self, event: Event) -> tuple[str, str | None, int | None] | None:
        """The (row id, memory id, version number) the row `event` writes gets (ADR 0079):
        the fold's rule (`lineage_of`, a replace continues its old row's memory), read from the
        old row for a replace (unknown, None, when that row's is)."""
        # one check per kind, in this order: an add builds no other event class (ADR 0111)
        if (
            isinstance(event, ev.MemoryAdded)  # noqa: SIM101 (one tuple builds all three)
            or isinstance(event, ev.MemoryRestored)
            or isinstance(event, ev.MemoryMovedIn)
        ):
            memory_id, version_no = lineage_of(event)
            return event.entry_id, memory_id or event.entry_id, version_no
        if isinstance(event, ev.MemoryReplaced):
            old = self._conn.execute(
                "SELECT memory_id, version_no FROM memories WHERE id = ?", (event.old_id,)
            ).fetchone()
            if old is None or old[0] is None or old[1] is None:
                return event.new_id, None, None
            return event.new_id, str(old[0]), int(old[1]) + 1
        return None  # the other events write no new row's lineage

    def _execute(self, change: RowChange) -> None:
        c = self._conn
        match change:
            case InsertRow():
                scope = None
                if change.scope_of is not None:
                    found = c.execute(
                        "SELECT target, namespace FROM memories WHERE id = ?", (change.scope_of,)
                    ).fetchone()
                    scope = None if found is None else (Target(found[0]), found[1])
                self._insert(change.resolved(scope))
            case UpsertRow():
                values = _row_values(change.row)
                assignments = ", ".join(f"{column} = ?" for column in change.columns)
                c.execute(
                    f"UPDATE memories SET {assignments} WHERE id = ?",
                    (*(values[column] for column in change.columns), change.row.id),
                )
                self.fts_written = self.fts_written or "text" in change.columns
                if c.changes() == 0:
                    self._insert(InsertRow(row=change.row).resolved(None))
            case SupersedeRow():
                c.execute(
                    "UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ?",
                    (change.by, change.at.isoformat(), change.id),
                )
            case ReferenceRow():
                c.execute(
                    "UPDATE memories SET last_referenced = MAX(last_referenced, ?) WHERE id = ?",
                    (change.on.isoformat(), change.id),
                )
            case DeleteRows():  # their vectors go with them; the FTS rows by the trigger
                self.fts_written = True
                c.executemany("DELETE FROM memories WHERE id = ?", [(i,) for i in change.ids])
            case _:
                assert_never(change)

    def _insert(self, row: Row | None) -> None:
        if row is None:
            return  # not stored (an unattributed project row lives in Markdown only)
        self.fts_written = True
        values = _row_values(row)
        lineage = self._lineage
        if lineage is not None and lineage[0] == row.id:
            values["memory_id"], values["version_no"] = lineage[1], lineage[2]
        c = self._conn
        c.execute(
            f"INSERT INTO memories (id, {', '.join(values)}, grams) "
            f"VALUES (?{', ?' * len(values)}, ?)",
            (row.id, *values.values(), grams(row.text)),
        )


def _row_values(row: Row) -> dict[str, object]:
    """The stored form of a row's columns (dates as ISO text, enums as their values)."""
    return {
        "target": row.target.value,
        "project": row.project,
        "namespace": row.namespace,
        "category": row.category.value if row.category else None,
        "text": row.text,
        "created": row.created.isoformat(),
        "last_referenced": row.last_referenced.isoformat(),
        "flagged": row.flagged,
    }
