"""Query expansion from the store's own vocabulary: pseudo-relevance feedback (ADR 0071).

`rocchio` moves a query vector towards the centroid of its best-matching stored rows (the
classic Rocchio update with positive feedback only): the rows a query already finds best stand
in for the words the user did not type, so a paraphrase can reach a row that shares none of
the query's words. Pure numpy over unit vectors; no provider call, no I/O.

Off by default: the retrieval benchmark (tests/bench/paraphrase.py) measured it on LoCoMo and
on the paraphrase examples, and ADR 0071 records where it did not help. `Expansion` is the
setting `EmbeddingService.search_vectors` takes to turn it on.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.errors import InvalidArgument

__all__ = ["Expansion", "rocchio"]

Matrix = NDArray[np.float32]

#: Feedback rows used when the setting does not say.
DEFAULT_TOP: Final = 3
#: Weight of the feedback centroid against the query (the query weighs 1).
DEFAULT_WEIGHT: Final = 0.5


def _top(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{attribute.name} must be an integer >= 1; got {value!r}")


def _weight(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 4:
        raise InvalidArgument(f"{attribute.name} must be a number in (0, 4]; got {value!r}")


@attrs.frozen(kw_only=True)
class Expansion:
    """Rocchio pseudo-relevance feedback: the query vector plus `weight` times the centroid
    of the `top` stored rows closest to it, re-normalised."""

    top: int = attrs.field(default=DEFAULT_TOP, validator=_top)
    weight: float = attrs.field(default=DEFAULT_WEIGHT, validator=_weight)

    def apply(self, query: Matrix, matrix: Matrix) -> Matrix:
        return rocchio(query, matrix, top=self.top, weight=self.weight)


def rocchio(query: Matrix, matrix: Matrix, *, top: int, weight: float) -> Matrix:
    """`query` (unit, shape (d,)) moved towards the mean of the `top` rows of `matrix` (unit
    rows, shape (n, d)) with the highest cosine, then scaled to unit length. With no rows, or
    rows of another width, the query is returned unchanged (a copy)."""
    if top < 1:
        raise InvalidArgument(f"top must be an integer >= 1; got {top!r}")
    if weight < 0:
        raise InvalidArgument(f"weight must be >= 0; got {weight!r}")
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] != query.shape[0]:
        return np.array(query, dtype=np.float32, copy=True)
    cosines = matrix @ query
    count = min(top, matrix.shape[0])
    best = np.argsort(-cosines, kind="stable")[:count]  # ties: the earlier row, every time
    centroid = matrix[best].astype(np.float64).mean(axis=0)
    moved = query.astype(np.float64) + weight * centroid
    norm = float(np.linalg.norm(moved))
    if not np.isfinite(norm) or norm == 0.0:
        return np.array(query, dtype=np.float32, copy=True)
    return np.ascontiguousarray(moved / norm, dtype=np.float32)
