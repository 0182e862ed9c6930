"""Every pair of texts that meets the token rule, found without comparing every pair (ADR 0036).

The token rule is the add path's (`similarity.token_set`, Jaccard >= `JACCARD_THRESHOLD`). The
join is exact: it returns the same pairs as comparing all n(n-1)/2 of them, which a property
test checks against brute force.

Pigeonhole signatures (partition filtering). Jaccard(A, B) >= t means the overlap o is at
least t(a + b)/(1 + t), so the two sets differ in at most H = a + b - 2o <= (a + b)(1 - t)/(1 + t)
tokens (`max_difference`). Split the token universe into k = H + 1 classes (token code mod k):
the H differing tokens fall into at most H classes, so in at least one class A and B hold
exactly the same tokens. Each row therefore emits, for every k its possible partner sizes call
for (sizes in [t*a, a/t]), the signature (k, class, its tokens in that class); two rows are
candidates when they share a signature, and every candidate is verified exactly. Prefix
filtering (`ScopeIndex.near_candidates`) degenerates when tokens are equally common (every row
then meets hundreds of others through its prefix); a signature is met only by rows that agree
on a whole class.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence

from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD

__all__ = ["max_difference", "partner_sizes", "token_pairs"]

#: (i, j, jaccard) with i < j, indexes into the caller's sequence
Pair = tuple[int, int, float]
# float rounding may only make a bound looser (more candidates), never tighter
_EPS = 1e-9


def max_difference(total: int, threshold: float = JACCARD_THRESHOLD) -> int:
    """The most tokens two sets of sizes summing to `total` can differ in (symmetric
    difference) and still reach `threshold`."""
    return math.floor(total * (1 - threshold) / (1 + threshold) + _EPS)


def partner_sizes(size: int, threshold: float = JACCARD_THRESHOLD) -> range:
    """The sizes a set of `size` tokens can reach `threshold` with: [t*a, a/t]."""
    return range(math.ceil(threshold * size - _EPS), math.floor(size / threshold + _EPS) + 1)


def token_pairs(
    token_sets: Sequence[frozenset[str]],
    *,
    threshold: float = JACCARD_THRESHOLD,
    keep: Callable[[int, int], bool] | None = None,
    groups: Sequence[Hashable] | None = None,
) -> list[Pair]:
    """Every (i, j, jaccard) with i < j and jaccard(sets[i], sets[j]) >= `threshold`, sorted.

    `groups`: pairs within one group are left out (e.g. the same scope). `keep(i, j)`: a
    further filter, asked before the pair is verified. Empty sets pair with nothing
    (`similarity.jaccard` of two empty sets is 0). `threshold` must be in (0, 1].
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1]; got {threshold!r}")
    if groups is not None and len(set(groups)) < 2:
        return []  # every pair is a same-group pair
    code = {t: c for c, t in enumerate(sorted({t for s in token_sets for t in s}))}
    signatures: dict[tuple[int, int, tuple[int, ...]], list[int]] = {}
    for i, tokens in enumerate(token_sets):
        if not tokens:
            continue
        size = len(tokens)
        codes = sorted(code[t] for t in tokens)
        classes = {max_difference(size + b, threshold) + 1 for b in partner_sizes(size, threshold)}
        for k in classes:
            parts: list[list[int]] = [[] for _ in range(k)]
            for c in codes:
                parts[c % k].append(c)
            for r, part in enumerate(parts):
                signatures.setdefault((k, r, tuple(part)), []).append(i)
    seen: set[tuple[int, int]] = set()
    found: list[Pair] = []
    for members in signatures.values():
        if len(members) < 2:
            continue
        for i, j in _candidates(members, groups):
            if (i, j) in seen:
                continue
            seen.add((i, j))
            if keep is not None and not keep(i, j):
                continue
            a, b = token_sets[i], token_sets[j]
            shared = len(a & b)
            score = shared / (len(a) + len(b) - shared)
            if score >= threshold:
                found.append((i, j, score))
    found.sort()
    return found


def _candidates(members: list[int], groups: Sequence[Hashable] | None) -> Iterator[tuple[int, int]]:
    """The (i, j) pairs, i < j, of one signature's members (in increasing order) that lie in
    different groups. Same-group pairs are never formed, so a signature shared by many rows of
    one scope costs one pass over them, not their square (nor a `seen` entry each)."""
    if groups is None:
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                yield i, j
        return
    by_group: dict[Hashable, list[int]] = {}
    for i in members:
        by_group.setdefault(groups[i], []).append(i)
    if len(by_group) < 2:
        return
    parts = list(by_group.values())
    for x, left in enumerate(parts):
        for right in parts[x + 1 :]:
            for i in left:
                for j in right:
                    yield (i, j) if i < j else (j, i)
