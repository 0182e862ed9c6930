"""Time-boxed fuzzing: `python -m tests.fuzz.run --seconds N` (what `make fuzz` runs, ADR 0009).

Loads the `fuzz` Hypothesis profile (randomized, print_blob), imports every
`tests/fuzz/test_*.py`, collects the functions named `test_*` that Hypothesis decorated and
takes no pytest fixtures, and calls them round-robin until N seconds have passed. Each call is
one randomized Hypothesis run whose max_examples is sized from the target's measured speed
(about `--slice` seconds per call, never past the deadline), so the loop ends within about one
slice of the budget. Per-target call and example counts are printed at the end.

On the first failure Hypothesis shrinks it and prints the falsifying example and the
`@reproduce_failure` blob; the traceback follows and the exit status is 1. A watchdog ends a run
that overstays the budget by `--grace` seconds (a hanging example, or a very long shrink): it
prints the stack and the first, unshrunk failing input if there is one, and exits 1 as well.
Exit status 0 means every target ran clean for the whole budget.
"""

from __future__ import annotations

import argparse
import faulthandler
import functools
import importlib
import inspect
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

FUZZ_DIR = Path(__file__).resolve().parent
PROFILE = "fuzz"
FIRST_SLICE = 20  # examples in a target's first call, before its speed is known
MIN_SLICE = 5


@attrs.define
class FuzzTarget:
    name: str
    fn: Any  # the Hypothesis-wrapped test function
    calls: int = 0
    examples: int = 0  # calls of the inner test: generated, replayed and shrink examples
    seconds: float = 0.0

    def per_example(self) -> float | None:
        return self.seconds / self.examples if self.examples else None


@attrs.define
class FirstFailure:
    """The first failing input seen, before shrinking (printed if the watchdog fires)."""

    target: str | None = None
    arguments: str = ""
    error: str = ""

    def record(
        self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any], exc: BaseException
    ) -> None:
        if self.target is None:
            self.target = target
            shown = ", ".join(
                [*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())]
            )
            self.arguments = shown if len(shown) <= 2_000 else shown[:2_000] + "…"
            self.error = "".join(traceback.format_exception(exc))


def _load_profile() -> Any:
    from hypothesis import settings

    importlib.import_module("tests.conftest")  # registers the ci/dev/fuzz profiles
    settings.load_profile(PROFILE)
    return settings


def _instrument(target: FuzzTarget, first: FirstFailure) -> None:
    """Count examples and remember the first failure, via the documented `inner_test` hook."""
    handle = target.fn.hypothesis
    inner = handle.inner_test

    @functools.wraps(inner)
    def counted(*args: Any, **kwargs: Any) -> Any:
        target.examples += 1
        try:
            return inner(*args, **kwargs)
        except BaseException as exc:
            if not type(exc).__module__.startswith("hypothesis"):  # not assume()/internal stops
                first.record(target.name, args, kwargs, exc)
            raise

    handle.inner_test = counted


def discover(first: FirstFailure, pattern: str | None = None) -> list[FuzzTarget]:
    targets = []
    for path in sorted(FUZZ_DIR.glob("test_*.py")):
        module = importlib.import_module(f"tests.fuzz.{path.stem}")
        for name, fn in vars(module).items():
            if not (name.startswith("test_") and callable(fn) and hasattr(fn, "hypothesis")):
                continue
            qualified = f"{path.stem}::{name}"
            if pattern and pattern not in qualified:
                continue
            if inspect.signature(fn).parameters:
                print(f"skipped {qualified}: it needs pytest fixtures", file=sys.stderr)
                continue
            target = FuzzTarget(name=qualified, fn=fn)
            _instrument(target, first)
            targets.append(target)
    return targets


