"""The `VectorStore` port over the `embedding` / `embedding_model` columns of `memories`.

Vectors are little-endian float32 BLOBs stored with their model id (ADR 0015). They are a
cache, not journaled: the projection never writes these columns, a mirror repair clears them
only where it rewrites a row's text, and a promote/demote updates the row in place, so its
vector stays. A vector counts as current when `embedding_model` equals the current model id
and the BLOB has `4 * dimension` bytes (when the dimension is known).

`candidates` keeps a small cache of stacked matrices per (scope, model, dimension), and
`missing` remembers which scopes had nothing missing, both valid while the database is
unchanged: `PRAGMA data_version` (commits by other connections) and `total_changes()` (this
connection's writes) together are the change token. So a search without writes in between
neither rescans the rows nor rebuilds the matrix (cached: well under 1 ms). After a write the
matrix is refreshed, not rebuilt (ADR 0019, ADR 0040): the rowids come from the covering index
`memories_vector_scope` and are compared in numpy; a write that left the scope's rows as they
were keeps the matrix as it is (no copy), otherwise only new rows and rows this store wrote
since are read.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs
import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.adapters.sqlite.search import scope_sql
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.vectors import VectorScope

__all__ = ["SqliteVectorStore", "from_blob", "to_blob"]

_LE_FLOAT32: Final = np.dtype("<f4")
_CACHED_SCOPES: Final = 8
#: Incremental refreshes of a cached matrix before it is rebuilt from scratch (a safety net:
#: a vector rewritten in place by another process for the same id and model is re-read).
_FULL_EVERY: Final = 64
_ID_CHUNK: Final = 500


def to_blob(vector: NDArray[Any]) -> bytes:
    """Little-endian float32 bytes of a 1-D vector."""
    return np.ascontiguousarray(vector, dtype=_LE_FLOAT32).tobytes()


def from_blob(blob: bytes) -> NDArray[np.float32]:
    """The vector of a BLOB written by `to_blob` (native float32, a fresh array)."""
    return np.frombuffer(blob, dtype=_LE_FLOAT32).astype(np.float32)


def _token(conn: Any) -> tuple[int, int]:
    """Changes whenever any connection committed a change to the file (inside a read txn)."""
    return int(conn.execute("PRAGMA data_version").get), int(conn.total_changes())


def _current_sql(dimension: int | None) -> tuple[str, list[Any]]:
    """The predicate "has a current vector" (model id is the first parameter's slot)."""
    sql = "m.embedding IS NOT NULL AND m.embedding_model = ?"
    if dimension is None:
        return sql, []
    return sql + " AND length(m.embedding) = ?", [4 * dimension]


class SqliteVectorStore:
    def __init__(self, storage: SqliteStorage) -> None:
        self._storage = storage
        self._cache: collections.OrderedDict[tuple[VectorScope, str, int | None], _Cached] = (
            collections.OrderedDict()
        )
        #: (scope, model, dimension, everything) -> token when nothing was missing
        self._complete: dict[tuple[VectorScope, str, int | None, bool], tuple[int, int]] = {}
        #: (scope, model, dimension) -> (token, rowids of the in-scope rows with a current
        #: vector): what `missing` saw, for the `candidates` call that follows it
        self._listed: dict[tuple[VectorScope, str, int | None], tuple[Any, NDArray[np.int64]]] = {}

    def missing(
        self,
        scope: VectorScope,
        model_id: str,
        *,
        dimension: int | None = None,
        limit: int,
        before: str | None = None,
        everything: bool = False,
    ) -> list[tuple[str, str]]:
        if limit < 1 or not scope.clauses:
            return []
        where, params = scope_sql(scope.as_query())
        if not everything:
            current, more = _current_sql(dimension)
            where += f" AND NOT ({current})"
            params += [model_id, *more]
        if before is not None:
            where += " AND m.id < ?"
            params.append(before)
        sql = f"SELECT m.id, m.text FROM memories AS m WHERE {where} ORDER BY m.id DESC LIMIT ?"
        key = (scope, model_id, dimension, everything)
        with self._storage.read() as conn:
            token = _token(conn)
            if before is None and self._complete.get(key) == token:
                return []  # nothing changed since this scope had nothing missing
            found = None
            if before is None and not everything:
                found = self._listing(conn, token, scope, model_id, dimension, limit)
            if found is None:
                found = [(str(i), str(t)) for i, t in conn.execute(sql, (*params, limit))]
        if before is None and not found:
            if len(self._complete) >= 64:
                self._complete.clear()
            self._complete[key] = token
        return found

    def _listing(
        self,
        conn: Any,
        token: tuple[int, int],
        scope: VectorScope,
        model_id: str,
        dimension: int | None,
        limit: int,
    ) -> list[tuple[str, str]] | None:
        """`missing` and the listing of the next `candidates` refresh in one pass over the
        scope (ADR 0040): each in-scope rowid with whether its vector is current. The rows
        lacking one are read by rowid, newest id first; None when too many lack one (the
        caller's query is cheaper then)."""
        where, params = scope_sql(scope.as_query())
        current, more = _current_sql(dimension)
        sql = f"SELECT m.rowid, {current} FROM memories AS m WHERE {where}"
        have: list[int] = []
        lacking: list[int] = []
        for rowid, ok in conn.execute(sql, (model_id, *more, *params)):
            if ok is not None:  # NULL: neither current nor `NOT (current)`, as in `missing`
                (have if ok else lacking).append(rowid)
        if len(self._listed) >= _CACHED_SCOPES:
            self._listed.clear()
        self._listed[scope, model_id, dimension] = (token, np.array(have, dtype=np.int64))
        if len(lacking) > _ID_CHUNK:
            return None
        if not lacking:
            return []
        marks = ", ".join("?" for _ in lacking)
        rows = conn.execute(
            f"SELECT m.id, m.text FROM memories AS m NOT INDEXED WHERE m.rowid IN ({marks}) "
            "ORDER BY m.id DESC LIMIT ?",
            (*lacking, limit),
        )
        return [(str(i), str(t)) for i, t in rows]

    def count(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[int, int]:
        if not scope.clauses:
            return 0, 0
        where, params = scope_sql(scope.as_query())
        current, more = _current_sql(dimension)
        sql = f"SELECT count(*), coalesce(sum({current}), 0) FROM memories AS m WHERE {where}"
        with self._storage.read() as conn:
            rows, with_vector = conn.execute(sql, (model_id, *more, *params)).get
        return int(rows), int(with_vector)

    def put(
        self, rows: Sequence[tuple[str, str]], vectors: NDArray[np.float32], model_id: str
    ) -> int:
        if len(rows) != len(vectors):
            raise ValueError(f"{len(rows)} rows but {len(vectors)} vectors")
        if not rows:
            return 0
        values = [
            (to_blob(vector), model_id, entry_id, text)
            for (entry_id, text), vector in zip(rows, vectors, strict=True)
        ]
        for cached in self._cache.values():  # re-read these rows on the next refresh
            cached.dirty.update(entry_id for entry_id, _ in rows)
        stored = 0
        with self._storage.transaction():
            conn = self._storage.connection
            for value in values:
                # text = ?: a row rewritten since its text was embedded keeps no stale vector
                conn.execute(
                    "UPDATE memories SET embedding = ?, embedding_model = ? "
                    "WHERE id = ? AND text = ?",
                    value,
                )
                stored += conn.changes()
        return stored

    def vectors(
        self, ids: Iterable[str], model_id: str, *, dimension: int | None = None
    ) -> dict[str, NDArray[np.float32]]:
        wanted = list(dict.fromkeys(ids))
        current, more = _current_sql(dimension)
        found: dict[str, NDArray[np.float32]] = {}
        with self._storage.read() as conn:
            for start in range(0, len(wanted), _ID_CHUNK):
                chunk = wanted[start : start + _ID_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                sql = (
                    f"SELECT m.id, m.embedding FROM memories AS m "
                    f"WHERE m.id IN ({marks}) AND {current}"
                )
                for entry_id, blob in conn.execute(sql, (*chunk, model_id, *more)):
                    found[str(entry_id)] = from_blob(blob)
        return found

    def candidates(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[tuple[str, ...], NDArray[np.float32]]:
        empty = np.zeros((0, dimension or 0), dtype=np.float32)
        if not scope.clauses:
            return (), empty
        key = (scope, model_id, dimension)
        where, params = scope_sql(scope.as_query())
        current, more = _current_sql(dimension)
        with self._storage.read() as conn:
            token = _token(conn)
            cached = self._cache.get(key)
            if cached is not None and cached.token == token:
                self._cache.move_to_end(key)
                return cached.ids, cached.matrix
            if cached is not None and cached.refreshes < _FULL_EVERY:
                seen = self._listed.get(key)
                listed = seen[1] if seen is not None and seen[0] == token else None
                fresh = _refreshed(conn, cached, where, params, model_id, current, more, listed)
            else:
                fresh = None
            if fresh is None:
                # no ORDER BY: sorting the BLOBs would cost more than reading them
                sql = (
                    f"SELECT m.rowid, m.id, m.embedding FROM memories AS m "
                    f"WHERE {where} AND {current}"
                )
                rows: list[Any] = conn.execute(sql, (*params, model_id, *more)).fetchall()
                rowids, ids, matrix = _stack(rows, dimension)
                fresh = _Cached(token=token, ids=ids, matrix=matrix, rowids=rowids, refreshes=0)
        if fresh.matrix.flags.writeable:
            fresh.matrix.setflags(write=False)
        fresh.token = token
        self._cache[key] = fresh
        self._cache.move_to_end(key)
        while len(self._cache) > _CACHED_SCOPES:
            self._cache.popitem(last=False)
        return fresh.ids, fresh.matrix


@attrs.define
class _Cached:
    """One scope's stacked matrix, valid for `token`; `rowids`: each row's rowid, in `ids`
    order; `dirty`: ids this store wrote since."""

    token: tuple[int, int]
    ids: tuple[str, ...]
    matrix: NDArray[np.float32]
    rowids: NDArray[np.int64]
    refreshes: int
    dirty: set[str] = attrs.Factory(set)
    positions: dict[str, int] | None = None

    def position(self) -> dict[str, int]:
        if self.positions is None:
            self.positions = {entry_id: i for i, entry_id in enumerate(self.ids)}
        return self.positions


def _refreshed(
    conn: Any,
    cached: _Cached,
    where: str,
    params: list[Any],
    model_id: str,
    current: str,
    more: list[Any],
    listed: NDArray[np.int64] | None = None,
) -> _Cached | None:
    """The cached matrix brought up to date after a write (ADR 0019, ADR 0040): the rowids
    of the in-scope rows with a vector of the model are listed from the covering index
    `memories_vector_scope` (no BLOB read), compared with the cached ones in numpy, and only
    rows new to the scope (and rows this store wrote since) are read. A write that left the
    scope's rows as they were (another scope's rows, a `last_referenced` update) keeps the
    matrix and the ids as they are: no copy. A row keeps its vector while its id and model
    stay: `put` writes a vector only for the row's current text, and text changes give a new
    id, or clear the vector (mirror repair). None when most rows changed (a full rebuild is
    cheaper). `listed`: the in-scope rowids with a current vector, when `missing` just
    listed them at this token."""
    if listed is None:
        listed = np.fromiter(
            (
                rowid
                for (rowid,) in conn.execute(
                    f"SELECT m.rowid FROM memories AS m WHERE {where} AND m.embedding_model = ?",
                    (*params, model_id),
                )
            ),
            dtype=np.int64,
        )
    keep = np.isin(cached.rowids, listed, assume_unique=True)
    if cached.dirty:
        positions = cached.position()
        at = [positions[i] for i in cached.dirty if i in positions]
        keep[at] = False
    new = np.setdiff1d(listed, cached.rowids[keep], assume_unique=True)
    if not len(new) and keep.all():
        return _Cached(
            token=cached.token,
            ids=cached.ids,
            matrix=cached.matrix,
            rowids=cached.rowids,
            refreshes=cached.refreshes + 1,
            positions=cached.positions,
        )
    if len(new) > len(listed) // 2:
        return None
    fetched: list[tuple[Any, Any, bytes]] = []
    wanted = [int(r) for r in new]
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        marks = ", ".join("?" for _ in chunk)
        sql = (
            f"SELECT m.rowid, m.id, m.embedding FROM memories AS m NOT INDEXED "
            f"WHERE m.rowid IN ({marks}) AND {current}"
        )
        fetched.extend(conn.execute(sql, (*chunk, model_id, *more)))
    width = cached.matrix.shape[1] if cached.ids else None
    new_rowids, new_ids, new_matrix = _stack(fetched, width)
    if cached.ids and new_ids and new_matrix.shape[1] != width:
        return None  # another dimension appeared: rebuild from scratch
    kept_ids = tuple(i for i, k in zip(cached.ids, keep.tolist(), strict=True) if k)
    if not cached.ids:
        matrix = new_matrix
    else:  # one copy: the kept rows gathered straight into the new matrix, then the new rows
        count = len(kept_ids)
        matrix = np.empty((count + len(new_ids), cached.matrix.shape[1]), dtype=np.float32)
        np.compress(keep, cached.matrix, axis=0, out=matrix[:count])
        matrix[count:] = new_matrix
    return _Cached(
        token=cached.token,
        ids=(*kept_ids, *new_ids),
        matrix=matrix,
        rowids=np.concatenate([cached.rowids[keep], new_rowids]),
        refreshes=cached.refreshes + 1,
    )


def _stack(
    rows: Sequence[tuple[Any, Any, bytes]], dimension: int | None
) -> tuple[NDArray[np.int64], tuple[str, ...], NDArray[np.float32]]:
    """Rowids, ids and the matrix of rows whose BLOB has the wanted size (else the first
    row's)."""
    no_rowids = np.zeros(0, dtype=np.int64)
    if not rows:
        return no_rowids, (), np.zeros((0, dimension or 0), dtype=np.float32)
    size = 4 * dimension if dimension is not None else len(rows[0][2])
    kept = [(r, i, blob) for r, i, blob in rows if len(blob) == size and size > 0]
    if not kept:
        return no_rowids, (), np.zeros((0, size // 4), dtype=np.float32)
    buffer = b"".join(blob for _, _, blob in kept)
    # one copy (the join); on little-endian machines the view needs no conversion
    flat = np.frombuffer(buffer, dtype=_LE_FLOAT32).astype(np.float32, copy=False)
    rowids = np.fromiter((r for r, _, _ in kept), dtype=np.int64, count=len(kept))
    return rowids, tuple(str(i) for _, i, _ in kept), flat.reshape(len(kept), -1)
