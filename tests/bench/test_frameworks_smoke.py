"""Smoke test of the framework front ends' benchmark (issue 31, ADR 0095): tiny sizes."""

from __future__ import annotations

from tests.bench import frameworks


def test_frameworks_benchmark_returns_figures() -> None:
    rows = frameworks.run({"entries": 3, "calls": 2})
    assert [r["framework"] for r in rows] == [
        "mem0",
        "langgraph",
        "openai-agents",
        "anthropic memory tool",
    ]
    for r in rows:
        assert r["front_write_ms"] > 0 and r["direct_write_ms"] > 0
        assert r["front_search_cpu_ms"] >= 0 and r["write_ratio"] > 0 and r["search_ratio"] > 0
    assert "search ratio" in frameworks.render(rows)


def test_langgraph_put_benchmark_returns_figures() -> None:
    rows = frameworks.run_puts({"calls": 2, "put_sizes": (3,)})
    assert [r["items"] for r in rows] == [3]
    assert rows[0]["scan_ms"] > 0 and rows[0]["indexed_ms"] > 0 and rows[0]["ratio"] > 0
    assert "indexed ms" in frameworks.render_puts(rows)
