"""The lifecycle overhead benchmark runs and reports well-formed figures (no timing asserts)."""

from __future__ import annotations

import math

from tests.bench import lifecycle


def test_bench_lifecycle_is_well_formed() -> None:
    result = lifecycle.run(20)
    assert result.turns == 20 and result.reviews_run >= 1  # turn 10 and 20 fire reviews
    calls = [t.call for t in result.times]
    assert calls == [
        "user_message",
        "user_message that fired a review",
        "tool_call",
        "assistant_message",
    ]
    assert all(math.isfinite(t.p99_us) and t.samples > 0 for t in result.times)
    assert "| tool_call | 40 |" in "\n".join(lifecycle.render(result))
