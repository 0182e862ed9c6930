"""The `VectorStore` port over the `embedding` / `embedding_model` columns of `memories`.

Vectors are little-endian float32 BLOBs stored with their model id (ADR 0015). They are a
cache, not journaled: the projection never writes these columns, a mirror repair clears them
only where it rewrites a row's text, and a promote/demote updates the row in place, so its
vector stays. A vector counts as current when `embedding_model` equals the current model id
and the BLOB has `4 * dimension` bytes (when the dimension is known).

`candidates` keeps a small cache of stacked matrices per (scope, model, dimension), and
`missing` remembers which rows of a scope lacked a vector, both valid while the database is
unchanged: `PRAGMA data_version` (commits by other connections) and `total_changes()` (this
connection's writes) together are the change token. So a search without writes in between
neither rescans the rows nor rebuilds the matrix (cached: well under 1 ms). After a write both
read the change log `memories_changes` (schema 7, ADR 0043) from where they last stood and
re-read only the rows logged since: a changed row that is still in scope with the same vector
keeps the matrix as it is (no copy), new rows are appended into spare rows of the matrix's
buffer (no copy of the rows before), and a row leaving the scope is overwritten by the last row
when no caller holds the matrix (else one copy). The id -> row map and the product columns a
caller asked for (`candidate_positions`, `candidate_product`: the background centroid's
cosines) are carried along: patched by the rows that left, moved or came, never recomputed
over the kept rows (ADR 0082). Where the log no longer reaches back (trimmed), holds more than
`_LOG_ENTRIES` entries or names more than `_LOG_ROWS` rows since, the matrix is read afresh:
a listing of the scope (ADR 0040) cannot see a vector another connection rewrote in place for
the same id and model, so it is no longer used to refresh the matrix (ADR 0082).
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import attrs
import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.adapters.sqlite.search import scope_sql
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.ports.vectors import VectorScope

__all__ = [
    "SqliteVectorStore",
    "background_blob",
    "background_matrix",
    "from_blob",
    "to_blob",
]

_LE_FLOAT32: Final = np.dtype("<f4")
_CACHED_SCOPES: Final = 8
#: Rowids per `IN (...)` list; also the most rows `missing` reads from the log.
_ID_CHUNK: Final = 500
#: The most change log entries a refresh reads (the log keeps at least 4,096, schema 7), and
#: the most distinct rows it re-reads; past either the matrix is rebuilt (ADR 0082: a listing
#: of the scope cannot see a vector another connection rewrote in place, the log can).
_LOG_ENTRIES: Final = 4_096
_LOG_ROWS: Final = 2_048
#: Spare rows allocated behind a matrix, so that rows added to the scope are appended without
#: copying the rows before them: a sixteenth of the rows, at least this many.
_SPARE_ROWS: Final = 64


def to_blob(vector: NDArray[Any]) -> bytes:
    """Little-endian float32 bytes of a 1-D vector."""
    return np.ascontiguousarray(vector, dtype=_LE_FLOAT32).tobytes()


def from_blob(blob: bytes) -> NDArray[np.float32]:
    """The vector of a BLOB written by `to_blob` (native float32, a fresh array)."""
    return np.frombuffer(blob, dtype=_LE_FLOAT32).astype(np.float32)


def background_blob(vectors: NDArray[Any]) -> tuple[int, bytes]:
    """(dimension, bytes) of a background sample's (n, dimension) matrix; a matrix that is
    not 2-D, empty or not finite raises ValueError (nothing is stored then)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(
            f"background vectors must be a non-empty (n, d) matrix; got {matrix.shape}"
        )
    if not np.isfinite(matrix).all():
        raise ValueError("background vectors must be finite")
    return int(matrix.shape[1]), np.ascontiguousarray(matrix, dtype=_LE_FLOAT32).tobytes()


