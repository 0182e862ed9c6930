"""The read port `MemoryRows` over the `memories` table of a `PgStorage` (ADR 0057, ADR 0050).

`in_scope` and `by_id` read the rows as the SQLite adapter does (the same scope predicate,
flagged rows never returned, newest = largest id first). `changed_since` reads the change
log `memories_changes` (schema step 3, adapters/postgres/schema.py), which names the id of
every row inserted, updated or deleted, with the id of the transaction that wrote it.

A cursor is the xmin of a snapshot: every transaction below it had finished when the snapshot
was taken, so whatever such a transaction wrote was visible then, and whatever any host
commits later carries a transaction id at or above it. So `changed_since(cursor)` names the
log entries at or above the cursor and answers the xmin of its own snapshot as the next
cursor: a write committed by another host in any order is never skipped. A transaction that
committed while an older one was still running may be named once more by the next call (the
port allows naming too much, never too little). Unlike SQLite, a removed row is named (the
log keeps its id); `ids` is None only when the log no longer reaches back to the cursor
(trimmed, or the cursor predates the log).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from pi_hermes_memory.adapters.postgres.search import pg_scope
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.rows import ROW_COLUMNS, row_of
from pi_hermes_memory.ports.read_model import MemoryRow, RowChanges
from pi_hermes_memory.ports.vectors import VectorScope

__all__ = ["PgRows"]

#: the xmin of the statement's snapshot, as a number (an xid8 is a 64-bit counter)
_XMIN: Final = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


class PgRows:
    def __init__(self, storage: PgStorage) -> None:
        self._storage = storage

    def in_scope(self, scope: VectorScope) -> list[MemoryRow]:
        if not scope.clauses:
            return []
        where, params = pg_scope(scope.as_query())
        sql = f"SELECT {ROW_COLUMNS} FROM memories AS m WHERE {where} ORDER BY m.id DESC"
        with self._storage.read() as conn:
            return [row_of(values) for values in conn.execute(sql, params).fetchall()]

    def by_id(self, ids: Iterable[str]) -> dict[str, MemoryRow]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        with self._storage.read() as conn:
            found = {
                str(values[0]): row_of(values)
                for values in conn.execute(
                    f"SELECT {ROW_COLUMNS} FROM memories AS m "
                    "WHERE m.id = ANY(%s) AND m.flagged IS NULL",
                    (wanted,),
                ).fetchall()
            }
        return {i: found[i] for i in wanted if i in found}

    def cursor(self) -> int:
        with self._storage.read() as conn:
            row = conn.execute(f"SELECT {_XMIN}").fetchone()
        return int(row[0]) if row else 0

    def changed_since(self, cursor: int) -> RowChanges:
        since = str(max(cursor, 0))
        with self._storage.read() as conn:
            # one statement, so one snapshot even inside a READ COMMITTED write transaction:
            # the trim's deletions and its mark are seen together, or neither
            row = conn.execute(
                f"SELECT {_XMIN}, (SELECT value::bigint FROM store_meta "
                "WHERE key = 'changes_trimmed_below'), "
                "ARRAY(SELECT DISTINCT id FROM memories_changes WHERE xid >= %s::xid8)",
                (since,),
            ).fetchone()
        if row is None:  # pragma: no cover - a SELECT without FROM answers one row
            return RowChanges(cursor=cursor, ids=None)
        newest = max(cursor, int(row[0]))
        trimmed_below = int(row[1]) if row[1] is not None else 0
        if trimmed_below > cursor:
            return RowChanges(cursor=newest, ids=None)
        return RowChanges(cursor=newest, ids=frozenset(str(i) for i in row[2]))