def _call(target: FuzzTarget, max_examples: int, settings: Any) -> None:
    """One randomized run of `target` with at most `max_examples` examples.

    Hypothesis fixes a test's settings when it is decorated; the only way to change
    max_examples per call is the wrapped test's settings attribute. If a Hypothesis version
    lacks it, the call runs with the profile's own budget instead (the time box gets coarser).
    """
    fn = target.fn
    attribute = "_hypothesis_internal_use_settings"
    own = getattr(fn, attribute, None)
    if own is not None:
        setattr(fn, attribute, settings(own, max_examples=max_examples))
    started = time.perf_counter()
    try:
        fn()
    finally:
        target.seconds += time.perf_counter() - started
        target.calls += 1
        if own is not None:
            setattr(fn, attribute, own)


def _slice(target: FuzzTarget, remaining: float, slice_seconds: float, ceiling: int) -> int:
    per_example = target.per_example()
    if per_example is None:
        return min(FIRST_SLICE, ceiling)
    wanted = int(min(slice_seconds, remaining) / max(per_example, 1e-6))
    return max(MIN_SLICE, min(wanted, ceiling))


def _report(targets: Sequence[FuzzTarget], elapsed: float) -> None:
    width = max((len(t.name) for t in targets), default=10)
    print(f"\n{'target':<{width}}  {'calls':>6}  {'examples':>9}  {'examples/s':>10}")
    for t in targets:
        rate = t.examples / t.seconds if t.seconds else 0.0
        print(f"{t.name:<{width}}  {t.calls:>6}  {t.examples:>9}  {rate:>10.0f}")
    total = sum(t.examples for t in targets)
    print(f"{'total':<{width}}  {sum(t.calls for t in targets):>6}  {total:>9}  ({elapsed:.1f} s)")


def _watchdog(deadline: float, first: FirstFailure, current: Callable[[], str]) -> None:
    def fire() -> None:
        while time.monotonic() < deadline:
            time.sleep(min(1.0, max(deadline - time.monotonic(), 0.01)))
        print(f"\nFUZZ TIME BOX EXCEEDED while running {current()}", file=sys.stderr)
        if first.target is not None:
            print(f"first failing input of {first.target} (unshrunk): {first.arguments}")
            print(first.error, file=sys.stderr)
        else:
            print(
                "no failure was seen: an example hangs or is pathologically slow", file=sys.stderr
            )
        faulthandler.dump_traceback(all_threads=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    threading.Thread(target=fire, name="fuzz-watchdog", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget (default 60)")
    parser.add_argument("--slice", type=float, default=2.0, help="seconds per call (default 2)")
    parser.add_argument("--grace", type=float, default=15.0, help="watchdog slack (default 15)")
    parser.add_argument("-k", dest="pattern", help="only targets whose name contains this")
    args = parser.parse_args(argv)

    settings = _load_profile()
    profile = settings.get_profile(PROFILE)
    first = FirstFailure()
    targets = discover(first, args.pattern)
    if not targets:
        print("no fuzz targets found", file=sys.stderr)
        return 1
    from tests.fuzz.targets import KNOWN_BUGS

    print(f"fuzzing {len(targets)} targets for {args.seconds:g} s (profile {PROFILE!r})")
    if KNOWN_BUGS:
        print(f"tolerating known library bugs: {', '.join(sorted(KNOWN_BUGS))}")
    sys.stdout.flush()

    start = time.monotonic()
    deadline = start + args.seconds
    running = [targets[0].name]
    _watchdog(deadline + args.grace, first, lambda: running[0])
    try:
        while time.monotonic() < deadline:
            for target in targets:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                running[0] = target.name
                _call(target, _slice(target, remaining, args.slice, profile.max_examples), settings)
    except KeyboardInterrupt:
        _report(targets, time.monotonic() - start)
        return 130
    except BaseException:
        print(f"\nFAILURE in {running[0]}:", file=sys.stderr)
        traceback.print_exc()
        _report(targets, time.monotonic() - start)
        return 1
    _report(targets, time.monotonic() - start)
    print("no failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
