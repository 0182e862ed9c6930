"""The hybrid benchmark runs end to end at a small size and prints both paths (ADR 0082)."""

from __future__ import annotations

from pathlib import Path

from tests.bench.hybrid import CHANGES, bench_hybrid, render_hybrid


def test_hybrid_bench_measures_both_paths_after_each_kind_of_write(tmp_path: Path) -> None:
    result = bench_hybrid(300, 4, root=tmp_path)
    assert result.rows == 300 and result.samples == 4 and 0 < result.candidates < 300
    for timings in (result.now, result.before):
        assert set(timings) == {"warm", "write", "add", "replace"}
        assert all(wall > 0 and cpu >= 0 for wall, cpu in timings.values())
    assert result.after_add_ms is not None and result.after_replace_ms is not None
    printed = "\n".join(render_hybrid([result]))
    assert "port-only path" in printed and "| 300 | after a replace |" in printed
    assert CHANGES >= 5
