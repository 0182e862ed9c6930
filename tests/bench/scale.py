"""Benchmarks of cost that must grow linearly, and of waiting (issue 9 section 3, ADR 0024).

    python -m tests.bench.scale [--quick] [--out results.json]

- open of a hand-written MEMORY.md: N plain entries separated by `§` lines, no metadata and
  no sessions.db (a person's file, or one copied from another machine); the time of
  `pi_hermes_memory.open(...)` (creates the database, parses and imports every entry, renders
  the file), then the parse alone (`MarkdownFormat.parse`). Each size runs in a child process
  with a time limit, so a quadratic import is reported instead of hanging the run.
- a batch of N adds through `Memory.batch` on an empty store: with the near-duplicate check
  (every add is compared with the rows of its scope: O(N^2) token-set work, issue 17) and with
  `force` (the batch machinery alone). The growth ratio between sizes: 10x more operations
  taking 10x the time is linear, 100x quadratic.
- lock waits: W writer processes open the same store and add M entries each at once; every
  acquisition of the store lock is timed (`FileLock.acquire`), and each add end to end.
- open after churn: a journal of E events of which L entries stay live, opened (catch-up and
  render check) without a snapshot and with one.

`make bench` runs it after the latency benchmarks (tests/bench/run.py). No figure here is
asserted by the test suite; the smoke test runs the quick plan.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from tests.bench.run import (
    _BASE_TIME,
    TextGenerator,
    _added,
    _open,
    _table,
    _workdir,
    _write_config,
    percentile,
)


@attrs.frozen(kw_only=True)
class Plan:
    open_sizes: tuple[int, ...]
    open_limit_s: float
    batch_sizes: tuple[int, ...]
    writers: int
    adds_per_writer: int
    churn_events: int
    churn_live: int


FULL = Plan(
    open_sizes=(1_000, 10_000, 100_000),
    open_limit_s=900,
    batch_sizes=(1_000, 10_000),
    writers=16,
    adds_per_writer=25,
    churn_events=40_000,
    churn_live=10,
)
QUICK = Plan(
    open_sizes=(200, 1_000),
    open_limit_s=120,
    batch_sizes=(100, 400),
    writers=4,
    adds_per_writer=5,
    churn_events=2_000,
    churn_live=10,
)


# --- open of a hand-written file --------------------------------------------------------------


def hand_written(entries: int, seed: int = 21) -> str:
    texts = TextGenerator(seed)
    return "\n§\n".join(next(texts) for _ in range(entries)) + "\n"


_OPEN_CHILD = r"""
import json, sys, time
from pathlib import Path
from tests.bench.run import _open
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.domain.memory.model import Target
root = Path(sys.argv[1])
text = (root / "agent" / "pi-hermes-memory" / "MEMORY.md").read_text(encoding="utf-8")
started = time.perf_counter()
parsed = MarkdownFormat().parse(text, Target.MEMORY)
parse_s = time.perf_counter() - started
started = time.perf_counter()
with _open(root) as memory:
    open_s = time.perf_counter() - started
    started = time.perf_counter()
    listed = len(memory.entries("memory"))
    list_s = time.perf_counter() - started
started = time.perf_counter()
with _open(root) as memory:
    reopen_s = time.perf_counter() - started
print(json.dumps({"parse_s": parse_s, "parsed": len(parsed.entries), "open_s": open_s,
                  "entries": listed, "list_s": list_s, "reopen_s": reopen_s}))
