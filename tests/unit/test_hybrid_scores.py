"""Hybrid scores (ADR 0069): only candidates that pass a floor, a calibrated score in [0, 1],
results sorted by the shown score.

`hybrid_hits` is driven directly with hand-made vectors (a query, a background sample, rows at
chosen cosines) and FTS hits carrying keyword relevance as the score contract defines it; the
index only hands back the rows the cosine ranking found. Then memory_search end to end on the
in-memory rig with the bag-of-words embedder.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.ports.search import SearchHit, SearchQuery
from pi_hermes_memory.search.embedding import SearchVectors
from pi_hermes_memory.search.hybrid import (
    HybridSettings,
    dense_relevance,
    fused_score,
    hybrid_hits,
    shown_scores,
)
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.search.retrieval import Candidate, Fusion, Pipeline

from tests.unit.test_hybrid_search import DEPLOY, QUESTION, rig

DIM = 24
TODAY = date(2026, 12, 1)
QUERY = SearchQuery(
    text="q", clauses=search_clauses(SessionScope(project=None), Target.MEMORY), limit=10
)


def at_cosine(cosine: float, axis: int) -> np.ndarray:
    """A unit vector whose cosine with e0 is `cosine`, the rest along `axis`."""
    v = np.zeros(DIM, dtype=np.float32)
    v[0] = cosine
    v[axis] = math.sqrt(max(0.0, 1.0 - cosine * cosine))
    return v


def hit(entry_id: str, score: float = 1.0) -> SearchHit:
    return SearchHit(
        id=entry_id,
        target=Target.MEMORY,
        project=None,
        category=None,
        text=f"text of {entry_id}",
        created=TODAY,
        last_referenced=TODAY,
        superseded_by=None,
        superseded_at=None,
        score=score,
    )


class Rows:
    """The index's `rows`: the stored rows by id (the scope is not under test here)."""

    def rows(self, ids: Sequence[str], query: SearchQuery) -> list[SearchHit]:
        return [hit(i) for i in ids]

    def search(self, query: SearchQuery) -> list[SearchHit]:
        raise AssertionError("hybrid_hits is given the FTS hits")


#: Background cosines 0.25 … 0.345 with the query: mean ≈ 0.2975, spread ≈ 0.0296, so the
#: calibrated floor (4.5 spreads) is ≈ 0.431.
BACKGROUND = np.stack([at_cosine(0.25 + 0.005 * i, 1 + i % (DIM - 1)) for i in range(20)])


def vectors(cosines: dict[str, float], background: np.ndarray | None = BACKGROUND) -> SearchVectors:
    ids = tuple(cosines)
    matrix = np.stack([at_cosine(c, 1 + n % (DIM - 1)) for n, c in enumerate(cosines.values())])
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    return SearchVectors(query=query, ids=ids, matrix=matrix, background=background)


#: The tests below written for ADR 0069 pin its background-z floor (the geometry above is
#: chosen for it); the hubness-corrected floor (ADR 0072, the default) has its own tests.
PLAIN = HybridSettings(pipeline=Pipeline(stages=()), profiles={}, floor_method="z")
FULL = HybridSettings(profiles={}, floor_method="z")


def run(
    fts: Sequence[SearchHit],
    cosines: dict[str, float],
    settings: HybridSettings = PLAIN,
    background: np.ndarray | None = BACKGROUND,
) -> list[tuple[str, float]]:
    found = hybrid_hits(
        QUERY,
        fts,
        vectors(cosines, background),
        index=Rows(),  # type: ignore[arg-type]
        model_id="test/model",
        settings=settings,
        now=TODAY,
    )
    return [(h.id, h.score) for h in found]


def test_only_candidates_that_pass_a_floor_are_returned() -> None:
    cosines = {"close": 0.95, "unrelated": 0.35, "keyword": 0.2, "borderline": 0.42}
    found = dict(run([hit("keyword", 0.6)], cosines))
    assert set(found) == {"close", "keyword"}  # 0.35 and 0.42 are not above the floor
    assert found["close"] == pytest.approx(1.0)  # z ≈ 22: fully relevant
    assert found["keyword"] == pytest.approx(0.6)  # the keyword relevance, unchanged


def test_an_unrelated_query_answers_nothing() -> None:
    assert run([], {"a": 0.40, "b": 0.38, "c": 0.30}) == []


def test_found_by_both_scores_above_either() -> None:
    cal = vectors({"x": 0.5}).calibration(method="z", z_floor=4.5, z_full=8.5)
    assert cal is not None
    dense = cal.relevance(0.5)
    assert 0 < dense < 1
    found = dict(run([hit("x", 0.4)], {"x": 0.5}))
    assert found["x"] == pytest.approx(min(1.0, max(0.4, dense) + 0.5 * min(0.4, dense)))


