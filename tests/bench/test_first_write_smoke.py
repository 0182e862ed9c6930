"""Smoke test of the first-write benchmark (issue 29, ADRs 0084, 0088): a tiny size, every mode."""

from __future__ import annotations

from tests.bench import first_write


def test_first_write_benchmark_returns_figures() -> None:
    row = first_write.bench_size(30, repeats=1)
    assert row["entries"] == 30
    for mode in first_write.MODES:
        assert row[f"{mode}_add1_ms"] > 0 and row[f"{mode}_add1_cpu_ms"] > 0
        assert row[f"{mode}_rss_after_adds_mib"] > 0
        # from the child's start: its imports and open are in it, so more than the add alone
        assert (
            row[f"{mode}_process_cpu_ms"] > row[f"{mode}_open_cpu_ms"] + row[f"{mode}_add1_cpu_ms"]
        )
        assert row[f"{mode}_statuses"] == [["added", "added"]]
    text = first_write.render([row])
    assert "folded/indexed first add" in text and "rewrite/indexed close" in text
    assert row["ratio_close"] > 0
