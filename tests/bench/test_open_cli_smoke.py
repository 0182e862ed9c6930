"""Smoke test of the open and CLI start-up benchmark: tiny sizes, well-formed figures."""

from __future__ import annotations

from tests.bench import open_cli


def test_open_cli_benchmark_returns_figures() -> None:
    row = open_cli.bench_size(40, repeats=1)
    assert row["entries"] == 40 and row["open_s"] > 0
    assert row["cli_search_ms"] > 0 and row["cli_search_cpu_ms"] > 0
    assert row["rss_open_mib"] > 0
    imports = open_cli.bench_imports()
    assert imports["package"]["modules"] > 0 and imports["cli_search"]["import_ms"] > 0
    text = open_cli.render({"sizes": [row], "imports": imports})
    assert "CLI search ms (CPU)" in text and "`import pi_hermes_memory`" in text
