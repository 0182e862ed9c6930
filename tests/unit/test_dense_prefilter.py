"""The float32 pre-test of the csls floor (ADR 0107) keeps every row the exact float64 test
passes: rows a few float32 steps either side of the exact boundary, for floors,
neighbourhoods and hubness across their range; where it does not apply it says so."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.search.background import Calibration
from pi_hermes_memory.search.hybrid import _csls_near


def _calibration(floor: float, neighbourhood: float) -> Calibration:
    base = Calibration.of([0.1, 0.2, 0.3], method="csls", csls_floor=floor, csls_full=floor + 0.1)
    object.__setattr__(base, "neighbourhood", neighbourhood)
    return base


@settings(max_examples=500, deadline=None)
@given(
    floor=st.floats(-2, 1.9),
    neighbourhood=st.floats(-1, 1),
    hubs=st.lists(st.floats(-1, 1, width=32), min_size=1, max_size=30),
    steps=st.lists(st.integers(-3, 3), min_size=30, max_size=30),
)
def test_the_pre_test_keeps_every_row_the_exact_test_passes(
    floor: float, neighbourhood: float, hubs: list[float], steps: list[int]
) -> None:
    calibration = _calibration(floor, neighbourhood)
    h = np.asarray(hubs, dtype=np.float32)
    # the float32 cosine nearest the exact boundary, moved a few float32 steps
    boundary = ((floor + neighbourhood + h.astype(np.float64)) / 2).astype(np.float32)
    cos = boundary.copy()
    for i in range(len(cos)):
        for _ in range(abs(steps[i])):
            cos[i] = np.nextafter(cos[i], np.float32(np.sign(steps[i]) * np.inf))
    exact = 2.0 * cos.astype(np.float64) - neighbourhood - h.astype(np.float64)
    passing = set(np.flatnonzero(np.isfinite(exact) & (exact > floor)).tolist())
    near = _csls_near(cos, h, calibration)
    assert near is not None
    assert passing <= set(near.tolist())


def test_it_does_not_apply_outside_its_bounds() -> None:
    calibration = _calibration(0.0, 0.2)
    cos = np.asarray([0.5, 0.1], dtype=np.float32)
    assert _csls_near(cos.astype(np.float64), cos, calibration) is None  # float64 cosines
    assert _csls_near(cos, np.asarray([0.1, 5.0], dtype=np.float32), calibration) is None
    assert _csls_near(cos, np.asarray([0.1, np.nan], dtype=np.float32), calibration) is None
    assert _csls_near(cos, cos, _calibration(0.0, float("nan"))) is None
    found = _csls_near(cos, np.asarray([0.1, 0.1], dtype=np.float32), calibration)
    assert found is not None and found.tolist() == [0]
