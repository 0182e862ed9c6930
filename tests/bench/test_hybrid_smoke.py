"""The hybrid benchmark runs end to end at a small size and prints every path (ADR 0082, 0101)."""

from __future__ import annotations

from pathlib import Path

from tests.bench.hybrid import CHANGES, bench_hybrid, branch_point_store_class, render_hybrid


def test_hybrid_bench_measures_every_path_after_each_kind_of_write(tmp_path: Path) -> None:
    result = bench_hybrid(300, 4, root=tmp_path)
    assert result.rows == 300 and result.samples == 4 and 0 < result.candidates < 300
    states = {"warm", "write", "add", "replace", "remove"}
    paths = [result.now, result.before]
    if branch_point_store_class() is not None:  # a clone with history: main's store too
        paths.append(result.main)
    for timings in paths:
        assert set(timings) == states
        assert all(wall > 0 and cpu >= 0 for wall, cpu in timings.values())
    assert result.after_add_ms is not None and result.after_replace_ms is not None
    assert result.after_remove_ms is not None
    printed = "\n".join(render_hybrid([result]))
    assert "port-only path" in printed and "| 300 | after a replace |" in printed
    assert "| 300 | after a remove |" in printed
    assert CHANGES >= 5
