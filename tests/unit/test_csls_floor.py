"""The hubness-corrected dense floor and the fusion weights in hybrid search (ADR 0072).

`hybrid_hits` driven with hand-made unit vectors: a query along e0, a background sample whose
centroid points along e1, rows placed at chosen cosines with the query and with the centroid.
A row close to everything generic (a hub) needs a higher cosine to pass than a specific row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.search import SearchHit
from pi_hermes_memory.search.embedding import SearchVectors
from pi_hermes_memory.search.hybrid import (
    DEFAULT_DENSE_WEIGHT,
    HybridSettings,
    dense_relevance,
    fused_score,
    hybrid_hits,
)
from pi_hermes_memory.search.retrieval import Fusion, Pipeline

from tests.unit.test_hybrid_scores import QUERY, TODAY, Rows, hit

DIM = 16


def unit(v: list[float]) -> np.ndarray:
    out = np.zeros(DIM, dtype=np.float64)
    out[: len(v)] = v
    return np.asarray(out / np.linalg.norm(out), dtype=np.float32)


def row(cos_query: float, cos_centroid: float, axis: int) -> np.ndarray:
    """A unit vector with cosine `cos_query` with e0 and `cos_centroid` with e1, the rest on
    `axis` (>= 2)."""
    v = np.zeros(DIM, dtype=np.float32)
    v[0], v[1] = cos_query, cos_centroid
    v[axis] = math.sqrt(max(0.0, 1.0 - cos_query**2 - cos_centroid**2))
    return v


#: Generic sentences: cosine 0.1 … 0.29 with the query, their centroid mostly along e1.
BACKGROUND = np.stack([row(0.1 + 0.01 * i, 0.8, 2 + i % (DIM - 2)) for i in range(20)])
QUERY_VECTOR = unit([1.0])
PLAIN = HybridSettings(pipeline=Pipeline(stages=()), profiles={})


def vectors(rows: dict[str, tuple[float, float]]) -> SearchVectors:
    ids = tuple(rows)
    matrix = np.stack([row(q, c, 2 + n % (DIM - 2)) for n, (q, c) in enumerate(rows.values())])
    return SearchVectors(query=QUERY_VECTOR, ids=ids, matrix=matrix, background=BACKGROUND)


def run(
    fts: Sequence[SearchHit], rows: dict[str, tuple[float, float]], chosen: HybridSettings = PLAIN
) -> dict[str, float]:
    found = hybrid_hits(
        QUERY,
        fts,
        vectors(rows),
        index=Rows(),  # type: ignore[arg-type]
        model_id="test/model",
        settings=chosen,
        now=TODAY,
    )
    return {h.id: h.score for h in found}


def test_the_default_floor_is_the_hubness_corrected_one() -> None:
    assert PLAIN.floor_method == "csls"
    cal = vectors({"a": (0.5, 0.0)}).calibration()
    assert cal is not None and cal.method == "csls"
    assert cal.neighbourhood == pytest.approx(np.mean([0.1 + 0.01 * i for i in range(10, 20)]))


def test_a_hub_needs_a_higher_cosine_than_a_specific_row() -> None:
    # r_q ≈ 0.245; a specific row (centroid cosine 0) passes at cosine 0.5: 1.0 − 0.245 > 0;
    # a hub at the same cosine (centroid cosine 0.8) does not: 1.0 − 0.245 − 0.8 < 0
    found = run([], {"specific": (0.5, 0.0), "hub": (0.5, 0.8), "far": (0.1, 0.0)})
    assert set(found) == {"specific"}
    assert found["specific"] == pytest.approx(1.0)  # 0.755 is far above csls_full


def test_the_hubness_comes_from_the_same_product_as_the_cosines() -> None:
    v = vectors({"a": (0.5, 0.0), "b": (0.3, 0.7)})
    cosines, hubness = v.cosines_and_hubness()
    centroid = v.centroid()
    assert centroid is not None and float(np.linalg.norm(centroid)) == pytest.approx(1.0)
    mean = BACKGROUND.mean(axis=0)
    assert np.allclose(centroid, mean / np.linalg.norm(mean))
    assert np.allclose(cosines, v.cosines()) and hubness is not None
    assert np.allclose(hubness, v.matrix @ centroid) and hubness[1] > 0.6 > hubness[0]
    bare = attrs.evolve(v, background=None)
    assert bare.cosines_and_hubness()[1] is None and bare.calibration() is None


def test_without_hubness_the_csls_floor_passes_nothing() -> None:
    cal = vectors({"a": (0.5, 0.0)}).calibration()
    assert cal is not None
    assert list(dense_relevance(np.asarray([0.99]), cal, None)) == [0.0]
    assert list(dense_relevance(np.asarray([0.99]), cal, 0.5)) == [pytest.approx(0.98)]


@settings(max_examples=80, deadline=None)
@given(
    cosines=st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=1, max_size=10),
    hubs=st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=10, max_size=10),
    floor=st.floats(min_value=-0.2, max_value=0.2),
)
def test_vectorised_relevance_equals_the_calibrations(
    cosines: list[float], hubs: list[float], floor: float
) -> None:
    cal = vectors({"a": (0.5, 0.0)}).calibration(csls_floor=floor, csls_full=floor + 0.1)
    assert cal is not None
    got = dense_relevance(np.asarray(cosines), cal, None, np.asarray(hubs[: len(cosines)]))
    for value, c, h in zip(got, cosines, hubs, strict=False):
        want = cal.relevance(c, h)
        assert 0.0 <= value <= 1.0
        assert (value > 0) == (want > 0)
        assert value == pytest.approx(max(want, 0.01) if want > 0 else 0.0, abs=1e-9)


def test_bad_csls_settings_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="floor_method"):
        HybridSettings(floor_method="cosine")
    with pytest.raises(InvalidArgument, match="csls_floor and csls_full"):
        HybridSettings(csls_floor=0.1, csls_full=0.1)
    with pytest.raises(InvalidArgument, match="csls_floor and csls_full"):
        HybridSettings(csls_floor=True)


# --- the fusion weights ------------------------------------------------------------------------

relevances = st.floats(min_value=0.0, max_value=1.0)
weights = st.floats(min_value=0.0, max_value=1.0)


@given(keyword=relevances, dense=relevances, bonus=relevances, w=weights)
def test_equal_weights_are_the_unweighted_score_and_only_the_ratio_counts(
    keyword: float, dense: float, bonus: float, w: float
) -> None:
    plain = fused_score(keyword, dense, bonus)
    assert fused_score(keyword, dense, bonus, keyword_weight=w, dense_weight=w) == plain
    half = fused_score(keyword, dense, bonus, keyword_weight=0.5, dense_weight=1.0)
    assert half == pytest.approx(fused_score(keyword * 0.5, dense, bonus), abs=1e-12)
    assert half <= plain


def test_a_lower_weight_scales_its_relevance_down() -> None:
    assert fused_score(0.8, 0.0, 0.5, keyword_weight=1.0, dense_weight=0.5) == 0.8
    assert fused_score(0.0, 0.8, 0.5, keyword_weight=1.0, dense_weight=0.5) == pytest.approx(0.4)
    assert fused_score(0.6, 0.8, 0.5, keyword_weight=0.0, dense_weight=1.0) == 0.8


def test_the_weights_count_in_hybrid_search() -> None:
    rows = {"dense": (0.5, 0.0), "kw": (0.0, 0.0)}
    fts = [hit("kw", 0.6)]
    both = run(fts, rows)
    assert both["dense"] == pytest.approx(1.0) and both["kw"] == pytest.approx(0.6)
    half_dense = attrs.evolve(PLAIN, fusion=Fusion(dense_weight=0.5))
    assert run(fts, rows, half_dense) == {"kw": pytest.approx(0.6), "dense": pytest.approx(0.5)}
    half_fts = attrs.evolve(PLAIN, fusion=Fusion(dense_weight=1.0, fts_weight=0.5))
    assert run(fts, rows, half_fts)["kw"] == pytest.approx(0.3)
    vector_only = attrs.evolve(PLAIN, fusion=Fusion(dense_weight=1.0, fts_weight=0.0))
    assert run(fts, rows, vector_only) == {"dense": pytest.approx(1.0)}
    fts_only = attrs.evolve(PLAIN, fusion=Fusion(dense_weight=0.0, fts_weight=0.0))
    assert run(fts, rows, fts_only) == {"kw": pytest.approx(0.6)}


def test_an_embedder_without_a_profile_weighs_as_much_as_fts() -> None:
    assert DEFAULT_DENSE_WEIGHT == 1.0
    assert HybridSettings().fusion_for("unknown/model").dense_weight == 1.0