def background_matrix(
    stored_dimension: int, blob: bytes, dimension: int | None
) -> NDArray[np.float32] | None:
    """The matrix `background_blob` encoded, or None when it does not fit `dimension`."""
    if dimension is not None and stored_dimension != dimension:
        return None
    if stored_dimension < 1 or len(blob) % (4 * stored_dimension) != 0 or not blob:
        return None
    return from_blob(blob).reshape(-1, stored_dimension)


def _token(conn: Any) -> tuple[int, int]:
    """Changes whenever any connection committed a change to the file (inside a read txn)."""
    return int(conn.execute("PRAGMA data_version").get), int(conn.total_changes())


def _log_position(conn: Any) -> int:
    """The newest entry of the change log (0 when it is empty)."""
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories_changes").get)


def _changes_since(
    conn: Any, position: int, *, entries: int = _ID_CHUNK, rows: int = _ID_CHUNK
) -> tuple[int, list[int]] | None:
    """The rowids of `memories` rows changed after log entry `position`, and the newest
    entry; None when the log no longer reaches back to `position` (trimmed, or a log that
    starts again below it), holds more than `entries` entries since, or names more than
    `rows` rows (reading the scope afresh is cheaper then).

    One query on the log's primary key (ADR 0101): the entries from `position` on. The trim
    deletes the oldest entries only, so every entry after `position` is still there exactly
    when the first entry found is at most `position + 1`; and `position` itself, the newest
    entry when it was read, is only trimmed after 4,096 newer ones."""
    found = conn.execute(
        "SELECT seq, memory_rowid FROM memories_changes WHERE seq >= ? ORDER BY seq LIMIT ?",
        (position, entries + 2),
    ).fetchall()
    if found and int(found[0][0]) == position:
        found = found[1:]
    elif not found:
        # nothing at or after `position`: the log this reader followed was empty then too,
        # or this is another log (one that starts again below it)
        return (position, []) if position == 0 else None
    if not found:
        return position, []
    if len(found) > entries or int(found[0][0]) > position + 1:
        return None
    changed = sorted({int(rowid) for _, rowid in found})
    return None if len(changed) > rows else (int(found[-1][0]), changed)


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
        #: (scope, model, dimension, everything) -> the rows lacking a vector, when all of
        #: them were known (at most `_ID_CHUNK`), with the token and the log position
        self._lacking: dict[tuple[VectorScope, str, int | None, bool], _Lacking] = {}

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
            seen = self._lacking.get(key) if before is None else None
            if seen is not None and seen.token == token and not seen.rowids:
                return []  # nothing changed since this scope had nothing missing
            found = None
            if seen is not None:
                found = self._from_log(conn, token, key, seen, where, params, limit)
            if found is None and before is None:
                position = _log_position(conn)
                if not everything:
                    found = self._listing(conn, token, position, scope, model_id, dimension, limit)
                if found is None:
                    found = [(str(i), str(t)) for i, t in conn.execute(sql, (*params, limit))]
                    if not found:
                        self._remember(key, _Lacking(token=token, position=position))
            elif found is None:
                found = [(str(i), str(t)) for i, t in conn.execute(sql, (*params, limit))]
        return found

    def _remember(self, key: tuple[VectorScope, str, int | None, bool], seen: _Lacking) -> None:
        if key not in self._lacking and len(self._lacking) >= 64:
            self._lacking.clear()
        self._lacking[key] = seen

    def _from_log(
        self,
        conn: Any,
        token: tuple[int, int],
        key: tuple[VectorScope, str, int | None, bool],
        seen: _Lacking,
        where: str,
        params: list[Any],
        limit: int,
    ) -> list[tuple[str, str]] | None:
        """`missing` from the rows that lacked a vector at `seen.position` and the rows
        changed since (ADR 0043): no other row can lack one now. None when the change log
        cannot tell (the caller lists the scope)."""
        changed = _changes_since(conn, seen.position)
        if changed is None:
            return None
        position, rowids = changed
        wanted = sorted({*seen.rowids, *rowids})
        if len(wanted) > _ID_CHUNK:
            return None
        rows: list[Any] = []
        if wanted:
            marks = ", ".join("?" for _ in wanted)
            rows = conn.execute(
                f"SELECT m.rowid, m.id, m.text FROM memories AS m NOT INDEXED "
                f"WHERE m.rowid IN ({marks}) AND {where} ORDER BY m.id DESC",
                (*wanted, *params),
            ).fetchall()
        lacking = tuple(int(rowid) for rowid, _, _ in rows)
        self._remember(key, _Lacking(token=token, position=position, rowids=lacking))
        return [(str(i), str(t)) for _, i, t in rows[:limit]]

    def _listing(
        self,
        conn: Any,
        token: tuple[int, int],
        position: int,
        scope: VectorScope,
        model_id: str,
        dimension: int | None,
        limit: int,
    ) -> list[tuple[str, str]] | None:
        """`missing` in one pass over the scope's covering index (ADR 0040): each in-scope
        rowid with whether its vector is current. The rows lacking one are read by rowid,
        newest id first; None when too many lack one (the caller's query is cheaper then)."""
        where, params = scope_sql(scope.as_query())
        current, more = _current_sql(dimension)
        sql = f"SELECT m.rowid, {current} FROM memories AS m WHERE {where}"
        lacking: list[int] = []
        for rowid, ok in conn.execute(sql, (model_id, *more, *params)):
            if ok is not None and not ok:  # NULL: neither current nor `NOT (current)`
                lacking.append(rowid)
        if len(lacking) > _ID_CHUNK:
            return None
        seen = _Lacking(token=token, position=position, rowids=tuple(lacking))
        self._remember((scope, model_id, dimension, False), seen)
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

    def background(
        self, model_id: str, sample: str, *, dimension: int | None = None
    ) -> NDArray[np.float32] | None:
        with self._storage.read() as conn:
            row = conn.execute(
                "SELECT dimension, vectors FROM embedding_background "
                "WHERE model_id = ? AND sample = ?",
                (model_id, sample),
            ).fetchone()
        return None if row is None else background_matrix(int(row[0]), bytes(row[1]), dimension)

    def put_background(self, model_id: str, sample: str, vectors: NDArray[np.float32]) -> None:
        width, blob = background_blob(vectors)
        with self._storage.transaction():
            self._storage.connection.execute(
                "INSERT INTO embedding_background (model_id, sample, dimension, vectors) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (model_id) DO UPDATE SET "
                "sample = excluded.sample, dimension = excluded.dimension, "
                "vectors = excluded.vectors",
                (model_id, sample, width, blob),
            )

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
            fresh = None
            if cached is not None:
                # the patch may write its buffer and id list in place: the entry is taken
                # out first, so a failure half-way leaves nothing cached (read afresh)
                del self._cache[key]
                # the log names every row changed since, or the matrix is read afresh: a
                # listing of the scope could not see a vector rewritten in place (ADR 0082)
                changed = _changes_since(
                    conn, cached.position, entries=_LOG_ENTRIES, rows=_LOG_ROWS
                )
                if changed is not None:
                    position, rowids = changed
                    fresh = _patched(
                        conn, cached, position, rowids, where, params, model_id, current, more
                    )
            if fresh is None:
                position = _log_position(conn)
                # no ORDER BY: sorting the BLOBs would cost more than reading them
                sql = (
                    f"SELECT m.rowid, m.id, m.embedding FROM memories AS m "
                    f"WHERE {where} AND {current}"
                )
                rows: list[Any] = conn.execute(sql, (*params, model_id, *more)).fetchall()
                rowids_, ids, matrix = _stack(rows, dimension)
                buffer = _spare(len(ids), matrix.shape[1])
                buffer[: len(ids)] = matrix
                fresh = _Cached(
                    token=token,
                    position=position,
                    ids=ids,
                    buffer=buffer,
                    rowids=rowids_,
                )
        fresh.token = token
        self._cache[key] = fresh
        self._cache.move_to_end(key)
        while len(self._cache) > _CACHED_SCOPES:
            self._cache.popitem(last=False)
        return fresh.ids, fresh.matrix

    def candidate_positions(self, ids: tuple[str, ...]) -> Mapping[str, int] | None:
        """The row of each id in the matrix `candidates` handed out with `ids` (that very
        tuple), kept up to date along the matrix's changes (ADR 0082); None when no cached
        matrix goes with `ids` (the caller builds the map itself)."""
        for cached in reversed(self._cache.values()):
            if cached.ids is ids:
                return cached.position_of()
        return None

    def candidate_product(
        self, matrix: NDArray[np.float32], vector: NDArray[np.float32]
    ) -> NDArray[np.float32] | None:
        """`matrix @ vector` (float32, read-only) for a matrix `candidates` handed out (that
        very array) and a vector that stays the same from search to search (the background
        centroid): computed once, then carried along the matrix's changes, only rows added
        since are multiplied (ADR 0082). None when `matrix` is no longer cached or the
        widths differ (the caller multiplies itself)."""
        wanted = np.ascontiguousarray(vector, dtype=np.float32)
        if wanted.ndim != 1 or matrix.ndim != 2 or matrix.shape[1] != wanted.shape[0]:
            return None
        for cached in reversed(self._cache.values()):
            if cached.matrix is matrix:
                key = wanted.tobytes()
                found = cached.products.get(key)
                if found is None:
                    found = np.asarray(matrix @ wanted, dtype=np.float32)
                    found.setflags(write=False)
                    if len(cached.products) >= _CACHED_PRODUCTS:
                        cached.products.clear()
                    cached.products[key] = found
                return found
        return None


