"""Offline near-duplicate pre-clustering of a consolidation's input (issue 12 §4).

Before the LLM sees a target's entries, pairs are linked when both rows have a stored vector
of the current model and their cosine is >= 0.82, else by the add path's token rule
(`similarity.is_near_duplicate` without a cosine). Linked entries form connected components:
each component of two or more is a `[Near-duplicate cluster N]` block, the rest are listed
under `[Ungrouped entries]`; with no cluster at all the entries keep the plain `§` format.
Token links come from the exact all-pairs join of `near_pairs` (ADR 0036), not from n²
comparisons; pure (the cosines come in as unit vectors, never from a provider).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs
from pi_hermes_memory.domain.search.near_pairs import token_pairs
from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD, token_set

__all__ = ["CLUSTER_COSINE", "Clustering", "CosineLinks", "cluster", "render"]

#: cosine at or above which two entries with current vectors share a cluster
CLUSTER_COSINE: Final = 0.82
SEPARATOR: Final = "§"


@attrs.frozen(kw_only=True)
class Clustering:
    #: clusters of two or more entry ids, in input order of their first member
    clusters: tuple[tuple[str, ...], ...]
    #: the ids in no cluster, in input order
    ungrouped: tuple[str, ...]


@attrs.frozen(kw_only=True)
class CosineLinks:
    """Cosine links computed by the caller (e.g. one matrix product): `covered` are the ids
    with a current vector, `pairs` the (smaller id, larger id) pairs of them whose cosine is
    >= CLUSTER_COSINE. Pairs of covered ids not in `pairs` are not linked."""

    covered: frozenset[str]
    pairs: frozenset[tuple[str, str]]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


def cluster(
    entries: Sequence[tuple[str, str]],
    vectors: Mapping[str, Sequence[float]] | None = None,
    *,
    links: CosineLinks | None = None,
) -> Clustering:
    """Connected components of the near-duplicate graph of `entries` ((id, text) pairs).
    `vectors`: unit vectors of the current model by id (rows without one use the token rule);
    or `links`, the same decision for the covered rows already made by the caller."""
    vectors = vectors or {}
    covered = links.covered if links is not None else frozenset()
    cos_pairs = links.pairs if links is not None else frozenset()
    n = len(entries)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def link(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    ids = [entry_id for entry_id, _ in entries]
    vecs = [vectors.get(entry_id) for entry_id in ids]
    in_links = [bool(covered) and entry_id in covered for entry_id in ids]

    def by_cosine(i: int, j: int) -> bool:
        """Whether the pair is decided by its vectors (then never by tokens)."""
        if in_links[i] and in_links[j]:
            return True
        vec_i, vec_j = vecs[i], vecs[j]
        return vec_i is not None and vec_j is not None and len(vec_i) == len(vec_j)

    # the cosine side: the caller's links, else the dot products of the rows with a vector
    index: dict[str, list[int]] = {}
    for i, entry_id in enumerate(ids):
        index.setdefault(entry_id, []).append(i)
    for left, right in cos_pairs:
        if left > right:
            continue  # a pair is looked up as (smaller id, larger id)
        for i in index.get(left, ()):
            for j in index.get(right, ()):
                if i != j and in_links[i] and in_links[j]:
                    link(i, j)
    with_vector = [i for i in range(n) if vecs[i] is not None]
    for x, i in enumerate(with_vector):
        for j in with_vector[x + 1 :]:
            if not (in_links[i] and in_links[j]) and by_cosine(i, j):
                vec_i, vec_j = vecs[i], vecs[j]
                assert vec_i is not None and vec_j is not None
                if _dot(vec_i, vec_j) >= CLUSTER_COSINE:
                    link(i, j)
    # the token side: every pair over the add path's rule, without comparing every pair
    # (`near_pairs.token_pairs`), for the pairs no vector decides
    tokens = [token_set(text) for _, text in entries]
    for i, j, _ in token_pairs(
        tokens, threshold=JACCARD_THRESHOLD, keep=lambda i, j: not by_cosine(i, j)
    ):
        link(i, j)
    groups: dict[int, list[str]] = {}
    for i, (entry_id, _) in enumerate(entries):
        groups.setdefault(find(i), []).append(entry_id)
    ordered = [groups[root] for root in sorted(groups)]
    return Clustering(
        clusters=tuple(tuple(g) for g in ordered if len(g) > 1),
        ungrouped=tuple(g[0] for g in ordered if len(g) == 1),
    )


def render(entries: Sequence[tuple[str, str]], clustering: Clustering) -> str:
    """The entries as the LLM sees them (see the module docstring)."""
    text = dict(entries)
    joiner = f"\n{SEPARATOR}\n"
    if not clustering.clusters:
        return joiner.join(t for _, t in entries)
    blocks = [
        f"[Near-duplicate cluster {n}]\n" + joiner.join(text[i] for i in ids)
        for n, ids in enumerate(clustering.clusters, start=1)
    ]
    if clustering.ungrouped:
        blocks.append("[Ungrouped entries]\n" + joiner.join(text[i] for i in clustering.ungrouped))
    return "\n\n".join(blocks)
