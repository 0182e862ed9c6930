"""Smoke test of the server benchmark: a tiny run reports every figure (the figures themselves
are measured by `make bench-server`, not asserted here)."""

from __future__ import annotations

from tests.bench import server


def test_tiny_run_reports_every_figure() -> None:
    figures = server.run(clients=2, requests=3, mcp_calls=2, seed_entries=5)
    for kind in ("rest_store", "rest_search"):
        assert figures[kind]["n"] == 6
        assert 0 < figures[kind]["p50_ms"] <= figures[kind]["p99_ms"]
        assert figures[kind]["req_per_s"] > 0
    assert figures["mcp"]["tools_call_p50_ms"] > 0
    assert set(figures["overhead_ratio"]) == {"search", "store"}
    assert all(v > 0 for v in figures["overhead_ratio"].values())


def test_tiny_concurrency_run_reports_every_figure() -> None:
    figures = server.concurrency(clients=2, requests=2, seed_entries=8, repeats=1)
    for r in server.READERS:
        mode = figures[f"readers_{r}"]
        for phase in ("one", "many", "spread"):
            assert mode[phase]["req_per_s"] > 0
            assert mode[phase]["server_cpu_ms_per_req"] >= 0
        assert mode["many_over_one"] > 0
        assert mode["spread_over_one_store"] > 0
    assert figures["readers_0"]["many"]["readers_cpu_ms_per_req"] == 0
    lines = server.render_concurrency(figures)
    assert any("target ≥ 2" in line for line in lines)
    assert len([line for line in lines if line.startswith("| ")]) == 1 + len(server.READERS)
    assert sum("(default)" in line for line in lines) == 1  # this machine's default row


def test_tiny_first_read_run_reports_every_mode() -> None:
    figures = server.first_reads(seed_entries=5, searches=3, repeats=1)
    for mode in server.FIRST_READ_MODES:
        assert len(figures[mode]["first_ms"]) == 5 and all(x > 0 for x in figures[mode]["first_ms"])
        assert figures[mode]["server_mib"] > 0
    assert figures["0"]["children_mib"] == 0  # no reader, no other child
    lines = server.render_first_reads(figures)
    assert len([line for line in lines if line.startswith("| ")]) == 1 + len(
        server.FIRST_READ_MODES
    )
