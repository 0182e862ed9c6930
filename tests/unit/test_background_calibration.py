"""The dense relevance floor's background sample and calibration (ADR 0069)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.search.background import (
    BACKGROUND,
    BACKGROUND_DIGEST,
    MIN_SPREAD,
    Calibration,
    _digest,
)
from pi_hermes_memory.domain.search.similarity import is_cjk


def test_the_sample_is_generic_varied_and_multilingual() -> None:
    assert 100 <= len(BACKGROUND) <= 200
    assert len(set(BACKGROUND)) == len(BACKGROUND)
    assert all(s.strip() == s and s for s in BACKGROUND)
    assert sum(any(is_cjk(ch) for ch in s) for s in BACKGROUND) >= 10
    assert sum(not s.isascii() for s in BACKGROUND) >= 30


def test_the_digest_names_this_sample() -> None:
    assert _digest(BACKGROUND) == BACKGROUND_DIGEST and len(BACKGROUND_DIGEST) == 16
    assert _digest((*BACKGROUND[:-1], BACKGROUND[-1] + ".")) != BACKGROUND_DIGEST
    assert _digest(("ab", "c")) != _digest(("a", "bc"))


def test_relevance_is_zero_up_to_the_floor_and_one_from_z_full() -> None:
    cal = Calibration.of([0.70, 0.72, 0.74, 0.76, 0.78], z_floor=3.0, z_full=8.0)
    assert cal.mean == pytest.approx(0.74) and cal.maximum == 0.78
    assert cal.spread == pytest.approx(math.sqrt(0.001))
    assert cal.floor == pytest.approx(0.74 + 3 * cal.spread)
    assert cal.relevance(0.78) == 0.0 and cal.relevance(cal.floor) == 0.0
    assert cal.relevance(0.74 + 5.5 * cal.spread) == pytest.approx(0.5)
    assert cal.relevance(0.74 + 8 * cal.spread) == pytest.approx(1.0)
    assert cal.relevance(1.0) == 1.0 and cal.relevance(float("nan")) == 0.0


def test_the_floor_is_never_below_the_backgrounds_maximum() -> None:
    # one background sentence close to the query: nothing at or below it counts
    cal = Calibration.of([0.1] * 20 + [0.9], z_floor=3.0, z_full=8.0)
    assert cal.floor == 0.9 and cal.relevance(0.9) == 0.0 and cal.relevance(0.95) > 0


def test_a_degenerate_background_has_the_least_spread() -> None:
    cal = Calibration.of([0.5, 0.5, 0.5])
    assert cal.spread == MIN_SPREAD and cal.relevance(0.5) == 0.0 and cal.relevance(0.6) == 1.0


@pytest.mark.parametrize(
    ("cosines", "kw", "match"),
    [
        ([0.5], {}, "at least two"),
        ([0.5, float("nan")], {}, "finite"),
        ([0.5, 0.6], {"z_floor": 3.0, "z_full": 3.0}, "z_full must be above"),
        ([0.5, "0.6"], {}, "finite"),
    ],
)
def test_bad_inputs_are_refused(cosines: list[object], kw: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Calibration.of(cosines, **kw)  # type: ignore[arg-type]


unit_cosines = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@given(
    background=st.lists(unit_cosines, min_size=2, max_size=40),
    a=unit_cosines,
    b=unit_cosines,
)
def test_relevance_is_a_monotone_map_into_zero_one(
    background: list[float], a: float, b: float
) -> None:
    cal = Calibration.of(background)
    low, high = sorted((a, b))
    assert 0.0 <= cal.relevance(low) <= cal.relevance(high) <= 1.0
    assert (cal.relevance(high) > 0) == (high > cal.floor)
    assert cal.floor >= max(background)
