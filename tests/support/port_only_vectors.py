"""A vector store that offers the `VectorStore` port's methods only: the search path before ADR
0082 (the service builds the id -> row map itself and multiplies the matrix by the query and the
background's centroid on every search), kept for the properties and the benchmark that compare
it with the store's own map and centroid column."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.ports.vectors import VectorScope


class PortOnlyVectorStore:
    """`store`'s port methods, and nothing else (no `candidate_positions`,
    `candidate_product`)."""

    def __init__(self, store: Any) -> None:
        self._store = store

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
        return list(
            self._store.missing(
                scope,
                model_id,
                dimension=dimension,
                limit=limit,
                before=before,
                everything=everything,
            )
        )

    def count(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[int, int]:
        rows, with_vector = self._store.count(scope, model_id, dimension=dimension)
        return int(rows), int(with_vector)

    def put(
        self, rows: Sequence[tuple[str, str]], vectors: NDArray[np.float32], model_id: str
    ) -> int:
        return int(self._store.put(rows, vectors, model_id))

    def vectors(
        self, ids: Iterable[str], model_id: str, *, dimension: int | None = None
    ) -> dict[str, NDArray[np.float32]]:
        return dict(self._store.vectors(ids, model_id, dimension=dimension))

    def candidates(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[tuple[str, ...], NDArray[np.float32]]:
        ids, matrix = self._store.candidates(scope, model_id, dimension=dimension)
        return ids, matrix

    def background(
        self, model_id: str, sample: str, *, dimension: int | None = None
    ) -> NDArray[np.float32] | None:
        found = self._store.background(model_id, sample, dimension=dimension)
        return None if found is None else np.asarray(found, dtype=np.float32)

    def put_background(self, model_id: str, sample: str, vectors: NDArray[np.float32]) -> None:
        self._store.put_background(model_id, sample, vectors)
