"""`dense_ranking` (ADR 0101) equals the full-array path it replaces in `hybrid_hits`:
`top_scores(ids, dense_relevance(...), limit, MIN_PASSED)`, for every floor method, with
ties, clipped relevances, non-finite cosines and limits above and below the passing rows."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.search.background import Calibration
from pi_hermes_memory.search.hybrid import MIN_PASSED, dense_ranking, dense_relevance
from pi_hermes_memory.search.retrieval import top_scores

#: few distinct values, so that ties and relevances clipped to 1 are common
VALUES = st.sampled_from([-0.4, -0.1, 0.0, 0.05, 0.1, 0.2, 0.3, 0.35, 0.5, 0.7, 0.9, 1.0])
COSINES = st.one_of(VALUES, st.floats(-1, 1), st.sampled_from([float("nan"), float("inf")]))


@settings(max_examples=300, deadline=None)
@given(
    cosines=st.lists(COSINES, min_size=0, max_size=60),
    hubs=st.lists(st.one_of(VALUES, st.floats(-1, 1)), min_size=60, max_size=60),
    background=st.lists(st.floats(-0.5, 0.9), min_size=2, max_size=12),
    method=st.sampled_from(["csls", "z", "explicit", "none", "csls-no-hubness"]),
    csls_floor=st.sampled_from([-0.3, -0.1, 0.0, 0.1]),
    explicit=st.sampled_from([0.0, 0.2, 0.5, 0.9]),
    limit=st.integers(1, 70),
    near=st.lists(st.sampled_from([-1e-3, -1e-6, 0.0, 1e-6, 1e-3, 5e-3]), max_size=10),
)
def test_dense_ranking_equals_top_scores_of_the_full_relevance(
    cosines: list[float],
    hubs: list[float],
    background: list[float],
    method: str,
    csls_floor: float,
    explicit: float,
    limit: int,
    near: list[float],
) -> None:
    calibration: Calibration | None = None
    floor: float | None = None
    if method == "explicit":
        floor = explicit
    elif method in ("csls", "z", "csls-no-hubness"):
        calibration = Calibration.of(
            background,
            method="z" if method == "z" else "csls",
            csls_floor=csls_floor,
            csls_full=csls_floor + 0.15,
        )
    # cosines just around the floor of the method (`near`: offsets from it)
    cosines = cosines[: 60 - len(near)]
    base = len(cosines)
    for n, delta in enumerate(near):
        hub = hubs[base + n]
        if floor is not None:
            cosines.append(floor + delta)
        elif calibration is not None and calibration.method == "z":
            cosines.append(calibration.floor + delta)
        elif calibration is not None:
            cosines.append((csls_floor + calibration.neighbourhood + hub) / 2 + delta)
    ids = [f"m{n}" for n in range(len(cosines))]
    values = np.asarray(cosines, dtype=np.float32)
    hubness: np.ndarray | None = np.asarray(hubs[: len(cosines)], dtype=np.float32)
    if method == "csls-no-hubness":
        hubness = None
    want = top_scores(ids, dense_relevance(values, calibration, floor, hubness), limit, MIN_PASSED)
    got = dense_ranking(ids, values, calibration, floor, hubness, limit=limit)
    assert got == want  # the same ids, order and relevances, bit for bit