"""


def bench_open(entries: int, *, limit_s: float, root: Path | None = None) -> dict[str, Any]:
    """Open a store whose MEMORY.md was written by hand with `entries` entries."""
    with _workdir(root) as work:
        _write_config(work)
        folder = work / "agent" / "pi-hermes-memory"
        folder.mkdir(parents=True, exist_ok=True)
        data = hand_written(entries)
        (folder / "MEMORY.md").write_text(data, encoding="utf-8")
        out: dict[str, Any] = {"entries_written": entries, "bytes": len(data.encode())}
        try:
            done = subprocess.run(
                [sys.executable, "-c", _OPEN_CHILD, str(work)],
                capture_output=True,
                text=True,
                timeout=limit_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {**out, "error": f"did not finish in {limit_s:g} s"}
        if done.returncode != 0:
            return {**out, "error": done.stderr.strip().splitlines()[-1:]}
        return {**out, **json.loads(done.stdout.strip().splitlines()[-1])}


# --- batches ----------------------------------------------------------------------------------


def bench_batch(size: int, *, force: bool, root: Path | None = None) -> dict[str, Any]:
    texts = TextGenerator(5)
    ops = [
        {"action": "add", "target": "memory", "content": next(texts), "force": force}
        for _ in range(size)
    ]
    with _workdir(root) as work:
        _write_config(work)
        with _open(work) as memory:
            started = time.perf_counter()
            result = memory.batch(ops)
            seconds = time.perf_counter() - started
    return {"operations": size, "force": force, "seconds": seconds, "status": result.status}


# --- lock waits -------------------------------------------------------------------------------


def _writer(root: str, index: int, adds: int, queue: Any) -> None:
    from pi_hermes_memory.adapters.markdown import atomic

    waits: list[float] = []
    original = atomic.FileLock.acquire

    def timed(self: atomic.FileLock) -> None:
        started = time.perf_counter()
        original(self)
        waits.append(time.perf_counter() - started)

    atomic.FileLock.acquire = timed  # type: ignore[method-assign]
    texts = TextGenerator(1000 + index)
    latencies: list[float] = []
    errors: list[str] = []
    started = time.perf_counter()
    try:
        memory = _open(Path(root))
    except Exception as exc:  # reported, not raised: the figure is how often this happens
        queue.put({"open_s": time.perf_counter() - started, "errors": [repr(exc)]})
        return
    open_s = time.perf_counter() - started
    with memory:
        for _ in range(adds):
            started = time.perf_counter()
            try:
                result = memory.add(next(texts), target="memory", force=True)
                if not result.success:
                    errors.append(result.status)
            except Exception as exc:
                errors.append(type(exc).__name__)
            latencies.append(time.perf_counter() - started)
    queue.put({"open_s": open_s, "waits": waits, "latencies": latencies, "errors": errors})


def bench_lock_wait(writers: int, adds: int, *, root: Path | None = None) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    with _workdir(root) as work:
        _write_config(work)
        with _open(work):
            pass
        queue = ctx.Queue()
        procs = [
            ctx.Process(target=_writer, args=(str(work), i, adds, queue)) for i in range(writers)
        ]
        for proc in procs:
            proc.start()
        reports = [queue.get(timeout=1800) for _ in procs]
        for proc in procs:
            proc.join()
        with _open(work) as memory:
            stored = len(memory.entries("memory"))
    waits = [w * 1000 for r in reports for w in r.get("waits", [])]
    latencies = [s * 1000 for r in reports for s in r.get("latencies", [])]
    return {
        "writers": writers,
        "adds_per_writer": adds,
        "acquisitions": len(waits),
        "wait_p50_ms": percentile(waits, 50),
        "wait_p99_ms": percentile(waits, 99),
        "wait_max_ms": max(waits),
        "add_p50_ms": percentile(latencies, 50),
        "add_p99_ms": percentile(latencies, 99),
        "open_max_s": max(r["open_s"] for r in reports),
        "errors": sorted(e for r in reports for e in r["errors"]),
        "stored": stored,
        "expected": writers * adds,
    }


# --- open after churn -------------------------------------------------------------------------


def bench_churn(events: int, live: int, *, root: Path | None = None) -> dict[str, Any]:
    """A journal of `events` events (adds and removes) leaving `live` entries; the time to open
    the store without and with a snapshot of the head."""
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
    from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
    from pi_hermes_memory.domain.memory.events import Event, MemoryRemoved, RemovalReason
    from pi_hermes_memory.domain.memory.model import Target
    from pi_hermes_memory.journal.snapshots import encode_document

    stream = stream_for(Target.MEMORY)
    texts = TextGenerator(9, distinct=False)
    with _workdir(root) as work:
        _write_config(work)
        with _open(work) as memory:
            db_path = memory.config.db_path
        history: list[Event] = []
        alive: list[str] = []
        # add on odd versions, remove on even ones once `live` are alive; then settle at `live`
        while len(history) < events or len(alive) != live:
            version = len(history) + 1
            at = _BASE_TIME + timedelta(seconds=version)
            grow = len(alive) < live if len(history) >= events else len(alive) < live or version % 2
            if grow:
                entry_id = f"{version:026d}"
                history.append(_added(stream, version, at, entry_id, Target.MEMORY, next(texts)))
                alive.append(entry_id)
            else:
                history.append(
                    MemoryRemoved(
                        stream=stream,
                        version=version,
                        at=at,
                        entry_id=alive.pop(0),
                        reason=RemovalReason.TOOL,
                    )
                )
        storage = SqliteStorage(db_path)
        try:
            with storage.transaction() as uow:
                uow.journal.append(stream, 0, history)
                uow.projection.apply(history)
        finally:
            storage.close()
        started = time.perf_counter()
        with _open(work) as memory:
            assert len(memory.entries("memory")) == live
        without_s = time.perf_counter() - started
        storage = SqliteStorage(db_path)
        try:
            head = fold(MemoryDocument.empty(Target.MEMORY), history)
            with storage.transaction() as uow:
                uow.journal.save_snapshot(stream, head.version, encode_document(head))
        finally:
            storage.close()
        started = time.perf_counter()
        with _open(work) as memory:
            assert len(memory.entries("memory")) == live
        with_s = time.perf_counter() - started
    return {"events": len(history), "live": live, "open_s": without_s, "snapshot_open_s": with_s}


# --- report -----------------------------------------------------------------------------------


def run(plan: Plan) -> dict[str, Any]:
    figures: dict[str, Any] = {"open": [], "batch": [], "locks": None, "churn": None}
    for size in plan.open_sizes:
        print(f"… open of a hand-written MEMORY.md, {size:,} entries", file=sys.stderr, flush=True)
        figures["open"].append(bench_open(size, limit_s=plan.open_limit_s))
    for force in (True, False):
        for size in plan.batch_sizes:
            print(f"… batch of {size:,} adds (force={force})", file=sys.stderr, flush=True)
            figures["batch"].append(bench_batch(size, force=force))
    print(f"… lock waits, {plan.writers} writer processes", file=sys.stderr, flush=True)
    figures["locks"] = bench_lock_wait(plan.writers, plan.adds_per_writer)
    print(f"… open after {plan.churn_events:,} events", file=sys.stderr, flush=True)
    figures["churn"] = bench_churn(plan.churn_events, plan.churn_live)
    return figures


def _s(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def render(figures: dict[str, Any]) -> str:
    out = ["", "## Open of a hand-written MEMORY.md (no sessions.db)", ""]
    rows = []
    for r in figures["open"]:
        if "error" in r:
            rows.append([f"{r['entries_written']:,}", f"{r['bytes']:,}", r["error"], "", "", ""])
            continue
        rows.append(
            [
                f"{r['entries_written']:,}",
                f"{r['bytes']:,}",
                _s(r["open_s"]),
                _s(r["parse_s"]),
                _s(r["reopen_s"]),
                f"{r['entries']:,}",
            ]
        )
    out.append(
        _table(["entries", "bytes", "open s", "parse only s", "reopen s", "entries listed"], rows)
    )
    out += ["", "## Batch of adds (`Memory.batch`, one transaction under the store lock)", ""]
    rows = []
    by_force: dict[bool, list[dict[str, Any]]] = {}
    for r in figures["batch"]:
        by_force.setdefault(r["force"], []).append(r)
    for force, runs in by_force.items():
        for i, r in enumerate(runs):
            ratio = ""
            if i:
                prev = runs[i - 1]
                ratio = (
                    f"{r['seconds'] / prev['seconds']:.1f}x for "
                    f"{r['operations'] / prev['operations']:.0f}x operations"
                )
            what = "force (machinery only)" if force else "with the near-duplicate check"
            rows.append([f"{r['operations']:,}", what, _s(r["seconds"]), r["status"], ratio])
    out.append(_table(["operations", "adds", "seconds", "status", "growth"], rows))
    locks = figures["locks"]
    out += [
        "",
        f"## Store lock waits: {locks['writers']} writer processes × "
        f"{locks['adds_per_writer']} adds",
        "",
    ]
    out.append(
        _table(
            [
                "acquisitions",
                "wait p50 ms",
                "wait p99 ms",
                "wait max ms",
                "add p50 ms",
                "add p99 ms",
                "open max s",
                "errors",
                "stored / expected",
            ],
            [
                [
                    locks["acquisitions"],
                    _s(locks["wait_p50_ms"]),
                    _s(locks["wait_p99_ms"]),
                    _s(locks["wait_max_ms"]),
                    _s(locks["add_p50_ms"]),
                    _s(locks["add_p99_ms"]),
                    _s(locks["open_max_s"]),
                    len(locks["errors"]),
                    f"{locks['stored']} / {locks['expected']}",
                ]
            ],
        )
    )
    churn = figures["churn"]
    out += ["", f"## Open after {churn['events']:,} events, {churn['live']} live entries", ""]
    out.append(
        _table(
            ["without a snapshot s", "with a snapshot s"],
            [[_s(churn["open_s"]), _s(churn["snapshot_open_s"])]],
        )
    )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.scale", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    figures = run(QUICK if args.quick else FULL)
    print(render(figures))
    print(f"\n(scale benchmark time {time.perf_counter() - started:.0f} s)", flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


__all__ = ["FULL", "QUICK", "bench_batch", "bench_churn", "bench_lock_wait", "bench_open"]

if __name__ == "__main__":
    sys.exit(main())
