"""The read port `MemoryRows` over the `memories` table of a `SqliteStorage` (ADR 0057);
`changed_since` reads the change log `memories_changes` (schema 7, ADR 0043)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING, Any, Final

from pi_hermes_memory.adapters.sqlite.search import scope_sql
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target

if TYPE_CHECKING:  # an annotation: no vector port loads with the row reader (ADR 0105)
    from pi_hermes_memory.ports.read_model import MemoryRow, RowChanges
    from pi_hermes_memory.ports.vectors import VectorScope

__all__ = ["ROW_COLUMNS", "SqliteRows", "row_of"]

#: the read-model columns `row_of` decodes, in its order (PostgreSQL reads the same ones)
ROW_COLUMNS: Final = (
    "m.id, m.target, m.text, m.project, m.category, m.namespace, m.superseded_by, "
    "m.created, m.last_referenced, m.superseded_at"
)
_ID_CHUNK: Final = 500


def _day(value: object) -> date | None:
    return date.fromisoformat(str(value)[:10]) if value else None


def row_of(values: Any) -> MemoryRow:
    """A `MemoryRow` from one result row of `ROW_COLUMNS`."""
    # the row values load with the first row read: open() builds the reader, a keyword
    # search reads none (ADR 0112)
    from pi_hermes_memory.ports.read_model import MemoryRow

    entry_id, target, text, project, category, namespace, superseded_by = values[:7]
    created, last_referenced, superseded_at = values[7:]
    return MemoryRow(
        id=str(entry_id),
        target=Target(str(target)),
        text=str(text),
        project=project,
        category=category,
        namespace=namespace,
        superseded_by=superseded_by,
        created=_day(created),
        last_referenced=_day(last_referenced),
        superseded_at=_day(superseded_at),
    )


class SqliteRows:
    def __init__(self, storage: SqliteStorage) -> None:
        self._storage = storage

    def in_scope(self, scope: VectorScope) -> list[MemoryRow]:
        if not scope.clauses:
            return []
        where, params = scope_sql(scope.as_query())
        sql = f"SELECT {ROW_COLUMNS} FROM memories AS m WHERE {where} ORDER BY m.id DESC"
        with self._storage.read() as conn:
            return [row_of(values) for values in conn.execute(sql, params)]

    def by_id(self, ids: Iterable[str]) -> dict[str, MemoryRow]:
        wanted = list(dict.fromkeys(ids))
        found: dict[str, MemoryRow] = {}
        with self._storage.read() as conn:
            for start in range(0, len(wanted), _ID_CHUNK):
                chunk = wanted[start : start + _ID_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                sql = (
                    f"SELECT {ROW_COLUMNS} FROM memories AS m "
                    f"WHERE m.id IN ({marks}) AND m.flagged IS NULL"
                )
                for values in conn.execute(sql, chunk):
                    row = row_of(values)
                    found[row.id] = row
        return {i: found[i] for i in wanted if i in found}

    def cursor(self) -> int:
        with self._storage.read() as conn:
            return int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories_changes").get)

    def changed_since(self, cursor: int) -> RowChanges:
        from pi_hermes_memory.ports.read_model import RowChanges

        with self._storage.read() as conn:
            entries: list[Any] = conn.execute(
                "SELECT seq, memory_rowid FROM memories_changes WHERE seq > ? ORDER BY seq",
                (cursor,),
            ).fetchall()
            if not entries:
                return RowChanges(cursor=cursor, ids=frozenset())
            newest = int(entries[-1][0])
            # the trim deletes the oldest entries only (schema 7)
            if int(entries[0][0]) > cursor + 1:
                return RowChanges(cursor=newest, ids=None)
            rowids = sorted({int(rowid) for _, rowid in entries})
            ids: set[str] = set()
            for start in range(0, len(rowids), _ID_CHUNK):
                chunk = rowids[start : start + _ID_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                found = conn.execute(
                    f"SELECT rowid, id FROM memories WHERE rowid IN ({marks})", chunk
                ).fetchall()
                if len(found) < len(chunk):  # a removed row: its id is gone with it
                    return RowChanges(cursor=newest, ids=None)
                ids.update(str(entry_id) for _, entry_id in found)
            return RowChanges(cursor=newest, ids=frozenset(ids))