def test_results_are_sorted_by_the_shown_score_in_zero_one() -> None:
    cosines = {f"r{n}": 0.3 + 0.05 * n for n in range(14)}
    fts = [hit("r0", 0.9), hit("r1", 0.2), hit("r5", 0.45)]
    found = run(fts, cosines, FULL)  # every stage of the pipeline
    scores = [s for _, s in found]
    assert found and all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_the_explicit_min_cosine_replaces_the_calibration() -> None:
    cosines = {"a": 0.40, "b": 0.30}
    assert run([], cosines) == []
    explicit = attrs.evolve(PLAIN, min_cosine=0.35)
    found = dict(run([], cosines, explicit))
    assert set(found) == {"a"} and found["a"] == pytest.approx((0.40 - 0.35) / 0.65)


def test_without_a_background_only_fts_hits_and_the_profile_floor_count() -> None:
    cosines = {"a": 0.9, "k": 0.1}
    assert run([hit("k", 0.7)], cosines, background=None) == [("k", pytest.approx(0.7))]
    profiled = attrs.evolve(PLAIN, profiles={"test/model": _profile(0.85)})
    assert {i for i, _ in run([], cosines, profiled, background=None)} == {"a"}


def _profile(floor: float) -> object:
    from pi_hermes_memory.search.hybrid import EmbedderProfile

    return EmbedderProfile(dense_weight=1.0, min_cosine=floor)


def test_dense_weight_zero_keeps_only_fts_hits() -> None:
    fts_only = attrs.evolve(PLAIN, fusion=Fusion(dense_weight=0.0))
    assert run([hit("k", 0.4)], {"a": 0.95, "k": 0.1}, fts_only) == [("k", pytest.approx(0.4))]


def test_dense_relevance_of_an_explicit_floor() -> None:
    got = dense_relevance(np.asarray([0.2, 0.5, 0.5000001, 1.0]), None, 0.5)
    assert got[0] == 0.0 and got[1] > 0 and got[3] == 1.0
    assert list(dense_relevance(np.asarray([0.9]), None, None)) == [0.0]  # no calibration


relevances = st.floats(min_value=0.0, max_value=1.0)


@given(keyword=relevances, dense=relevances, bonus=relevances)
def test_fused_score_is_in_zero_one_and_at_least_the_larger(
    keyword: float, dense: float, bonus: float
) -> None:
    score = fused_score(keyword, dense, bonus)
    assert max(keyword, dense) <= score <= 1.0
    assert fused_score(keyword, 0.0, bonus) == keyword


@given(st.lists(st.floats(min_value=-0.5, max_value=2.0), max_size=12))
def test_shown_scores_never_rise_and_stay_in_zero_one(raw: list[float]) -> None:
    ranked = [
        Candidate(id=str(n), text="t", fused=0.5, score=s, created=TODAY, last_referenced=TODAY)
        for n, s in enumerate(raw)
    ]
    shown = [s for _, s in shown_scores(ranked, best=1.1)]
    assert all(0.0 <= s <= 1.0 for s in shown)
    assert shown == sorted(shown, reverse=True)


def test_memory_search_shows_scores_in_zero_one_best_first() -> None:
    r = rig()
    for text in (DEPLOY, "The staging database resets every Sunday", "Deploys need the VPN"):
        r.add(text)
    hits = r.memory.search(QUESTION).hits
    assert hits and hits[0].text == DEPLOY
    scores = [h.score for h in hits]
    assert all(0.0 < s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    assert r.memory.search("xylophone quantum").status == "no_results"


def test_the_hard_minimum_judges_only_rows_the_dense_floor_alone_admitted() -> None:
    full = FULL  # every stage, hard minimum 0.35
    cosines = {"weak-dense": 0.45, "strong-dense": 0.95, "weak-keyword": 0.1}
    found = dict(run([hit("weak-keyword", 0.1)], cosines, full))
    # weak-dense passed the calibrated floor (relevance ≈ 0.16) but its pipeline score is
    # below 0.35; the FTS hit passed the keyword floor and keeps its place
    assert set(found) == {"strong-dense", "weak-keyword"}
    assert "weak-dense" in dict(run([], cosines, PLAIN))  # without the stage it is kept


@settings(max_examples=60, deadline=None)
@given(
    cosines=st.lists(st.floats(min_value=-0.2, max_value=1.0), min_size=1, max_size=12),
    keyword=st.dictionaries(st.integers(0, 11), st.floats(min_value=0.0, max_value=1.0)),
)
def test_every_result_passed_a_floor_and_results_read_best_first(
    cosines: list[float], keyword: dict[int, float]
) -> None:
    by_id = {f"r{n}": c for n, c in enumerate(cosines)}
    fts = [hit(f"r{n}", s) for n, s in keyword.items() if n < len(cosines)]
    cal = vectors(by_id).calibration(method="z", z_floor=4.5, z_full=8.5)
    assert cal is not None
    passed = {i for i, c in by_id.items() if c > cal.floor} | {h.id for h in fts}
    for chosen in (PLAIN, FULL):
        found = run(fts, by_id, chosen)
        assert {i for i, _ in found} <= passed
        scores = [s for _, s in found]
        assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    # without stages no row is dropped: the best `limit` of those that passed
    assert len(run(fts, by_id, PLAIN)) == min(len(passed), QUERY.limit)
