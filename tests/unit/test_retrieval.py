"""Hybrid retrieval building blocks (ADR 0018): fusion, cosine ranking, the scoring stages."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from datetime import date, datetime, timedelta

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.search.retrieval import (
    STAGE_ORDER,
    AgeBasis,
    Candidate,
    Fusion,
    Pipeline,
    Reranker,
    Stage,
    build_candidates,
    cosine_ranking,
    gate,
    hard_min_score,
    importance_weight,
    length_factor,
    length_normalise,
    mmr_diversity,
    normalised_rrf,
    recency_boost,
    rerank_mix,
    rrf,
    rrf_best,
    safe_rerank,
    time_decay,
)

NOW = date(2026, 3, 1)


def cand(
    id: str,
    score: float,
    *,
    fused: float | None = None,
    cosine: float | None = None,
    age: int = 0,
    importance: float = 0.7,
    length: int | None = None,
    relevance: float | None = None,
) -> Candidate:
    day = NOW - timedelta(days=age)
    text = f"text of {id}"
    return Candidate(
        id=id,
        text=text,
        fused=score if fused is None else fused,
        score=score,
        created=day,
        last_referenced=day,
        cosine=cosine,
        importance=importance,
        length=len(text) if length is None else length,
        relevance=relevance,
    )


def ids(candidates: Sequence[Candidate]) -> list[str]:
    return [c.id for c in candidates]


def scores(candidates: Sequence[Candidate]) -> dict[str, float]:
    return {c.id: c.score for c in candidates}


# --- RRF --------------------------------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    fused = dict(rrf([["a", "b", "c"], ["c", "a"]]))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)  # 0.032522
    assert fused["b"] == pytest.approx(1 / 62)  # 0.016129
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)  # 0.032266
    assert [item for item, _ in rrf([["a", "b", "c"], ["c", "a"]])] == ["a", "c", "b"]


def test_rows_missing_from_the_dense_ranking_still_come_through_fts() -> None:
    fused = rrf([["a", "b"], []])
    assert [item for item, _ in fused] == ["a", "b"]
    assert [score for _, score in fused] == pytest.approx([1 / 61, 1 / 62])
    assert {item for item, _ in rrf([["a", "b"], ["c"]])} == {"a", "b", "c"}


def test_rrf_ties_keep_first_seen_order_fts_first() -> None:
    assert [item for item, _ in rrf([["a"], ["b"]])] == ["a", "b"]
    assert [item for item, _ in rrf([["b"], ["a"]])] == ["b", "a"]


def test_rrf_weights_and_zero_weight_rankings() -> None:
    fused = dict(rrf([["a", "b"], ["b"]], weights=[1.0, 0.5]))
    assert fused == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 62 + 0.5 / 61)}
    assert rrf([["a"], ["z"]], weights=[1.0, 0.0]) == [("a", 1 / 61)]


def test_rrf_counts_a_repeated_id_once_at_its_first_place() -> None:
    assert dict(rrf([["a", "a", "b"]])) == {
        "a": pytest.approx(1 / 61),
        "b": pytest.approx(1 / 62),
    }


def test_rrf_other_k() -> None:
    assert rrf([["a", "b"]], k=0) == [("a", 1.0), ("b", 0.5)]


@pytest.mark.parametrize(
    ("k", "weights"),
    [(-1, None), (True, None), (1.5, None), (60, [1.0]), (60, [1.0, -0.1]), (60, [1.0, math.nan])],
)
def test_rrf_rejects_bad_parameters(k: int, weights: list[float] | None) -> None:
    with pytest.raises(ValueError):
        rrf([["a"], ["b"]], k=k, weights=weights)


def test_normalised_rrf_divides_by_the_best_possible_score() -> None:
    assert rrf_best([["a"], ["b"]]) == pytest.approx(2 / 61)
    assert rrf_best([["a"], []]) == pytest.approx(1 / 61)  # an empty ranking does not count
    assert rrf_best([["a"], ["b"]], weights=[1.0, 0.0]) == pytest.approx(1 / 61)
    assert rrf_best([[], []]) == 0.0
    assert normalised_rrf([[], []]) == []
    # FTS only: the r-th row scores 61 / (60 + r)
    fts = dict(normalised_rrf([[f"r{i}" for i in range(1, 101)]]))
    assert fts["r1"] == 1.0
    assert fts["r2"] == pytest.approx(61 / 62)  # 0.98387
    assert fts["r100"] == pytest.approx(61 / 160)  # 0.38125
    # two rankings: first in both = 1.0, first in one only = 0.5
    both = dict(normalised_rrf([["a", "b"], ["a", "c"]]))
    assert both["a"] == pytest.approx(1.0)
    assert dict(normalised_rrf([["a"], ["b"]])) == {"a": 0.5, "b": 0.5}


# --- fusion and the gate ----------------------------------------------------------------------


def test_fusion_default_is_plain_rrf_normalised() -> None:
    fused = Fusion().fuse(["a", "b"], [("c", 0.9), ("a", 0.8)])
    assert [item for item, _ in fused] == ["a", "c", "b"]
    assert dict(fused) == {
        "a": pytest.approx(0.5 + 61 / 124),  # 0.99194
        "c": pytest.approx(0.5),
        "b": pytest.approx(61 / 124),  # 0.49194
    }


def test_fusion_without_dense_is_fts_only() -> None:
    for fused in (
        Fusion().fuse(["a", "b"], None),
        Fusion(dense_weight=0.0).fuse(["a", "b"], [("c", 0.99)]),
    ):
        assert [item for item, _ in fused] == ["a", "b"]
        assert [score for _, score in fused] == pytest.approx([1.0, 61 / 62])


def test_a_lower_dense_weight_keeps_fts_rows_ahead() -> None:
    fused = Fusion(dense_weight=0.5).fuse(["a", "b"], [("c", 0.9), ("a", 0.8)])
    assert [item for item, _ in fused] == ["a", "b", "c"]
    assert dict(fused) == {
        "a": pytest.approx((1 + 0.5 * 61 / 62) / 1.5),  # 0.99462
        "b": pytest.approx(61 / 93),  # 0.65591
        "c": pytest.approx(1 / 3),
    }


def test_fusion_dense_floor_and_depth() -> None:
    dense = [("c", 0.9), ("d", 0.7), ("a", 0.6)]
    assert Fusion(dense_min_cosine=0.8).dense_ids(dense) == ["c"]
    assert Fusion(dense_depth=2).dense_ids(dense) == ["c", "d"]
    # nothing dense passes the floor: the normaliser counts FTS only
    assert Fusion(dense_min_cosine=0.95).fuse(["a", "b"], dense)[0] == ("a", 1.0)


@pytest.mark.parametrize(
    "kwargs",
    [{"k": -1}, {"dense_weight": -1.0}, {"fts_weight": math.inf}, {"dense_depth": 0}],
)
def test_fusion_rejects_bad_settings(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Fusion(**kwargs)  # type: ignore[arg-type]


def test_gate_by_embedder() -> None:
    fusion = Fusion(dense_weight=0.7)
    assert gate(fusion, None).dense_weight == 0.0
    assert gate(fusion, "local/e5", {"local/e5": 0.4}).dense_weight == 0.4
    assert gate(fusion, "local/e5", {"local/e5": 0.0}).fuse(["a"], [("b", 1.0)]) == [("a", 1.0)]
    assert gate(fusion, "openai-compatible/x", {"local/e5": 0.4}) == fusion


# --- cosine ranking ---------------------------------------------------------------------------

ROWS = np.array([[1, 0], [0, 1], [0.6, 0.8], [-1, 0]], dtype=np.float32)
ROW_IDS = ["a", "b", "c", "d"]


def test_cosine_ranking_orders_by_cosine() -> None:
    ranked = cosine_ranking([3.0, 4.0], ROW_IDS, ROWS)  # the query is normalised: (0.6, 0.8)
    assert [item for item, _ in ranked] == ["c", "b", "a", "d"]
    assert [s for _, s in ranked] == pytest.approx([1.0, 0.8, 0.6, -0.6], abs=1e-6)


def test_cosine_ranking_limit_and_floor() -> None:
    assert [i for i, _ in cosine_ranking([3.0, 4.0], ROW_IDS, ROWS, limit=2)] == ["c", "b"]
    assert [i for i, _ in cosine_ranking([3.0, 4.0], ROW_IDS, ROWS, min_cosine=0.7)] == ["c", "b"]
    assert cosine_ranking([3.0, 4.0], ROW_IDS, ROWS, limit=0) == []


def test_cosine_ranking_ties_keep_row_order_even_at_the_limit() -> None:
    rows = np.ones((5, 3), dtype=np.float32) / np.sqrt(3, dtype=np.float32)
    ranked = cosine_ranking([1.0, 1.0, 1.0], list("vwxyz"), rows, limit=3)
    assert [item for item, _ in ranked] == ["v", "w", "x"]


def test_cosine_ranking_degenerate_inputs() -> None:
    assert cosine_ranking([0.0, 0.0], ROW_IDS, ROWS) == []
    assert cosine_ranking([math.nan, 1.0], ROW_IDS, ROWS) == []
    assert cosine_ranking([1.0, 0.0], [], np.zeros((0, 2), dtype=np.float32)) == []
    with_nan = ROWS.copy()
    with_nan[0, 0] = np.nan
    assert [i for i, _ in cosine_ranking([1.0, 0.0], ROW_IDS, with_nan)] == ["c", "b", "d"]
    with pytest.raises(ValueError):
        cosine_ranking([1.0, 0.0, 0.0], ROW_IDS, ROWS)  # dimensions differ
    with pytest.raises(ValueError):
        cosine_ranking([1.0, 0.0], ROW_IDS[:3], ROWS)  # one id per row
    with pytest.raises(ValueError):
        cosine_ranking([1.0, 0.0], ROW_IDS, ROWS, limit=-1)


@given(
    st.integers(min_value=1, max_value=30).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.integers(-5, 5), min_size=4, max_size=4), min_size=n, max_size=n),
            st.lists(st.integers(-5, 5), min_size=4, max_size=4),
            st.integers(min_value=1, max_value=n + 2),
        )
    )
)
def test_cosine_ranking_matches_a_plain_computation(
    case: tuple[list[list[int]], list[int], int],
) -> None:
    raw, query, limit = case
    matrix = np.array(raw, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    names = [f"r{i}" for i in range(len(raw))]
    full = cosine_ranking(query, names, matrix)
    if not any(query):
        assert full == []
        return
    q = np.array(query, dtype=np.float64) / np.linalg.norm(query)
    expected = {
        name: float(np.dot(matrix[i].astype(np.float64), q)) for i, name in enumerate(names)
    }
    assert sorted(item for item, _ in full) == sorted(names)
    for item, cosine in full:
        assert cosine == pytest.approx(expected[item], abs=1e-5)
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(full))
    assert cosine_ranking(query, names, matrix, limit=limit) == full[:limit]


# --- candidates -------------------------------------------------------------------------------


@attrs.frozen
class Row:
    id: str
    text: str
    created: date
    last_referenced: date


def test_build_candidates_follows_the_fused_order() -> None:
    rows = {
        "a": Row("a", "alpha", date(2026, 1, 1), date(2026, 2, 1)),
        "b": Row("b", "beta" * 200, date(2026, 1, 2), date(2026, 1, 2)),
    }
    built = build_candidates(
        [("b", 1.0), ("gone", 0.9), ("a", 0.5)],
        rows,
        cosines={"a": 0.7, "b": math.nan},
        importance={"a": 1.0},
    )
    assert ids(built) == ["b", "a"]
    b, a = built
    assert (b.fused, b.score, b.cosine, b.importance, b.length) == (1.0, 1.0, None, 0.7, 800)
    assert (a.fused, a.score, a.cosine, a.importance, a.length) == (0.5, 0.5, 0.7, 1.0, 5)
    assert a.relevance is None
    assert build_candidates([("a", 0.5)], rows, default_importance=0.2)[0].importance == 0.2


def test_candidate_checks_its_numbers() -> None:
    with pytest.raises(ValueError):
        cand("a", math.nan)
    with pytest.raises(ValueError):
        cand("a", 0.5, importance=1.5)
    with pytest.raises(ValueError):
        cand("a", 0.5, cosine=math.inf)
    with pytest.raises(ValueError):
        cand("a", 0.5, length=-1)


def test_age_in_days() -> None:
    c = Candidate(
        id="a",
        text="t",
        fused=1.0,
        created=date(2026, 1, 1),
        last_referenced=date(2026, 2, 15),
    )
    assert c.age_days(NOW) == 14.0
    assert c.age_days(NOW, AgeBasis.CREATED) == 59.0
    assert c.age_days(date(2026, 1, 1)) == 0.0  # in the future: age 0
    assert c.age_days(datetime(2026, 3, 1, 23, 0)) == 14.0  # calendar days
    timed = attrs.evolve(c, last_referenced=datetime(2026, 2, 28, 12, 0))
    assert timed.age_days(datetime(2026, 3, 1, 0, 0)) == 0.5


# --- stages -----------------------------------------------------------------------------------


def test_rerank_mix_is_60_percent_rerank_40_percent_fused() -> None:
    out = rerank_mix([cand("a", 0.5), cand("b", 0.4)], [0.2, 0.9])
    assert scores(out) == {
        "a": pytest.approx(0.6 * 0.2 + 0.4 * 0.5),  # 0.32
        "b": pytest.approx(0.6 * 0.9 + 0.4 * 0.4),  # 0.70
    }
    assert ids(out) == ["b", "a"]
    assert [c.relevance for c in out] == [0.9, 0.2]


def test_rerank_mix_falls_back_to_cosine_then_to_the_fused_score() -> None:
    cs = [cand("a", 0.5, cosine=0.8), cand("b", 0.5), cand("c", 0.5, cosine=-0.3)]
    out = {c.id: c for c in rerank_mix(cs, None)}
    assert out["a"].score == pytest.approx(0.6 * 0.8 + 0.4 * 0.5)  # 0.68
    assert (out["b"].score, out["b"].relevance) == (0.5, None)  # rank-only, unchanged
    assert out["c"].score == pytest.approx(0.4 * 0.5)  # a negative cosine counts as 0
    assert out["c"].relevance == 0.0
    # per-row fallback: None or NaN at a place, wrong length = no rerank at all
    per_row = scores(rerank_mix(cs, [1.7, None, math.nan]))
    assert per_row == {
        "a": pytest.approx(0.6 * 1.0 + 0.4 * 0.5),  # clamped to 1 → 0.8
        "b": 0.5,
        "c": pytest.approx(0.2),
    }
    assert scores(rerank_mix(cs, [0.9])) == scores(rerank_mix(cs, None))


def test_rerank_mix_weight() -> None:
    assert rerank_mix([cand("a", 0.5)], [1.0], weight=0.0)[0].score == 0.5
    assert rerank_mix([cand("a", 0.5)], [0.1], weight=1.0)[0].score == pytest.approx(0.1)
    with pytest.raises(ValueError):
        rerank_mix([cand("a", 0.5)], [0.1], weight=1.5)


def test_recency_boost_adds_exp_age_over_14_days_times_0_10() -> None:
    out = scores(recency_boost([cand("new", 0.5), cand("two_weeks", 0.5, age=14)], now=NOW))
    assert out["new"] == pytest.approx(0.6)
    assert out["two_weeks"] == pytest.approx(0.5 + math.exp(-1) * 0.1)  # 0.536788
    older = recency_boost([cand("x", 0.5, age=28)], now=NOW, half_life_days=28, weight=0.2)
    assert older[0].score == pytest.approx(0.5 + math.exp(-1) * 0.2)


def test_recency_uses_the_chosen_date() -> None:
    c = attrs.evolve(cand("a", 0.5), created=NOW - timedelta(days=14))
    assert recency_boost([c], now=NOW)[0].score == pytest.approx(0.6)
    created = recency_boost([c], now=NOW, basis=AgeBasis.CREATED)[0].score
    assert created == pytest.approx(0.5 + math.exp(-1) * 0.1)


def test_importance_weight() -> None:
    out = scores(
        importance_weight(
            [cand("one", 0.8, importance=1.0), cand("half", 0.8, importance=0.5), cand("d", 0.8)]
        )
    )
    assert out == {
        "one": pytest.approx(0.8),
        "half": pytest.approx(0.8 * 0.85),  # 0.68
        "d": pytest.approx(0.8 * 0.91),  # default importance 0.7 → 0.728
    }


def test_length_normalisation_damps_only_rows_longer_than_the_anchor() -> None:
    assert length_factor(0) == 1.0
    assert length_factor(100) == 1.0
    assert length_factor(500) == 1.0
    assert length_factor(1000) == pytest.approx(2 / 3)
    assert length_factor(2000) == pytest.approx(0.5)
    assert length_factor(4000) == pytest.approx(0.4)
    assert length_factor(200, anchor=100) == pytest.approx(2 / 3)
    out = scores(length_normalise([cand("long", 0.9, length=1000), cand("short", 0.5, length=50)]))
    assert out == {"long": pytest.approx(0.6), "short": 0.5}


def test_time_decay_halves_at_most() -> None:
    out = scores(
        time_decay(
            [cand("new", 1.0), cand("two_months", 1.0, age=60), cand("old", 1.0, age=6000)],
            now=NOW,
        )
    )
    assert out["new"] == 1.0
    assert out["two_months"] == pytest.approx(0.5 + 0.5 * math.exp(-1))  # 0.683940
    assert out["old"] == pytest.approx(0.5)


def test_hard_min_score_drops_scores_below_0_35() -> None:
    cs = [
        cand("kept", 0.5, relevance=0.9),
        cand("low", 0.34, relevance=0.1),
        cand("rank_only", 0.2),
        cand("edge", 0.35, relevance=0.3),
    ]
    assert ids(hard_min_score(cs)) == ["kept", "rank_only", "edge"]
    assert ids(hard_min_score(cs, exempt_rank_only=False)) == ["kept", "edge"]
    assert ids(hard_min_score(cs, 0.6)) == ["rank_only"]


S = math.sqrt(1 - 0.9**2)  # a unit vector at cosine 0.9 to (1, 0, 0)
VECTORS = {
    "a": [1.0, 0.0, 0.0],
    "b": [0.9, S, 0.0],  # cos(a, b) = 0.9
    "c": [0.0, 0.0, 1.0],
    "e": [0.6, 0.8, 0.0],  # cos(a, e) = 0.6, cos(b, e) = 0.889
}


def test_mmr_demotes_a_near_duplicate_of_a_better_result() -> None:
    cs = [cand("a", 0.9), cand("b", 0.8), cand("c", 0.7)]
    out = mmr_diversity(cs, VECTORS)
    assert ids(out) == ["a", "c", "b"]
    assert scores(out) == {"a": 0.9, "b": 0.8, "c": 0.7}  # scores unchanged
    assert ids(mmr_diversity(cs, VECTORS, threshold=0.95)) == ["a", "b", "c"]


def test_mmr_compares_with_selected_results_only() -> None:
    # b is demoted by a; e is close to b (0.889) but b was not selected, and far from a (0.6)
    out = mmr_diversity([cand("a", 0.9), cand("b", 0.8), cand("e", 0.7)], VECTORS)
    assert ids(out) == ["a", "e", "b"]


def test_mmr_ignores_rows_without_usable_vectors() -> None:
    cs = [cand("a", 0.9), cand("x", 0.85), cand("b", 0.8), cand("z", 0.1)]
    vectors = {**VECTORS, "z": [0.0, 0.0, 0.0]}
    assert ids(mmr_diversity(cs, vectors)) == ["a", "x", "z", "b"]
    assert ids(mmr_diversity(cs, None)) == ["a", "x", "b", "z"]
    assert ids(mmr_diversity(cs, {"a": [1.0, 0.0], "b": [1.0, 0.0, 0.0]})) == ["a", "x", "b", "z"]


# --- the pipeline -----------------------------------------------------------------------------


def test_pipeline_runs_the_seed_stages_in_order_with_their_defaults() -> None:
    p = Pipeline()
    assert p.stages == STAGE_ORDER
    assert [s.value for s in STAGE_ORDER] == [
        "rerank",
        "recency",
        "importance",
        "length",
        "time_decay",
        "hard_min",
        "mmr",
    ]
    assert (p.rerank_weight, p.recency_half_life_days, p.recency_weight) == (0.6, 14.0, 0.1)
    assert (p.importance_floor, p.default_importance, p.length_anchor) == (0.7, 0.7, 500)
    assert (p.time_decay_half_life_days, p.time_decay_floor) == (60.0, 0.5)
    assert (p.min_score, p.mmr_threshold, p.age_basis) == (0.35, 0.85, AgeBasis.LAST_REFERENCED)


def test_pipeline_numbers_end_to_end() -> None:
    c = cand("a", 1.0, cosine=0.8, age=14, length=1000)
    (out,) = Pipeline().run([c], now=NOW)
    # 0.6·0.8 + 0.4·1.0 = 0.88; + e^-1·0.1 = 0.916788; ·0.91 = 0.834277; ·2/3 = 0.556185;
    # ·(0.5 + 0.5·e^(-14/60)) = 0.498311 ≥ 0.35
    assert out.score == pytest.approx(0.498311, abs=1e-6)
    assert out.relevance == 0.8


def test_pipeline_aligns_rerank_scores_with_the_candidates_as_given() -> None:
    cs = [cand("low", 0.2), cand("high", 0.9)]  # not sorted
    only_rerank = Pipeline(stages=[Stage.RERANK])
    out = only_rerank.run(cs, now=NOW, rerank_scores=[1.0, 0.0])
    assert scores(out) == {"low": pytest.approx(0.68), "high": pytest.approx(0.36)}
    assert ids(out) == ["low", "high"]


def test_pipeline_hard_min_and_mmr_at_the_end() -> None:
    cs = [cand("a", 0.9, cosine=0.9), cand("b", 0.8, cosine=0.9), cand("c", 0.7, cosine=0.1)]
    p = Pipeline(stages=[Stage.RERANK, Stage.HARD_MIN, Stage.MMR])
    out = p.run(cs, now=NOW, vectors=VECTORS)
    # 0.6·0.9 + 0.4·0.9 = 0.9, 0.6·0.9 + 0.4·0.8 = 0.86, 0.6·0.1 + 0.4·0.7 = 0.34 < 0.35
    assert ids(out) == ["a", "b"]  # b, a near-duplicate of a, is deferred past nothing
    # d (0.6·0.8 + 0.4·0.5 = 0.68, no vector) now goes ahead of b, a near-duplicate of a
    more = p.run([*cs, cand("d", 0.5, cosine=0.8)], now=NOW, vectors=VECTORS)
    assert ids(more) == ["a", "d", "b"]
    assert scores(more) == {
        "a": pytest.approx(0.9),
        "d": pytest.approx(0.68),
        "b": pytest.approx(0.86),
    }


def test_pipeline_configuration() -> None:
    p = Pipeline().without(Stage.HARD_MIN, "mmr")
    assert p.stages == STAGE_ORDER[:5]
    assert not p.enabled("hard_min") and p.enabled(Stage.RERANK)
    assert Pipeline(stages=["rerank", "time_decay"]).stages == (Stage.RERANK, Stage.TIME_DECAY)
    none = Pipeline(stages=[])
    assert ids(none.run([cand("a", 0.1), cand("b", 0.2)], now=NOW)) == ["b", "a"]
    with pytest.raises(ValueError):
        Pipeline(stages=["mmr", "rerank"])  # out of order
    with pytest.raises(ValueError):
        Pipeline(stages=["rerank", "rerank"])
    with pytest.raises(ValueError):
        Pipeline(stages=["noise"])
    with pytest.raises(ValueError):
        Pipeline(rerank_weight=2.0)
    with pytest.raises(ValueError):
        Pipeline(recency_half_life_days=0.0)
    with pytest.raises(ValueError):
        Pipeline(min_score=math.nan)


def test_fts_only_rows_survive_the_default_pipeline() -> None:
    """Without vectors or a reranker every score is rank-derived: the hard minimum keeps them
    even when old and long rows push the score far below 0.35."""
    fused = normalised_rrf([[f"r{i}" for i in range(1, 21)]])
    cs = [cand(item, s, age=400, length=4000) for item, s in fused]
    out = Pipeline().run(cs, now=NOW)
    assert ids(out) == [f"r{i}" for i in range(1, 21)]
    assert max(c.score for c in out) < 0.35


# --- safe_rerank ------------------------------------------------------------------------------


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, object]]] = []

    def warning(self, event: str, **fields: object) -> None:
        self.events.append((event, fields))


class FakeReranker:
    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None:
        self.calls.append((query, list(documents)))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[return-value]


def test_safe_rerank_pads_past_top_n() -> None:
    r = FakeReranker([0.9, 0.1])
    assert isinstance(r, Reranker)
    cs = [cand("a", 0.9), cand("b", 0.8), cand("c", 0.7)]
    assert safe_rerank(r, "q", cs, top_n=2) == [0.9, 0.1, None]
    assert r.calls == [("q", ["text of a", "text of b"])]


@pytest.mark.parametrize(
    "answer",
    [RuntimeError("secret-key in message"), [0.5], [0.5, math.nan], [0.5, "1"], [True, 0.1]],
)
def test_safe_rerank_turns_any_failure_into_none(answer: object) -> None:
    log = Log()
    assert safe_rerank(FakeReranker(answer), "q", [cand("a", 1), cand("b", 1)], logger=log) is None
    assert [event for event, _ in log.events] == ["rerank.unavailable"]
    assert "secret-key" not in repr(log.events)


def test_safe_rerank_without_a_reranker_or_candidates() -> None:
    assert safe_rerank(None, "q", [cand("a", 1)]) is None
    assert safe_rerank(FakeReranker([]), "q", []) is None
    assert safe_rerank(FakeReranker(None), "q", [cand("a", 1)]) is None
    assert safe_rerank(FakeReranker([1.0]), "q", [cand("a", 1)], top_n=0) is None


# --- properties -------------------------------------------------------------------------------

ID = st.sampled_from("abcdefgh")
RANKINGS = st.lists(st.lists(ID, unique=True, max_size=8), min_size=1, max_size=4)


@given(RANKINGS)
def test_rrf_invariants(rankings: list[list[str]]) -> None:
    fused = rrf(rankings)
    score = dict(fused)
    assert set(score) == {item for ranking in rankings for item in ranking}
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(fused))
    # a row ahead of another in every ranking that holds the other scores strictly higher
    for a in score:
        for b in score:
            if a != b and all(a in r and r.index(a) < r.index(b) for r in rankings if b in r):
                assert score[a] > score[b]
    for _, s in normalised_rrf(rankings):
        assert 0 < s <= 1


@given(RANKINGS, st.randoms(use_true_random=False))
def test_rrf_scores_do_not_depend_on_the_order_of_the_rankings(
    rankings: list[list[str]], rnd: object
) -> None:
    shuffled = list(rankings)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a, b = dict(rrf(rankings)), dict(rrf(shuffled))
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key])


@given(st.lists(ID, unique=True, min_size=1, max_size=8))
def test_a_single_ranking_keeps_its_order(ranking: list[str]) -> None:
    assert [item for item, _ in rrf([ranking])] == ranking


FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
DAYS = st.dates(min_value=date(1970, 1, 1), max_value=date(2100, 1, 1))


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(min_value=0, max_value=8))
    out = []
    for i in range(n):
        created = draw(DAYS)
        out.append(
            Candidate(
                id=f"c{i}",
                text="x",
                fused=draw(st.floats(min_value=0, max_value=1)),
                score=draw(FINITE),
                created=created,
                last_referenced=draw(DAYS),
                cosine=draw(st.none() | st.floats(min_value=-1, max_value=1)),
                importance=draw(st.floats(min_value=0, max_value=1)),
                length=draw(st.integers(min_value=0, max_value=10_000_000)),
            )
        )
    return out


PIPELINES = st.builds(
    Pipeline,
    stages=st.sets(st.sampled_from(STAGE_ORDER)).map(
        lambda chosen: [s for s in STAGE_ORDER if s in chosen]
    ),
    rerank_weight=st.floats(0, 1),
    recency_half_life_days=st.floats(1e-3, 1e4),
    recency_weight=st.floats(0, 10),
    length_anchor=st.integers(1, 10_000),
    time_decay_half_life_days=st.floats(1e-3, 1e4),
    min_score=FINITE,
    mmr_threshold=st.floats(-1, 1),
)


@given(
    candidates(),
    PIPELINES,
    DAYS,
    st.data(),
)
def test_stages_never_produce_nan_and_never_invent_rows(
    cs: list[Candidate], pipeline: Pipeline, now: date, data: st.DataObject
) -> None:
    rerank = data.draw(
        st.none()
        | st.lists(
            st.none() | st.floats(allow_nan=True, allow_infinity=True),
            min_size=len(cs),
            max_size=len(cs),
        )
    )
    vectors = {c.id: data.draw(st.lists(st.floats(-1, 1), min_size=3, max_size=3)) for c in cs}
    out = pipeline.run(cs, now=now, rerank_scores=rerank, vectors=vectors)
    assert all(math.isfinite(c.score) for c in out)
    assert set(ids(out)) <= set(ids(cs))
    if not pipeline.enabled(Stage.HARD_MIN):
        assert sorted(ids(out)) == sorted(ids(cs))


@given(candidates(), FINITE, st.data())
def test_hard_min_never_returns_a_row_below_the_threshold(
    cs: list[Candidate], threshold: float, data: st.DataObject
) -> None:
    cs = [attrs.evolve(c, relevance=data.draw(st.none() | st.floats(0, 1))) for c in cs]
    assert all(c.score >= threshold for c in hard_min_score(cs, threshold, exempt_rank_only=False))
    kept = hard_min_score(cs, threshold)
    assert all(c.score >= threshold for c in kept if c.relevance is not None)
    assert {c.id for c in cs if c.relevance is None} <= set(ids(kept))


@given(candidates(), st.floats(-1, 1), st.data())
def test_mmr_keeps_the_top_row_and_every_row(
    cs: list[Candidate], threshold: float, data: st.DataObject
) -> None:
    vectors = {c.id: data.draw(st.lists(st.integers(-2, 2), min_size=3, max_size=3)) for c in cs}
    out = mmr_diversity(cs, vectors, threshold)
    assert sorted(ids(out)) == sorted(ids(cs))
    if cs:
        assert out[0].score == max(c.score for c in cs)
        assert out[0].id == next(c.id for c in cs if c.score == out[0].score)
