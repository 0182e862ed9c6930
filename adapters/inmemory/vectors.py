"""The `VectorStore` port in memory, over the rows of an `InMemoryStorage` (for tests and
embedding). Same contract as the SQLite store (`VectorStoreContract`): vectors are kept by row
id with their model id and the text they were computed from, so a row that was removed or
rewritten has no current vector, and a row moved in place (promote/demote) keeps its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.ports.vectors import VectorScope

__all__ = ["InMemoryVectorStore"]


@attrs.frozen
class _Stored:
    model_id: str
    text: str
    vector: NDArray[np.float32] = attrs.field(eq=False)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _admits(scope: VectorScope, row: Mapping[str, object]) -> bool:
    if row.get("flagged") is not None:  # as the SQLite scope predicate (ADR 0022)
        return False
    return scope.admits(
        Target(str(row["target"])),
        _str(row.get("project")),
        _str(row.get("category")),
        _str(row.get("superseded_by")),
        _str(row.get("namespace")),
    )


class InMemoryVectorStore:
    def __init__(self, storage: InMemoryStorage) -> None:
        self._storage = storage
        self._stored: dict[str, _Stored] = {}
        #: model id -> (background sample digest, its vectors)
        self._background: dict[str, tuple[str, NDArray[np.float32]]] = {}
        self._lock = threading.Lock()

    def _current(
        self, entry_id: str, row: Mapping[str, object], model_id: str, dimension: int | None
    ) -> NDArray[np.float32] | None:
        stored = self._stored.get(entry_id)
        if stored is None or stored.model_id != model_id or stored.text != row.get("text"):
            return None
        if dimension is not None and stored.vector.shape != (dimension,):
            return None
        return stored.vector

    def _in_scope(self, scope: VectorScope) -> list[tuple[str, Mapping[str, object]]]:
        rows: list[tuple[str, Mapping[str, object]]] = [
            (i, r) for i, r in list(self._storage.rows.items()) if _admits(scope, r)
        ]
        rows.sort(key=lambda item: item[0], reverse=True)  # newest first
        return rows

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
        found: list[tuple[str, str]] = []
        for entry_id, row in self._in_scope(scope):
            if len(found) >= limit:
                break
            if before is not None and entry_id >= before:
                continue
            if everything or self._current(entry_id, row, model_id, dimension) is None:
                found.append((entry_id, str(row["text"])))
        return found

    def count(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[int, int]:
        rows = self._in_scope(scope)
        current = sum(
            1 for i, row in rows if self._current(i, row, model_id, dimension) is not None
        )
        return len(rows), current

    def put(
        self, rows: Sequence[tuple[str, str]], vectors: NDArray[np.float32], model_id: str
    ) -> int:
        if len(rows) != len(vectors):
            raise ValueError(f"{len(rows)} rows but {len(vectors)} vectors")
        stored = 0
        with self._lock:
            table = self._storage.rows
            for (entry_id, text), vector in zip(rows, vectors, strict=True):
                row = table.get(entry_id)
                if row is None or row.get("text") != text:
                    continue
                frozen = np.array(vector, dtype=np.float32)
                frozen.setflags(write=False)
                self._stored[entry_id] = _Stored(model_id, text, frozen)
                stored += 1
        return stored

    def background(
        self, model_id: str, sample: str, *, dimension: int | None = None
    ) -> NDArray[np.float32] | None:
        stored = self._background.get(model_id)
        if stored is None or stored[0] != sample:
            return None
        if dimension is not None and stored[1].shape[1] != dimension:
            return None
        return stored[1]

    def put_background(self, model_id: str, sample: str, vectors: NDArray[np.float32]) -> None:
        matrix = np.array(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
            raise ValueError(
                f"background vectors must be a non-empty (n, d) matrix; got {matrix.shape}"
            )
        if not np.isfinite(matrix).all():
            raise ValueError("background vectors must be finite")
        matrix.setflags(write=False)
        with self._lock:
            self._background[model_id] = (sample, matrix)

    def vectors(
        self, ids: Iterable[str], model_id: str, *, dimension: int | None = None
    ) -> dict[str, NDArray[np.float32]]:
        table = self._storage.rows
        found: dict[str, NDArray[np.float32]] = {}
        for entry_id in ids:
            row = table.get(entry_id)
            vector = None if row is None else self._current(entry_id, row, model_id, dimension)
            if vector is not None:
                found[entry_id] = vector
        return found

    def candidates(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[tuple[str, ...], NDArray[np.float32]]:
        ids: list[str] = []
        vectors: list[NDArray[np.float32]] = []
        for entry_id, row in self._in_scope(scope):
            vector = self._current(entry_id, row, model_id, dimension)
            if vector is None:
                continue
            if dimension is None:
                dimension = vector.shape[0]  # the newest row decides
            if vector.shape == (dimension,):
                ids.append(entry_id)
                vectors.append(vector)
        if not ids:
            return (), np.zeros((0, dimension or 0), dtype=np.float32)
        return tuple(ids), np.stack(vectors).astype(np.float32)
