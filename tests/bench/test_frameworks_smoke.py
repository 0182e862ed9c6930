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
