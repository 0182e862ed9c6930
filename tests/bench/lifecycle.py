"""Benchmark: what a lifecycle call costs the caller's thread (issue 12 §6).

    python -m tests.bench.lifecycle [--turns 600]

A real store (SQLite + Markdown in a temp dir) and an in-process LLM that takes 50 ms and
answers one `add`: the review runs on the worker, so the caller should pay only the counters,
the correction check and the enqueue. Every user message also carries two tool calls; a review
fires every `nudgeInterval` (10) user turns. Figures: p50 / p99 / max of `user_message` (all,
and the ones that fired a review), `tool_call` and `assistant_message`, in microseconds.
Part of `make bench` (`tests.bench.run`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

LLM_SECONDS = 0.05


class _SlowLlm:
    """Sleeps like a model, then proposes one new fact."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        self.calls += 1
        time.sleep(LLM_SECONDS)
        fact = f"review {self.calls} learned the build uses make target t{self.calls}"
        return json.dumps({"operations": [{"action": "add", "target": "memory", "content": fact}]})


@attrs.frozen(kw_only=True)
class CallTimes:
    call: str
    samples: int
    p50_us: float
    p99_us: float
    max_us: float


@attrs.frozen(kw_only=True)
class LifecycleBench:
    turns: int
    reviews_run: int
    times: tuple[CallTimes, ...]


def _summary(call: str, values: Sequence[float]) -> CallTimes:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return CallTimes(
        call=call,
        samples=len(ordered),
        p50_us=round(statistics.median(ordered) * 1e6, 1),
        p99_us=round(p99 * 1e6, 1),
        max_us=round(ordered[-1] * 1e6, 1),
    )


def run(turns: int = 600) -> LifecycleBench:
    import pi_hermes_memory

    llm = _SlowLlm()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "proj").mkdir()
        with pi_hermes_memory.open(
            agent_root=root / "agent", cwd=root / "proj", environ={}, completer=llm
        ) as memory:
            session = memory.session("bench")
            user: list[float] = []
            fired: list[float] = []
            tools: list[float] = []
            assistant: list[float] = []
            for turn in range(turns):
                started = time.perf_counter()
                session.user_message(f"turn {turn}: please look at module m{turn % 37}")
                took = time.perf_counter() - started
                user.append(took)
                if (turn + 1) % session.settings.nudge_interval == 0:
                    fired.append(took)
                for name in ("read", "bash"):
                    started = time.perf_counter()
                    session.tool_call(name)
                    tools.append(time.perf_counter() - started)
                started = time.perf_counter()
                session.assistant_message(f"done with turn {turn}")
                assistant.append(time.perf_counter() - started)
            session.shutdown(timeout=30.0)
    return LifecycleBench(
        turns=turns,
        reviews_run=llm.calls,
        times=(
            _summary("user_message", user),
            _summary("user_message that fired a review", fired or [0.0]),
            _summary("tool_call", tools),
            _summary("assistant_message", assistant),
        ),
    )


def render(result: LifecycleBench) -> list[str]:
    lines = [
        "",
        f"## Lifecycle calls on the caller's thread ({result.turns} turns, LLM "
        f"{LLM_SECONDS * 1000:.0f} ms on the worker, {result.reviews_run} LLM calls ran; "
        "triggers while a review waits coalesce)",
        "",
        "| call | samples | p50 µs | p99 µs | max µs |",
        "|---|---|---|---|---|",
    ]
    for t in result.times:
        lines.append(f"| {t.call} | {t.samples} | {t.p50_us} | {t.p99_us} | {t.max_us} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.lifecycle", description=__doc__)
    parser.add_argument("--turns", type=int, default=600)
    args = parser.parse_args(argv)
    print("\n".join(render(run(args.turns))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
