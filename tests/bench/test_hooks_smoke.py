"""Smoke test of the Claude Code hook benchmark: a tiny store, well-formed figures."""

from __future__ import annotations

from tests.bench import hooks


def test_hooks_benchmark_returns_figures() -> None:
    result = hooks.bench_hooks(40, repeats=1)
    recall = result["rows"]["UserPromptSubmit (recall)"]
    assert result["entries"] == 40 and recall["p50_ms"] > 0 and recall["cpu_p50_ms"] > 0
    assert result["rows"]["SessionStart"]["out"] > 0  # the policy block was answered
    first = hooks.bench_first_fact()
    assert first["stored"] and first["total_ms"] > 0
    text = hooks.render(result, first)
    assert "UserPromptSubmit (recall)" in text and "first remembered fact" in text


def test_hooks_benchmark_measures_the_warm_server() -> None:
    result = hooks.bench_hooks(40, repeats=1)
    warm = result["rows"]["UserPromptSubmit (recall), warm server"]
    assert warm["p50_ms"] > 0 and warm["cpu_p50_ms"] > 0
    assert result["rows"]["SessionStart, warm server"]["out"] > 0  # the server answered
    assert "warm server" in hooks.render(result, hooks.bench_first_fact())
