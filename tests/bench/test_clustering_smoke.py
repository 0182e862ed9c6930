"""The pre-clustering benchmark runs and reports well-formed figures (no timing assertions)."""

from __future__ import annotations

import math

import pytest

from tests.bench import clustering


def test_bench_clustering_is_well_formed() -> None:
    results = clustering.run((40,), repeats=1)
    assert [(r.entries, r.vectors) for r in results] == [(40, False), (40, True)]
    assert all(math.isfinite(r.median_ms) and r.median_ms > 0 for r in results)
    assert results[0].clusters >= 1  # the corpus writes near-duplicates on purpose
    assert "| 40 | none |" in "\n".join(clustering.render_clustering(results))


def test_main_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert clustering.main(["--sizes", "20", "--repeats", "1"]) == 0
    assert "pre-clustering" in capsys.readouterr().out
