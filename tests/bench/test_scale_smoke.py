"""Smoke test of the scale benchmarks: tiny sizes, well-formed figures, no timing asserted."""

from __future__ import annotations

from tests.bench import scale


def test_scale_benchmarks_return_figures() -> None:
    opened = scale.bench_open(50, limit_s=300)
    assert opened["entries"] == 50 and opened["parsed"] == 50
    batch = scale.bench_batch(30, force=False)
    assert batch["status"] == "ok" and batch["operations"] == 30
    locks = scale.bench_lock_wait(2, 2)
    assert locks["stored"] == locks["expected"] == 4 and not locks["errors"]
    churn = scale.bench_churn(300, 5)
    assert churn["live"] == 5 and churn["events"] >= 300
    text = scale.render({"open": [opened], "batch": [batch], "locks": locks, "churn": churn})
    assert "Store lock waits" in text