@attrs.define
class _Lacking:
    """What `missing` saw of a scope: the rowids of the rows lacking a vector (all of them),
    at change token `token` and change log entry `position`."""

    token: tuple[int, int]
    position: int
    rowids: tuple[int, ...] = ()


@attrs.define
class _Cached:
    """One scope's stacked matrix, valid for `token` and change log entry `position`.

    `buffer` holds the rows and spare rows after them; `matrix` is a read-only view of its
    first `len(ids)` rows. Rows are only ever written past the rows of any matrix handed out,
    so a matrix a caller holds never changes. `rowids`: each row's rowid, in `ids` order."""

    token: tuple[int, int]
    position: int
    ids: tuple[str, ...]
    buffer: NDArray[np.float32]
    rowids: NDArray[np.int64]
    positions: _Positions | None = None
    #: the bytes of a fixed vector -> the matrix times it (one float32 per row, in `ids`
    #: order): columns a caller asked for (`candidate_product`), carried along the matrix's
    #: changes; never written after they were handed out
    products: dict[bytes, NDArray[np.float32]] = attrs.Factory(dict)
    #: `ids` as a list that only this cache holds (never handed out): a change writes the
    #: ids that came into it in place and makes one tuple of it (ADR 0101)
    id_list: list[str] = attrs.Factory(lambda self: list(self.ids), takes_self=True)
    matrix: NDArray[np.float32] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.matrix = self.buffer[: len(self.ids)]
        self.matrix.setflags(write=False)

    def position_of(self) -> _Positions:
        if self.positions is None:
            self.positions = _Positions({entry_id: i for i, entry_id in enumerate(self.ids)})
        return self.positions

    def same(self, position: int) -> _Cached:
        """This matrix and these ids, valid at a later log entry (no copy)."""
        kept = _Cached(
            token=self.token,
            position=position,
            ids=self.ids,
            buffer=self.buffer,
            rowids=self.rowids,
            positions=self.positions,
            products=self.products,
            id_list=self.id_list,
        )
        kept.matrix = self.matrix  # the same object: callers may test identity
        return kept


