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
    cal = Calibration.of([0.70, 0.72, 0.74, 0.76, 0.78], method="z", z_floor=3.0, z_full=8.0)
    assert cal.mean == pytest.approx(0.74) and cal.maximum == 0.78
    assert cal.spread == pytest.approx(math.sqrt(0.001))
    assert cal.floor == pytest.approx(0.74 + 3 * cal.spread)
    assert cal.relevance(0.78) == 0.0 and cal.relevance(cal.floor) == 0.0
    assert cal.relevance(0.74 + 5.5 * cal.spread) == pytest.approx(0.5)
    assert cal.relevance(0.74 + 8 * cal.spread) == pytest.approx(1.0)
    assert cal.relevance(1.0) == 1.0 and cal.relevance(float("nan")) == 0.0


def test_the_floor_is_never_below_the_backgrounds_maximum() -> None:
    # one background sentence close to the query: nothing at or below it counts
    cal = Calibration.of([0.1] * 20 + [0.9], method="z", z_floor=3.0, z_full=8.0)
    assert cal.floor == 0.9 and cal.relevance(0.9) == 0.0 and cal.relevance(0.95) > 0


def test_a_degenerate_background_has_the_least_spread() -> None:
    cal = Calibration.of([0.5, 0.5, 0.5], method="z")
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
    cal = Calibration.of(background, method="z")
    low, high = sorted((a, b))
    assert 0.0 <= cal.relevance(low) <= cal.relevance(high) <= 1.0
    assert (cal.relevance(high) > 0) == (high > cal.floor)
    assert cal.floor >= max(background)


# --- the hubness-corrected ("csls") floor, ADR 0072 ------------------------------------------


def test_csls_relevance_is_zero_up_to_the_floor_and_one_from_csls_full() -> None:
    background = [0.70, 0.71, 0.72, 0.80, 0.90]
    cal = Calibration.of(background, method="csls", csls_floor=0.0, csls_full=0.1, k=2)
    assert cal.method == "csls" and cal.neighbourhood == pytest.approx(0.85)  # top two
    # 2·cos − r_q − r_d: cos 0.9, hubness 0.9 -> 1.8 − 0.85 − 0.9 = 0.05
    assert cal.csls(0.9, 0.9) == pytest.approx(0.05)
    assert cal.relevance(0.9, 0.9) == pytest.approx(0.5)
    assert cal.relevance(0.875, 0.9) == 0.0  # exactly at the floor
    assert cal.relevance(0.95, 0.9) == 1.0
    # the same cosine on a hub (a row close to everything generic) counts less
    assert cal.relevance(0.9, 0.95) == 0.0 < cal.relevance(0.9, 0.85)
    assert cal.relevance(float("nan"), 0.5) == 0.0 and cal.relevance(0.9, float("inf")) == 0.0


def test_the_neighbourhood_is_the_mean_of_the_k_highest_background_cosines() -> None:
    cal = Calibration.of([0.1, 0.2, 0.3, 0.4], k=10)  # fewer than k: all of them
    assert cal.neighbourhood == pytest.approx(0.25) and cal.method == "csls"
    assert Calibration.of([0.1, 0.2, 0.3, 0.4], k=1).neighbourhood == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"method": "cosine"}, "method must be one of"),
        ({"csls_floor": 0.1, "csls_full": 0.1}, "csls_full must be above"),
        ({"csls_floor": float("nan")}, "finite"),
        ({"k": 0}, "k must be an integer"),
        ({"k": True}, "k must be an integer"),
    ],
)
def test_bad_csls_settings_are_refused(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Calibration.of([0.5, 0.6], **kw)  # type: ignore[arg-type]


@given(
    background=st.lists(unit_cosines, min_size=2, max_size=40),
    a=unit_cosines,
    b=unit_cosines,
    hub_a=unit_cosines,
    hub_b=unit_cosines,
)
def test_csls_relevance_is_in_zero_one_rising_in_cosine_and_falling_in_hubness(
    background: list[float], a: float, b: float, hub_a: float, hub_b: float
) -> None:
    cal = Calibration.of(background, method="csls")
    low, high = sorted((a, b))
    hub_low, hub_high = sorted((hub_a, hub_b))
    assert 0.0 <= cal.relevance(low, hub_a) <= cal.relevance(high, hub_a) <= 1.0
    assert cal.relevance(a, hub_high) <= cal.relevance(a, hub_low)
    assert (cal.relevance(a, hub_a) > 0) == (cal.csls(a, hub_a) > cal.csls_floor)
