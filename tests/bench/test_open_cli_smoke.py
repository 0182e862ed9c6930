"""Smoke test of the open and CLI start-up benchmark: tiny sizes, well-formed figures."""

from __future__ import annotations

from pathlib import Path

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


def test_per_process_start_benchmark_returns_figures(tmp_path: Path) -> None:
    """The issue 29 table: CLI search/add and import+open+search as whole processes, with a
    `--compare` tree (here this checkout itself, laid out as the package)."""
    tree = open_cli.link_tree(Path(open_cli.__file__).parents[2], tmp_path / "tree")
    empty = open_cli.bench_start(0, repeats=1, compare=tree)
    assert empty["cli_search_ms"] > 0 and empty["cli_add_cpu_ms"] > 0
    assert empty["api_search_ms"] > 0 and empty["floor_cpu_ms"] > 0
    assert empty["pass_cpu_ms"] > 0 and empty["pass_old_cpu_ms"] > 0
    assert empty["cli_search_old_cpu_ms"] > 0
    small = open_cli.bench_start(40, repeats=1)
    assert "cli_search_ms" in small and "cli_search_old_ms" not in small
    text = open_cli.render_start([empty, small])
    assert "CLI add ms (target 150)" in text and "new/old CPU" in text
    assert "floor: python -c pass" in text
