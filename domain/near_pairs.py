"""Every pair of texts that meets the token rule, found without comparing every pair (ADR 0036).

The token rule is the add path's (`similarity.token_set`, Jaccard >= `JACCARD_THRESHOLD`). The
join is exact: it returns the same pairs as comparing all n(n-1)/2 of them, which a property
test checks against brute force.

Prefix filtering (the bound `ScopeIndex.near_candidates` uses): Jaccard(A, B) >= t needs
|A & B| >= t * max(|A|, |B|), so under one global token order the first |X| - ceil(t * |X|) + 1
tokens of A and of B share a token. Rows are visited by size; each probes the postings of its
prefix among the rows already seen (no larger than itself) and is then indexed by its own
prefix. The size band t * |A| <= |B| drops most of what a probe finds before any set work.
Tokens are ordered rarest first, so prefixes hold the tokens with the shortest postings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

from pi_hermes_memory.domain.similarity import JACCARD_THRESHOLD

__all__ = ["min_overlap", "prefix_length", "token_pairs"]

#: (i, j, jaccard) with i < j, indexes into the caller's sequence
Pair = tuple[int, int, float]


def min_overlap(size: int, threshold: float = JACCARD_THRESHOLD) -> int:
    """The fewest shared tokens a set of `size` tokens needs to reach `threshold` with any
    other set; a hair under t*|A| so that float rounding can only widen a probe."""
    return max(1, math.ceil(threshold * size - 1e-9))


def prefix_length(size: int, threshold: float = JACCARD_THRESHOLD) -> int:
    """How many of a set's tokens (in the global order) a partner must share one of."""
    return size - min_overlap(size, threshold) + 1


def token_pairs(
    token_sets: Sequence[frozenset[str]],
    *,
    threshold: float = JACCARD_THRESHOLD,
    keep: Callable[[int, int], bool] | None = None,
    groups: Sequence[Hashable] | None = None,
) -> list[Pair]:
    """Every (i, j, jaccard) with i < j and jaccard(sets[i], sets[j]) >= `threshold`, sorted.

    `groups`: pairs within one group are left out (e.g. the same scope). `keep(i, j)`: a
    further filter, asked only for pairs that meet the threshold. Empty sets pair with nothing
    (`similarity.jaccard` of two empty sets is 0).
    """
    frequency: dict[str, int] = {}
    for tokens in token_sets:
        for token in tokens:
            frequency[token] = frequency.get(token, 0) + 1
    rank = {t: r for r, t in enumerate(sorted(frequency, key=lambda t: (frequency[t], t)))}
    order = sorted((i for i, s in enumerate(token_sets) if s), key=lambda i: len(token_sets[i]))
    postings: dict[int, list[int]] = {}
    found: list[Pair] = []
    for i in order:
        mine = token_sets[i]
        size = len(mine)
        ranked = sorted(rank[t] for t in mine)
        prefix = ranked[: prefix_length(size, threshold)]
        smallest = threshold * size - 1e-9
        seen: set[int] = set()
        for token in prefix:
            for j in postings.get(token, ()):
                if j in seen:
                    continue
                seen.add(j)
                theirs = token_sets[j]
                if len(theirs) < smallest:
                    continue
                if groups is not None and groups[i] == groups[j]:
                    continue
                shared = len(mine & theirs)
                score = shared / (size + len(theirs) - shared)
                if score < threshold:
                    continue
                a, b = (i, j) if i < j else (j, i)
                if keep is None or keep(a, b):
                    found.append((a, b, score))
        for token in prefix:
            postings.setdefault(token, []).append(i)
    found.sort()
    return found
