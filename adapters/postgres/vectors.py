"""The vector cache on PostgreSQL: little-endian float32 `bytea` with its model id (ADR 0015,
ADR 0050), ranked in numpy over the scope-filtered candidates.

pgvector is not used: it is no Debian package of the PostgreSQL we test on, and an untested
path is not shipped. The scope predicate is the search index's, in the WHERE of every query.
`candidates` keeps the matrix per (scope, model, dimension). While no transaction of any host
changed `memories` since the snapshot it was read on (`memories_log`: one index probe, see
adapters/postgres/schema.py) it is served as it is, and so is an empty `missing` answer;
otherwise, and at least every few minutes, one aggregate over the in-scope rows checks it:
their count and the sum of their `changed` stamps (a sequence value every insert and update
draws, so any change moves one of the two); a changed scope re-reads only the rows whose
stamp differs.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.adapters.postgres.search import pg_scope
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.vectors import (
    background_blob,
    background_matrix,
    from_blob,
    to_blob,
)
from pi_hermes_memory.ports.vectors import VectorScope

_CACHED_SCOPES = 8
#: a mark older than this (server time) is not trusted: the log keeps an hour
_MARK_SECONDS = 300

#: (xmin of the snapshot, its start time as epoch seconds)
_Mark = tuple[int, float]


def _mark(conn: Any) -> _Mark:
    row = conn.execute(
        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, "
        "extract(epoch FROM now())::float8"
    ).fetchone()
    return int(row[0]), float(row[1])


def _unchanged(conn: Any, mark: _Mark | None) -> bool:
    """Whether no transaction changed `memories` since the snapshot of `mark`."""
    if mark is None:
        return False
    row = conn.execute(
        "SELECT extract(epoch FROM now())::float8 - %s < %s AND NOT EXISTS "
        "(SELECT 1 FROM memories_log WHERE xid >= %s::text::xid8)",
        (mark[1], _MARK_SECONDS, str(mark[0])),
    ).fetchone()
    return bool(row and row[0])


def _current_sql(dimension: int | None) -> tuple[str, list[Any]]:
    """The predicate "has a current vector" (the model id is the first parameter)."""
    # a model id is stored exactly with a vector (a CHECK constraint), so the indexed columns
    # answer this without reading the row
    sql = "m.embedding_model IS NOT NULL AND m.embedding_model = %s"
    if dimension is None:
        return sql, []
    return sql + " AND m.dims = %s", [dimension]


@attrs.frozen
class _Cached:
    mark: _Mark
    token: tuple[int, int]
    stamps: dict[str, int]
    vectors: dict[str, NDArray[np.float32]]
    ids: tuple[str, ...]
    matrix: NDArray[np.float32]


class PgVectorStore:
    def __init__(self, storage: PgStorage) -> None:
        self._storage = storage
        self._cache: collections.OrderedDict[tuple[VectorScope, str, int | None], _Cached] = (
            collections.OrderedDict()
        )
        #: (scope, model, dimension) -> the mark of a `missing` that found no row lacking one
        self._complete: dict[tuple[VectorScope, str, int | None], _Mark] = {}

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
        where, params = pg_scope(scope.as_query())
        if not everything:
            current, more = _current_sql(dimension)
            where += f" AND NOT ({current})"
            params += [model_id, *more]
        if before is not None:
            where += " AND m.id < %s"
            params.append(before)
        key = (scope, model_id, dimension)
        plain = not everything and before is None
        with self._storage.read() as conn:
            if plain and _unchanged(conn, self._complete.get(key)):
                return []
            mark = _mark(conn)
            rows = conn.execute(
                f"SELECT m.id, m.text FROM memories AS m WHERE {where} ORDER BY m.id DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        if plain and not rows:
            if len(self._complete) >= _CACHED_SCOPES:
                self._complete.clear()
            self._complete[key] = mark
        return [(str(i), str(t)) for i, t in rows]

    def count(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[int, int]:
        if not scope.clauses:
            return 0, 0
        where, params = pg_scope(scope.as_query())
        current, more = _current_sql(dimension)
        with self._storage.read() as conn:
            row = conn.execute(
                f"SELECT count(*), count(*) FILTER (WHERE {current}) FROM memories AS m "
                f"WHERE {where}",
                (model_id, *more, *params),
            ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def put(
        self, rows: Sequence[tuple[str, str]], vectors: NDArray[np.float32], model_id: str
    ) -> int:
        if len(rows) != len(vectors):
            raise ValueError(f"{len(rows)} rows but {len(vectors)} vectors")
        stored = 0
        with self._storage.writing() as conn:
            for (entry_id, text), vector in zip(rows, vectors, strict=True):
                # text = %s: a row rewritten since it was embedded keeps no stale vector
                cur = conn.execute(
                    "UPDATE memories SET embedding = %s, embedding_model = %s "
                    "WHERE id = %s AND text = %s",
                    (to_blob(vector), model_id, entry_id, text),
                )
                stored += cur.rowcount
        return stored

    def background(
        self, model_id: str, sample: str, *, dimension: int | None = None
    ) -> NDArray[np.float32] | None:
        with self._storage.read() as conn:
            row = conn.execute(
                "SELECT dimension, vectors FROM embedding_background "
                "WHERE model_id = %s AND sample = %s",
                (model_id, sample),
            ).fetchone()
        return None if row is None else background_matrix(int(row[0]), bytes(row[1]), dimension)

    def put_background(self, model_id: str, sample: str, vectors: NDArray[np.float32]) -> None:
        width, blob = background_blob(vectors)
        with self._storage.writing() as conn:
            conn.execute(
                "INSERT INTO embedding_background (model_id, sample, dimension, vectors) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (model_id) DO UPDATE SET "
                "sample = excluded.sample, dimension = excluded.dimension, "
                "vectors = excluded.vectors",
                (model_id, sample, width, blob),
            )

    def vectors(
        self, ids: Iterable[str], model_id: str, *, dimension: int | None = None
    ) -> dict[str, NDArray[np.float32]]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        current, more = _current_sql(dimension)
        with self._storage.read() as conn:
            rows = conn.execute(
                f"SELECT m.id, m.embedding FROM memories AS m WHERE m.id = ANY(%s) AND {current}",
                (wanted, model_id, *more),
            ).fetchall()
        return {str(i): from_blob(bytes(blob)) for i, blob in rows}

    def candidates(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[tuple[str, ...], NDArray[np.float32]]:
        empty = np.zeros((0, dimension or 0), dtype=np.float32)
        if not scope.clauses:
            return (), empty
        key = (scope, model_id, dimension)
        where, params = pg_scope(scope.as_query())
        current, more = _current_sql(dimension)
        where = f"{where} AND {current}"
        params = [*params, model_id, *more]
        with self._storage.read() as conn:
            cached = self._cache.get(key)
            if cached is not None and _unchanged(conn, cached.mark):
                self._cache.move_to_end(key)
                return cached.ids, cached.matrix
            mark = _mark(conn)
            row = conn.execute(
                f"SELECT count(*), coalesce(sum(m.changed), 0) FROM memories AS m WHERE {where}",
                params,
            ).fetchone()
            token = (int(row[0]), int(row[1])) if row else (0, 0)
            if cached is not None and cached.token == token:
                self._cache[key] = attrs.evolve(cached, mark=mark)
                self._cache.move_to_end(key)
                return cached.ids, cached.matrix
            stamps = {
                str(i): int(c)
                for i, c in conn.execute(
                    f"SELECT m.id, m.changed FROM memories AS m WHERE {where}", params
                ).fetchall()
            }
            known = cached.vectors if cached is not None else {}
            old = cached.stamps if cached is not None else {}
            stale = [i for i, c in stamps.items() if old.get(i) != c or i not in known]
            fresh = dict(known)
            for start in range(0, len(stale), 1000):
                chunk = stale[start : start + 1000]
                for i, blob in conn.execute(
                    "SELECT m.id, m.embedding FROM memories AS m WHERE m.id = ANY(%s)", (chunk,)
                ).fetchall():
                    fresh[str(i)] = from_blob(bytes(blob))
        vectors = {i: fresh[i] for i in stamps if i in fresh}
        width = dimension if dimension is not None else _first_width(vectors)
        ids = tuple(i for i, v in vectors.items() if v.shape[0] == width)
        matrix = np.stack([vectors[i] for i in ids]) if ids else np.zeros((0, width or 0))
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        matrix.flags.writeable = False
        if len(self._cache) >= _CACHED_SCOPES:
            self._cache.popitem(last=False)
        self._cache[key] = _Cached(mark, token, stamps, vectors, ids, matrix)
        return ids, matrix


def _first_width(vectors: dict[str, NDArray[np.float32]]) -> int | None:
    for vector in vectors.values():
        return int(vector.shape[0])
    return None
