"""The doctor benchmark runs and reports well-formed figures (no timing assertions)."""

from __future__ import annotations

import math

import pytest

from tests.bench import doctor


def test_bench_doctor_is_well_formed() -> None:
    figures = doctor.run(300, 5, 16)
    scans = figures["scan"]
    assert [s["vectors"] for s in scans] == [False, True]
    assert all(math.isfinite(s["seconds"]) for s in scans)
    assert scans[0]["candidates"] >= 1  # the corpus writes cross-scope near-duplicates
    assert scans[0]["brute_force_pairs"] > doctor.SEED_PAIR_BUDGET / 10_000
    d = figures["doctor"]
    assert d["rows"] >= 290 and d["candidates"] >= 1 and d["doctor_s"] > 0
    text = "\n".join(doctor.render(figures))
    assert "| 300 | 5 | none (token rule) |" in text and "Whole doctor" in text


def test_main_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert doctor.main(["--rows", "100", "--projects", "3", "--dim", "8", "--no-doctor"]) == 0
    assert "cross-scope near-duplicate scan" in capsys.readouterr().out
