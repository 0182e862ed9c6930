"""The doctor's cross-scope near-duplicate scan: every pair, no budget (issue 13 §1, ADR 0036).

Active rows of the global `memory` layer and of the `project` target, each with its scope
("global" or "project:<name>"). A pair of two scopes is a candidate when both rows have a
stored current vector and their cosine is >= `CLUSTER_COSINE` (consolidation's
pre-clustering threshold), else when the token rule holds (`similarity.token_set`, Jaccard
>= `JACCARD_THRESHOLD`). Same-scope pairs are never compared.

Cosine side: the unit vectors multiplied tile by tile (`BLOCK` x `BLOCK` float32), so memory
stays bounded whatever the row count; a tile entry within `_MARGIN` of the threshold is
decided by the float64 cosine of the two stored vectors (`pair_cosine`), the same number a
brute-force comparison computes, so the join returns exactly the brute-force pairs.
Token side: `domain.near_pairs.token_pairs` (pigeonhole signatures), asked only for pairs
where a side has no vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
from pi_hermes_memory.domain.learning.clustering import CLUSTER_COSINE
from pi_hermes_memory.domain.search.near_pairs import token_pairs
from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD, token_set

__all__ = [
    "BLOCK",
    "GLOBAL_SCOPE",
    "PROMOTION",
    "SUSPECTED_DUPLICATE",
    "ScanRow",
    "ScopePair",
    "cosine_pairs",
    "cross_scope_pairs",
    "pair_cosine",
    "unit_matrix",
]

BLOCK = 2048
GLOBAL_SCOPE = "global"
PROMOTION = "promotion candidate"
SUSPECTED_DUPLICATE = "suspected duplicate"
#: float32 tile products are within ~1e-6 of the float64 cosine for unit vectors; anything
#: this close to the threshold is recomputed exactly
_MARGIN = 1e-4


@attrs.frozen(kw_only=True)
class ScanRow:
    entry_id: str
    scope: str  # "global" or "project:<name>"
    text: str
    #: the stored vector of the current model (float32), or None
    vector: Any = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen(kw_only=True)
class ScopePair:
    left: ScanRow
    right: ScanRow
    basis: str  # "cosine" or "token"
    score: float

    @property
    def kind(self) -> str:
        if self.left.scope == GLOBAL_SCOPE or self.right.scope == GLOBAL_SCOPE:
            return SUSPECTED_DUPLICATE
        return PROMOTION


def unit_matrix(vectors: Sequence[Any]) -> tuple[Any, Any]:
    """The vectors as one float32 matrix and their float64 norms."""
    matrix = np.asarray(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]))
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
    return matrix, norms


def pair_cosine(matrix: Any, norms: Any, i: int, j: int) -> float:
    """The cosine of rows i and j in float64: the number both the join and brute force use."""
    a = matrix[i].astype(np.float64)
    b = matrix[j].astype(np.float64)
    return float(np.dot(a, b) / (norms[i] * norms[j]))


def cosine_pairs(
    matrix: Any,
    norms: Any,
    groups: Sequence[object],
    *,
    threshold: float = CLUSTER_COSINE,
    block: int = BLOCK,
) -> list[tuple[int, int, float]]:
    """Every (i, j, cosine) with i < j, different groups and cosine >= `threshold`, sorted.
    Rows with a zero norm pair with nothing."""
    n = len(norms)
    if n < 2:
        return []
    safe = np.where(norms > 0, norms, 1.0)
    _, codes = np.unique(np.asarray([str(g) for g in groups], dtype=object), return_inverse=True)
    codes = codes.reshape(-1)
    # rows sorted by group: a tile whose rows and columns all lie in one group holds only
    # same-scope pairs and is skipped without a product (one big scope costs nothing)
    order = np.argsort(codes, kind="stable")
    unit = (matrix / safe[:, None].astype(np.float32)).astype(np.float32)[order]
    valid = (norms > 0)[order]
    codes = codes[order]
    found: list[tuple[int, int, float]] = []
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        row_codes = codes[lo:hi]
        for co in range(lo, n, block):
            ce = min(co + block, n)
            col_codes = codes[co:ce]
            if row_codes[0] == row_codes[-1] == col_codes[0] == col_codes[-1]:
                continue
            tile = unit[lo:hi] @ unit[co:ce].T
            mask = tile >= threshold - _MARGIN
            mask &= row_codes[:, None] != col_codes[None, :]
            mask &= valid[lo:hi, None] & valid[None, co:ce]
            if co == lo:  # the diagonal tile: each pair once
                mask &= np.triu(np.ones(mask.shape, dtype=bool), k=1)
            for a, b in np.argwhere(mask):
                x, y = int(order[lo + int(a)]), int(order[co + int(b)])
                i, j = (x, y) if x < y else (y, x)
                score = pair_cosine(matrix, norms, i, j)
                if score >= threshold:
                    found.append((i, j, score))
    found.sort()
    return found


def cross_scope_pairs(
    rows: Sequence[ScanRow],
    *,
    cosine_threshold: float = CLUSTER_COSINE,
    jaccard_threshold: float = JACCARD_THRESHOLD,
    block: int = BLOCK,
) -> list[ScopePair]:
    """Every cross-scope pair by the doctor's rule, best first (score, then ids)."""
    with_vector = [i for i, r in enumerate(rows) if r.vector is not None]
    dims = {len(rows[i].vector) for i in with_vector}
    vectored: set[int] = set()
    pairs: list[ScopePair] = []
    if len(dims) == 1 and with_vector:
        matrix, norms = unit_matrix([rows[i].vector for i in with_vector])
        vectored = {i for k, i in enumerate(with_vector) if norms[k] > 0}
        groups = [rows[i].scope for i in with_vector]
        for a, b, score in cosine_pairs(
            matrix, norms, groups, threshold=cosine_threshold, block=block
        ):
            left, right = rows[with_vector[a]], rows[with_vector[b]]
            pairs.append(ScopePair(left=left, right=right, basis="cosine", score=score))

    def token_side(i: int, j: int) -> bool:
        return not (i in vectored and j in vectored)

    if len(vectored) == len(rows):
        return _ordered(pairs)  # the token rule decides no pair
    for i, j, score in token_pairs(
        [token_set(r.text) for r in rows],
        threshold=jaccard_threshold,
        groups=[r.scope for r in rows],
        keep=token_side,
    ):
        pairs.append(ScopePair(left=rows[i], right=rows[j], basis="token", score=score))
    return _ordered(pairs)


def _ordered(pairs: list[ScopePair]) -> list[ScopePair]:
    pairs.sort(key=lambda p: (-p.score, p.left.entry_id, p.right.entry_id))
    return pairs
