"""`Pipeline.run` carries the score-only stages as floats and copies each candidate once
(ADR 0107): it must equal the public stage functions applied in turn, candidate for candidate
(every field, the order, ties included) and raise the same error where they raise."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.search.retrieval import (
    STAGE_ORDER,
    AgeBasis,
    Candidate,
    Pipeline,
    Stage,
    _unit_vectors,
    hard_min_score,
    importance_weight,
    length_normalise,
    mmr_diversity,
    recency_boost,
    rerank_mix,
    time_decay,
)

NOW = date(2026, 3, 1)


def reference_run(
    p: Pipeline,
    candidates: Sequence[Candidate],
    *,
    now: date,
    rerank_scores: Sequence[float | None] | None = None,
    vectors: dict[str, np.ndarray] | None = None,
) -> list[Candidate]:
    """`Pipeline.run` as it was before ADR 0107: each stage function in turn."""
    if Stage.RERANK in p.stages:
        out = rerank_mix(candidates, rerank_scores, p.rerank_weight)
    else:
        out = sorted(candidates, key=lambda c: -c.score)
    if Stage.RECENCY in p.stages:
        out = recency_boost(
            out,
            now=now,
            half_life_days=p.recency_half_life_days,
            weight=p.recency_weight,
            basis=p.age_basis,
        )
    if Stage.IMPORTANCE in p.stages:
        out = importance_weight(out, p.importance_floor)
    if Stage.LENGTH in p.stages:
        out = length_normalise(out, p.length_anchor, p.length_strength)
    if Stage.TIME_DECAY in p.stages:
        out = time_decay(
            out,
            now=now,
            half_life_days=p.time_decay_half_life_days,
            floor=p.time_decay_floor,
            basis=p.age_basis,
        )
    if Stage.HARD_MIN in p.stages:
        out = hard_min_score(out, p.min_score, exempt_rank_only=p.min_score_exempts_rank_only)
    if Stage.MMR in p.stages:
        out = mmr_diversity(out, vectors, p.mmr_threshold)
    return out


# few distinct values, so that ties (equal scores at some stage) are common
_SCORE = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5000000000000001, 0.7, 1.0]) | st.floats(0, 1)
_DAY = st.dates(date(2025, 1, 1), date(2026, 6, 1))
_MOMENT = st.datetimes(datetime(2025, 1, 1), datetime(2026, 6, 1))


@st.composite
def candidate_lists(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(0, 12))
    out = []
    for i in range(n):
        fused = draw(_SCORE)
        out.append(
            Candidate(
                id=f"c{i}",
                text="x" * draw(st.sampled_from([1, 100, 500, 501, 999, 1000, 4000])),
                fused=fused,
                score=draw(st.just(fused) | _SCORE),
                created=draw(_DAY | _MOMENT),
                last_referenced=draw(_DAY),
                cosine=draw(st.none() | st.floats(-1, 1)),
                importance=draw(st.sampled_from([0.0, 0.5, 0.7, 1.0]) | st.floats(0, 1)),
                relevance=draw(st.none() | st.floats(0, 1)),
            )
        )
    return out


@st.composite
def pipelines(draw: st.DrawFn) -> Pipeline:
    stages = [s for s in STAGE_ORDER if draw(st.booleans())]
    return Pipeline(
        stages=stages,
        rerank_weight=draw(st.sampled_from([0.0, 0.6, 1.0])),
        recency_half_life_days=draw(st.sampled_from([1e-300, 0.5, 14.0, 1e6])),
        recency_weight=draw(st.sampled_from([0.0, 0.1, 2.0])),
        age_basis=draw(st.sampled_from(list(AgeBasis))),
        importance_floor=draw(st.sampled_from([0.0, 0.7, 1.0])),
        length_anchor=draw(st.sampled_from([1, 500, 3000])),
        length_strength=draw(st.sampled_from([0.0, 0.5, 3.0])),
        time_decay_half_life_days=draw(st.sampled_from([1e-300, 60.0, 1e9])),
        time_decay_floor=draw(st.sampled_from([0.0, 0.5, 1.0])),
        min_score=draw(st.sampled_from([0.0, 0.35, 0.9])),
        min_score_exempts_rank_only=draw(st.booleans()),
        mmr_threshold=draw(st.sampled_from([0.0, 0.85, 1.0])),
    )


def _fields(candidates: Sequence[Candidate]) -> list[tuple[object, ...]]:
    # the score's bits too: an equal float printed differently (-0.0) would slip through ==
    out: list[tuple[object, ...]] = []
    for c in candidates:
        head = (c.id, c.fused, c.score.hex(), c.created, c.last_referenced, c.cosine)
        out.append((*head, c.importance, c.length, c.relevance))
    return out


@settings(max_examples=400, deadline=None)
@given(
    candidate_lists(),
    pipelines(),
    st.none() | st.lists(st.none() | st.floats(-0.5, 1.5), max_size=12),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_run_equals_the_stage_functions_in_turn(
    candidates: list[Candidate],
    pipeline: Pipeline,
    rerank: list[float | None] | None,
    with_vectors: bool,
    seed: int,
) -> None:
    vectors = None
    if with_vectors and candidates:
        rng = np.random.default_rng(seed)
        base = rng.standard_normal((3, 8)).astype(np.float32)  # near-copies: MMR defers
        vectors = {
            c.id: base[i % 3] + 0.01 * rng.standard_normal(8).astype(np.float32)
            for i, c in enumerate(candidates)
        }
    try:
        expected = reference_run(
            pipeline, candidates, now=NOW, rerank_scores=rerank, vectors=vectors
        )
    except InvalidArgument as exc:
        with pytest.raises(InvalidArgument) as raised:
            pipeline.run(candidates, now=NOW, rerank_scores=rerank, vectors=vectors)
        assert str(raised.value) == str(exc)
        return
    got = pipeline.run(candidates, now=NOW, rerank_scores=rerank, vectors=vectors)
    assert _fields(got) == _fields(expected)
    assert got == expected


def _candidate(i: int, score: float, age: int) -> Candidate:
    return Candidate(
        id=f"c{i}",
        text="t",
        fused=score,
        created=NOW - timedelta(days=age),
        last_referenced=NOW - timedelta(days=age),
    )


def test_a_score_that_overflows_raises_as_the_stage_function_does() -> None:
    # a huge recency weight makes the first stage's score infinite
    p = Pipeline(stages=[Stage.RECENCY, Stage.IMPORTANCE], recency_weight=1e308)
    candidates = [_candidate(0, 1.0, 0), _candidate(1, 1e308, 0)]
    with pytest.raises(InvalidArgument) as expected:
        reference_run(p, candidates, now=NOW)
    with pytest.raises(InvalidArgument) as got:
        p.run(candidates, now=NOW)
    assert str(got.value) == str(expected.value)
    assert "score must be a finite number" in str(got.value)


def test_ties_keep_the_previous_stages_order() -> None:
    # equal after recency only because the ages differ in a way importance then undoes: the
    # final order must be what the stable sorts in turn give, not a re-sort of the end scores
    p = Pipeline(stages=[Stage.IMPORTANCE, Stage.LENGTH])
    candidates = [_candidate(i, 0.5, i) for i in range(6)]
    assert [c.id for c in p.run(candidates, now=NOW)] == [
        c.id for c in reference_run(p, candidates, now=NOW)
    ]


@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=40))
def test_unit_vectors_divide_by_what_numpy_norm_gives(values: list[float]) -> None:
    vec = np.asarray(values, dtype=np.float32)
    candidate = _candidate(0, 0.5, 0)
    found = _unit_vectors([candidate], {"c0": vec})
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:
        assert found == {}
    else:
        assert found[0].tobytes() == (vec / np.float32(norm)).tobytes()