def _spare(rows: int, width: int) -> NDArray[np.float32]:
    """A buffer for `rows` rows of `width` floats and spare rows after them."""
    return np.empty((rows + max(_SPARE_ROWS, rows // 16), width), dtype=np.float32)


def _without(
    cached: _Cached, gone: Sequence[int], added: int
) -> tuple[tuple[str, ...], NDArray[np.float32], NDArray[np.int64]]:
    """The ids, a fresh buffer with room for `added` more rows (the kept rows first) and the
    rowids of `cached` less the rows at positions `gone` (sorted): one copy of the kept rows,
    block by block between the gone ones."""
    matrix, ids = cached.matrix, cached.ids
    buffer = _spare(len(ids) - len(gone) + added, matrix.shape[1])
    kept_ids: list[str] = []
    at = start = 0
    for end in (*gone, len(ids)):
        buffer[at : at + end - start] = matrix[start:end]
        kept_ids += ids[start:end]
        at += end - start
        start = end + 1
    return tuple(kept_ids), buffer, np.delete(cached.rowids, gone)


def _unshared(cached: _Cached) -> bool:
    """Whether nothing but `cached` holds its matrix or any view of its buffer (CPython's
    reference counts, as numpy's `ndarray.resize(refcheck=True)` checks them): then its
    rows may be rewritten in place, since no caller can see them."""
    if not hasattr(sys, "getrefcount"):
        return False
    # the attribute and getrefcount's argument; for the buffer also the matrix's `base`
    return sys.getrefcount(cached.matrix) == 2 and sys.getrefcount(cached.buffer) == 3


def _in_place(
    cached: _Cached,
    gone: Sequence[int],
    new_rowids: NDArray[np.int64],
    new_ids: tuple[str, ...],
    new_matrix: NDArray[np.float32],
) -> tuple[_Cached, NDArray[np.int64]]:
    """`cached` less the rows at positions `gone` (sorted) plus the new rows, written into
    its own buffer and id list (ADR 0101). Only for an unshared buffer with room for every
    row; `cached` is not used afterwards (its buffer and list now hold the result's rows).
    Each gone row is overwritten by a new row while there are new rows (a replace writes
    one row and moves none), the other gone rows by the last row; the other new rows are
    appended. Also returns, for each row of the result, its position in `cached` (>= 0)
    or `-1 - k` for the k-th new row."""
    buffer, id_list, rowids = cached.buffer, cached.id_list, cached.rowids.copy()
    count = len(id_list)
    source = np.arange(count, dtype=np.int64)
    fill = min(len(gone), len(new_ids))
    for k, at in enumerate(gone[:fill]):
        buffer[at] = new_matrix[k]
        id_list[at] = new_ids[k]
        rowids[at] = new_rowids[k]
        source[at] = -1 - k
    for at in reversed(gone[fill:]):  # every position after `at` is already settled
        count -= 1
        if at != count:
            buffer[at] = buffer[count]
            id_list[at] = id_list[count]
            rowids[at] = rowids[count]
            source[at] = source[count]
    del id_list[count:]
    more = len(new_ids) - fill
    if more:
        buffer[count : count + more] = new_matrix[fill:]
        id_list.extend(new_ids[fill:])
    fresh = _Cached(
        token=cached.token,
        position=cached.position,
        ids=tuple(id_list),
        buffer=buffer,
        rowids=np.concatenate([rowids[:count], new_rowids[fill:]]),
        id_list=id_list,
    )
    added = -1 - np.arange(fill, len(new_ids), dtype=np.int64)
    return fresh, np.concatenate([source[:count], added])


def _assembled(
    cached: _Cached,
    gone: Sequence[int],
    added: Sequence[tuple[Any, Any, bytes]],
    position: int,
) -> _Cached | None:
    """`cached` less the rows at positions `gone` (sorted), plus the `added` rows (rowid,
    id, BLOB); None when an added row has another width (rebuild). In `cached`'s own buffer
    when no caller holds it and it has room (`_in_place`), else appended after the rows
    handed out (an add) or copied once into a new buffer."""
    width = cached.matrix.shape[1] if cached.ids else None
    if not gone and not added:
        return cached.same(position)
    new_rowids, new_ids, new_matrix = _stack(added, width)
    if len(new_ids) != len(added):
        return None  # another dimension appeared: rebuild from scratch
    count = len(cached.ids) - len(gone)
    room = count + len(new_ids) <= len(cached.buffer)
    #: for each row of the result, its position in `cached` (>= 0) or -1 - k for the k-th
    #: added row; None: `cached`'s rows unmoved, then the added rows in order
    source: NDArray[np.int64] | None = None
    id_list: list[str] | None = None
    if gone and room and width is not None and _unshared(cached):
        fresh, source = _in_place(cached, gone, new_rowids, new_ids, new_matrix)
        fresh.position = position
    else:
        if gone:
            kept_ids, buffer, rowids = _without(cached, gone, len(new_ids))
            kept = np.delete(np.arange(len(cached.ids), dtype=np.int64), gone)
            source = np.concatenate([kept, -1 - np.arange(len(new_ids), dtype=np.int64)])
        elif width is not None and room:
            # appended after every row handed out so far: the rows before are not copied
            kept_ids, buffer, rowids = cached.ids, cached.buffer, cached.rowids
            id_list = cached.id_list  # only the cache holds it
            id_list.extend(new_ids)
        else:
            buffer = _spare(count + len(new_ids), new_matrix.shape[1])
            if count:
                buffer[:count] = cached.matrix
            kept_ids, rowids = cached.ids, cached.rowids
        buffer[count : count + len(new_ids)] = new_matrix
        fresh = _Cached(
            token=cached.token,
            position=position,
            ids=kept_ids + new_ids,
            buffer=buffer,
            rowids=np.concatenate([rowids, new_rowids]),
            id_list=id_list if id_list is not None else list(kept_ids + new_ids),
        )
    _carry(cached, fresh, source, new_matrix, gone)
    return fresh


#: The most rows whose position changed for which `_carry` patches the id -> position
#: map (more: it is built again when asked for).
_PATCHED_POSITIONS: Final = 256
#: Product columns kept per matrix (`candidate_product`).
_CACHED_PRODUCTS: Final = 4


def _carry(
    old: _Cached,
    new: _Cached,
    source: NDArray[np.int64] | None,
    added: NDArray[np.float32],
    gone: Sequence[int],
) -> None:
    """Carry `old`'s id -> position map and product columns over to `new`, whose rows are
    `old`'s rows at `source` (>= 0) and the `added` rows (-1 - k); `source` None: `old`'s
    rows unmoved, then the added rows. A column keeps its values for the kept rows and
    multiplies only the added rows (no pass over the kept rows' vectors); the map is
    patched by the rows that left, moved or came (ADR 0082). Both are new objects: the old
    ones may be held by a caller."""
    kept = len(old.ids) - len(gone)
    for key, column in old.products.items():
        vector = np.frombuffer(key, dtype=np.float32)
        extra = np.zeros(0, dtype=np.float32)
        if len(added):
            if added.ndim != 2 or added.shape[1] != vector.shape[0]:
                continue  # another width: asked for again
            extra = np.asarray(added @ vector, dtype=np.float32)
        if source is None:
            carried = np.concatenate([column[:kept], extra])
        else:
            came = source < 0
            carried = column[np.where(came, 0, source)]  # a new array
            carried[came] = extra[-1 - source[came]]
        carried.setflags(write=False)
        new.products[key] = carried
    if old.positions is None:
        return  # built from the ids when asked for
    if source is None:
        moved: Iterable[int] = range(kept, len(new.ids))
    else:
        moved = np.flatnonzero(source != np.arange(len(source), dtype=np.int64)).tolist()
        if len(moved) > _PATCHED_POSITIONS:
            return  # many rows moved (a copy): built again when asked for
    placed = [(new.ids[at], at) for at in moved]
    new.positions = old.positions.patched([old.ids[at] for at in gone], placed, length=len(new.ids))


#: Changes a `_Positions` overlay holds before the map is built again from the ids.
_OVERLAY_ROWS: Final = 2_048


class _Positions(Mapping[str, int]):
    """The row of each id in a cached matrix: a map built once from the ids, and a small
    overlay of the ids that left (-1), moved or came since (ADR 0082), so that a change of
    a few rows copies neither the map nor the ids. Never changed once made: `patched` gives
    a new one."""

    __slots__ = ("_base", "_changes", "_length")

    def __init__(
        self,
        base: dict[str, int],
        changes: dict[str, int] | None = None,
        length: int | None = None,
    ) -> None:
        self._base = base
        self._changes = changes or {}
        self._length = len(base) if length is None else length

    def __getitem__(self, key: str) -> int:
        found = self._changes.get(key)
        if found is None:
            return self._base[key]
        if found < 0:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Any = None) -> Any:
        found = self._changes.get(key)
        if found is None:
            return self._base.get(key, default)
        return default if found < 0 else found

    def __contains__(self, key: object) -> bool:
        found = self._changes.get(key)  # type: ignore[call-overload]
        return key in self._base if found is None else found >= 0

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[str]:
        changes = self._changes
        yield from (key for key in self._base if key not in changes)
        yield from (key for key, at in changes.items() if at >= 0)

    def patched(
        self, left: Iterable[str], placed: Iterable[tuple[str, int]], *, length: int
    ) -> _Positions | None:
        """This map less the ids that `left`, with the `placed` ids at their rows; None
        when the overlay grew past `_OVERLAY_ROWS` (the caller builds the map again)."""
        changes = dict(self._changes)
        for key in left:
            changes[key] = -1
        changes.update(placed)
        if len(changes) > _OVERLAY_ROWS:
            return None
        return _Positions(self._base, changes, length)


def _patched(
    conn: Any,
    cached: _Cached,
    position: int,
    changed: list[int],
    where: str,
    params: list[Any],
    model_id: str,
    current: str,
    more: list[Any],
) -> _Cached | None:
    """The cached matrix brought up to log entry `position` (ADR 0043): only the `changed`
    rows (rowids, from the change log) are read. A changed row still in scope with the same
    id and vector stays where it is; one that left the scope, or whose id or vector changed,
    leaves; changed rows in scope with a current vector that are not (or no longer) in the
    matrix are appended. None when the matrix must be rebuilt."""
    if not changed:
        return cached.same(position)
    fetched: list[Any] = []
    for start in range(0, len(changed), _ID_CHUNK):
        chunk = changed[start : start + _ID_CHUNK]
        marks = ", ".join("?" for _ in chunk)
        fetched += conn.execute(
            f"SELECT m.rowid, m.id, m.embedding FROM memories AS m NOT INDEXED "
            f"WHERE m.rowid IN ({marks}) AND {where} AND {current}",
            (*chunk, *params, model_id, *more),
        ).fetchall()
    by_rowid = {int(rowid): (str(entry_id), blob) for rowid, entry_id, blob in fetched}
    gone = []
    if len(changed) <= 16:  # a comparison per changed row is cheaper than `isin`'s sort
        hits = sorted(int(at) for rowid in changed for at in np.flatnonzero(cached.rowids == rowid))
    else:
        hits = np.flatnonzero(np.isin(cached.rowids, np.array(changed, dtype=np.int64))).tolist()
    for at in hits:
        rowid = int(cached.rowids[at])
        row = by_rowid.get(rowid)
        if row is not None and row[0] == cached.ids[at] and row[1] == to_blob(cached.matrix[at]):
            del by_rowid[rowid]  # still in scope with the same vector
        else:
            gone.append(at)
    added = [(rowid, entry_id, blob) for rowid, (entry_id, blob) in by_rowid.items()]
    return _assembled(cached, gone, added, position)


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
