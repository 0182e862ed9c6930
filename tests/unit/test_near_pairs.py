"""The doctor's joins find exactly the brute-force pairs: no miss, no extra (ADR 0036)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.doctor.cross_scope import (
    GLOBAL_SCOPE,
    PROMOTION,
    SUSPECTED_DUPLICATE,
    ScanRow,
    cosine_pairs,
    cross_scope_pairs,
    pair_cosine,
    unit_matrix,
)
from pi_hermes_memory.domain.learning.clustering import CLUSTER_COSINE
from pi_hermes_memory.domain.search.near_pairs import max_difference, partner_sizes, token_pairs
from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD, jaccard, token_set

# a small vocabulary (Latin words, Han characters) so that near-duplicates are common
_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"])
_HAN = st.sampled_from(list("构建测试部署项目命令"))
_TEXT = st.one_of(
    st.lists(_WORDS, max_size=9).map(" ".join),
    st.lists(_HAN, max_size=9).map("".join),
    st.lists(st.one_of(_WORDS, _HAN), max_size=7).map(" ".join),
    st.just(""),
    st.just("!!! ..."),  # no tokens at all
)
_SCOPES = st.sampled_from([GLOBAL_SCOPE, "project:a", "project:b", "project:c"])


def brute_tokens(sets, groups=None, threshold=JACCARD_THRESHOLD):
    out = []
    for i, j in itertools.combinations(range(len(sets)), 2):
        if groups is not None and groups[i] == groups[j]:
            continue
        score = jaccard(sets[i], sets[j])
        if score >= threshold:
            out.append((i, j, score))
    return out


@settings(max_examples=300)
@given(
    texts=st.lists(_TEXT, max_size=40),
    threshold=st.sampled_from([JACCARD_THRESHOLD, 0.5, 0.3, 1.0]),
)
@example(texts=["alpha beta gamma delta eps", "alpha beta gamma delta"], threshold=0.8)
@example(texts=["", ""], threshold=0.8)
def test_token_pairs_equal_brute_force(texts: list[str], threshold: float) -> None:
    sets = [token_set(t) for t in texts]
    assert token_pairs(sets, threshold=threshold) == brute_tokens(sets, threshold=threshold)


@given(texts=st.lists(st.tuples(_TEXT, _SCOPES), max_size=40))
def test_token_pairs_skip_same_group(texts: list[tuple[str, str]]) -> None:
    sets = [token_set(t) for t, _ in texts]
    groups = [g for _, g in texts]
    assert token_pairs(sets, groups=groups) == brute_tokens(sets, groups)


def test_bounds_at_exact_multiples() -> None:
    # 5 and 4 tokens sharing 4: Jaccard exactly 0.8, one token apart
    assert 4 in partner_sizes(5) and 5 in partner_sizes(4)
    assert max_difference(9) == 1
    assert list(partner_sizes(1)) == [1]
    assert max_difference(2) == 0  # two single tokens must be equal


@given(a=st.integers(1, 60), b=st.integers(1, 60), shared=st.integers(0, 60))
def test_every_pair_over_the_threshold_is_within_the_bounds(a: int, b: int, shared: int) -> None:
    if shared > min(a, b):
        return
    if shared / (a + b - shared) >= JACCARD_THRESHOLD:
        assert b in partner_sizes(a) and a in partner_sizes(b)
        assert a + b - 2 * shared <= max_difference(a + b)


def brute_cosine(matrix, norms, groups, threshold=CLUSTER_COSINE):
    out = []
    for i, j in itertools.combinations(range(len(norms)), 2):
        if groups[i] == groups[j] or norms[i] == 0 or norms[j] == 0:
            continue
        score = pair_cosine(matrix, norms, i, j)
        if score >= threshold:
            out.append((i, j, score))
    return out


_VECTOR = st.lists(st.integers(-3, 3), min_size=4, max_size=4)


@settings(max_examples=200)
@given(
    rows=st.lists(st.tuples(_VECTOR, _SCOPES), min_size=0, max_size=30),
    block=st.sampled_from([1, 3, 7, 2048]),
)
def test_cosine_pairs_equal_brute_force(rows, block) -> None:
    if not rows:
        return
    matrix, norms = unit_matrix([v for v, _ in rows])
    groups = [g for _, g in rows]
    assert cosine_pairs(matrix, norms, groups, block=block) == brute_cosine(matrix, norms, groups)


def test_cosine_pairs_on_random_unit_vectors_across_tiles() -> None:
    rng = np.random.default_rng(5)
    base = rng.normal(size=(40, 32)).astype(np.float32)
    noisy = base[rng.integers(0, 40, 260)] + rng.normal(scale=0.35, size=(260, 32))
    matrix, norms = unit_matrix(list(noisy.astype(np.float32)))
    groups = [f"project:{k % 9}" for k in range(260)]
    expected = brute_cosine(matrix, norms, groups)
    assert expected  # the data has pairs on both sides of the threshold
    assert cosine_pairs(matrix, norms, groups, block=64) == expected


def brute_rows(rows):
    out = set()
    for a, b in itertools.combinations(rows, 2):
        if a.scope == b.scope:
            continue
        if a.vector is not None and b.vector is not None and np.any(a.vector) and np.any(b.vector):
            m, n = unit_matrix([a.vector, b.vector])
            if pair_cosine(m, n, 0, 1) >= CLUSTER_COSINE:
                out.add((a.entry_id, b.entry_id, "cosine"))
        elif jaccard(token_set(a.text), token_set(b.text)) >= JACCARD_THRESHOLD:
            out.add((a.entry_id, b.entry_id, "token"))
    return out


@settings(max_examples=200)
@given(rows=st.lists(st.tuples(_TEXT, _SCOPES, st.one_of(st.none(), _VECTOR)), max_size=30))
def test_cross_scope_rule_per_pair(rows) -> None:
    scan = [
        ScanRow(
            entry_id=f"e{k:03d}",
            scope=scope,
            text=text,
            vector=None if v is None else np.asarray(v, dtype=np.float32),
        )
        for k, (text, scope, v) in enumerate(rows)
    ]
    found = cross_scope_pairs(scan)
    got = {(p.left.entry_id, p.right.entry_id, p.basis) for p in found}
    assert got == brute_rows(scan)
    assert len(got) == len(found)
    for p in found:
        assert p.kind == (
            SUSPECTED_DUPLICATE if GLOBAL_SCOPE in (p.left.scope, p.right.scope) else PROMOTION
        )


# -- consolidation's pre-clustering uses the token join (domain/learning/clustering.py) ---------


def brute_clusters(entries, vectors, links):
    from pi_hermes_memory.domain.learning.clustering import CLUSTER_COSINE as COS

    n = len(entries)
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    covered = links.covered if links else frozenset()
    for i, j in itertools.combinations(range(n), 2):
        (a, ta), (b, tb) = entries[i], entries[j]
        va, vb = vectors.get(a), vectors.get(b)
        if a in covered and b in covered:
            linked = (min(a, b), max(a, b)) in links.pairs
        elif va is not None and vb is not None and len(va) == len(vb):
            linked = sum(x * y for x, y in zip(va, vb, strict=True)) >= COS
        else:
            linked = jaccard(token_set(ta), token_set(tb)) >= JACCARD_THRESHOLD
        if linked:
            ra, rb = find(i), find(j)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups = {}
    for i, (entry_id, _) in enumerate(entries):
        groups.setdefault(find(i), []).append(entry_id)
    ordered = [groups[r] for r in sorted(groups)]
    return tuple(tuple(g) for g in ordered if len(g) > 1)


_UNIT = st.sampled_from([(1.0, 0.0), (0.0, 1.0), (0.6, 0.8), (0.8, 0.6), (-1.0, 0.0)])


@settings(max_examples=200)
@given(
    rows=st.lists(st.tuples(_TEXT, st.one_of(st.none(), _UNIT), st.booleans()), max_size=25),
    pairs=st.sets(st.tuples(st.integers(0, 24), st.integers(0, 24)), max_size=20),
)
def test_clustering_equals_the_pairwise_rule(rows, pairs) -> None:
    from pi_hermes_memory.domain.learning.clustering import CosineLinks, cluster

    entries = [(f"e{k:02d}", text) for k, (text, _, _) in enumerate(rows)]
    vectors = {f"e{k:02d}": v for k, (_, v, _) in enumerate(rows) if v is not None}
    covered = frozenset(f"e{k:02d}" for k, (_, _, c) in enumerate(rows) if c)
    links = CosineLinks(
        covered=covered, pairs=frozenset((f"e{a:02d}", f"e{b:02d}") for a, b in pairs)
    )
    assert cluster(entries, vectors).clusters == brute_clusters(entries, vectors, None)
    assert cluster(entries, vectors, links=links).clusters == brute_clusters(
        entries, vectors, links
    )


def test_one_group_has_no_pairs_and_a_shared_signature_is_not_squared() -> None:
    # 3,000 identical rows of one scope share every signature: no pair may be formed
    sets = [token_set("deploys go through the staging cluster first")] * 3_000
    assert token_pairs(sets, groups=["project:a"] * 3_000) == []
    # the same rows split over two scopes pair only across them
    groups = ["project:a"] * 1_500 + ["global"] * 1_500
    pairs = token_pairs(sets[:60], groups=groups[1_470:1_530])
    assert len(pairs) == 30 * 30
    assert all(groups[1_470 + i] != groups[1_470 + j] for i, j, _ in pairs)
