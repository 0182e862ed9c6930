"""A custom vector store written against the public ports only (ADR 0057): it keeps its own
vectors in a dict and reads the memory rows through the read port `MemoryRows`, so it works
over any storage that offers the port (the default SQLite store, the in-memory one)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.ports import MemoryRow, MemoryRows, VectorScope


class RowsVectorStore:
    """Vectors by row id with the model and the text they were made from: a row removed or
    rewritten has no current vector; a row moved in place keeps its own."""

    def __init__(self, rows: MemoryRows) -> None:
        self._rows = rows
        self._background: dict[str, tuple[str, NDArray[np.float32]]] = {}
        self._stored: dict[str, tuple[str, str, NDArray[np.float32]]] = {}
        self.calls = 0  # how often the store was used (the integration test checks it)

    def _current(
        self, row: MemoryRow, model_id: str, dimension: int | None
    ) -> NDArray[np.float32] | None:
        stored = self._stored.get(row.id)
        if stored is None or stored[0] != model_id or stored[1] != row.text:
            return None
        if dimension is not None and stored[2].shape != (dimension,):
            return None
        return stored[2]

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
        self.calls += 1
        found: list[tuple[str, str]] = []
        for row in self._rows.in_scope(scope):
            if len(found) >= limit:
                break
            if before is not None and row.id >= before:
                continue
            if everything or self._current(row, model_id, dimension) is None:
                found.append((row.id, row.text))
        return found

    def count(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[int, int]:
        rows = self._rows.in_scope(scope)
        return len(rows), sum(self._current(r, model_id, dimension) is not None for r in rows)

    def put(
        self, rows: Sequence[tuple[str, str]], vectors: NDArray[np.float32], model_id: str
    ) -> int:
        self.calls += 1
        if len(rows) != len(vectors):
            raise ValueError(f"{len(rows)} rows but {len(vectors)} vectors")
        known = self._rows.by_id(entry_id for entry_id, _ in rows)
        stored = 0
        for (entry_id, text), vector in zip(rows, vectors, strict=True):
            row = known.get(entry_id)
            if row is None or row.text != text:
                continue
            self._stored[entry_id] = (model_id, text, np.array(vector, dtype=np.float32))
            stored += 1
        return stored

    def vectors(
        self, ids: Iterable[str], model_id: str, *, dimension: int | None = None
    ) -> dict[str, NDArray[np.float32]]:
        found: dict[str, NDArray[np.float32]] = {}
        for entry_id, row in self._rows.by_id(ids).items():
            vector = self._current(row, model_id, dimension)
            if vector is not None:
                found[entry_id] = vector
        return found

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
        if matrix.ndim != 2 or 0 in matrix.shape or not np.isfinite(matrix).all():
            raise ValueError(f"background vectors must be a finite (n, d) matrix: {matrix.shape}")
        self._background[model_id] = (sample, matrix)

    def candidates(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[tuple[str, ...], NDArray[np.float32]]:
        self.calls += 1
        ids: list[str] = []
        vectors: list[NDArray[np.float32]] = []
        for row in self._rows.in_scope(scope):
            vector = self._current(row, model_id, dimension)
            if vector is None:
                continue
            if dimension is None:
                dimension = vector.shape[0]  # the newest row decides
            if vector.shape == (dimension,):
                ids.append(row.id)
                vectors.append(vector)
        if not ids:
            return (), np.zeros((0, dimension or 0), dtype=np.float32)
        return tuple(ids), np.stack(vectors).astype(np.float32)
