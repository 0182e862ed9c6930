"""The add growth benchmark runs and returns well-formed figures (no timing assertions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench import add_growth, run


def test_fill_curve_is_well_formed(tmp_path: Path) -> None:
    curve = add_growth.bench_fill((3, 1, 6), root=tmp_path)
    assert curve.checkpoints == (1, 3, 6)
    assert curve.statuses == {"added": 6}
    assert 0 < curve.elapsed_s[0] <= curve.elapsed_s[1] <= curve.elapsed_s[2]
    assert len(curve.per_add_ms()) == 3 and all(ms > 0 for ms in curve.per_add_ms())
    lines = "\n".join(run.render_fill(curve))
    assert "| 6 |" in lines and "ms per add" in lines
    with pytest.raises(ValueError):
        add_growth.bench_fill((0,))


def test_side_by_side_table_renders() -> None:
    one = {
        "add": [
            {
                "entries": 10,
                "p50_ms": 4.0,
                "p95_ms": 5.0,
                "p99_ms": 6.0,
                "max_ms": 7.0,
                "first_add_ms": 9.0,
                "cpu_p50_ms": 1.0,
                "close_ms": 3.0,
            }
        ],
        "fill": {"checkpoints": [2], "elapsed_s": [0.01]},
        "fill_per_add_ms": [5.0],
    }
    two = {**one, "add": [{**one["add"][0], "p50_ms": 2.0, "cpu_p50_ms": 0.5}]}  # type: ignore[dict-item]
    text = "\n".join(add_growth.render({"main": one, "this": two}))
    main = "| 4.00 | 5.00 | 6.00 | 7.00 | 1.00 | 9.0 | 3.0 |"
    this = " 2.00 | 5.00 | 6.00 | 7.00 | 0.50 | 9.0 | 3.0 |"
    assert "| 10 " + main + this + " 2.0× (CPU 2.0×) |" in text
    assert "| 2 | 0.01 | 5.00 | 0.01 | 5.00 |" in text
