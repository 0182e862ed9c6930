"""Benchmarks on a real on-disk store: `add` latency and journal replay.

    python -m tests.bench.run [--quick] [--out results.json]

Prints Markdown tables (machine context, `add` latency by store size, journal replay) and,
with `--out`, writes the same figures as JSON. `make bench` runs the full sizes (a few minutes
on two cores); `--quick` uses small sizes and is only a smoke run, its figures mean little.

What is measured:

- `add` latency: `Memory.add` on a store opened with `pi_hermes_memory.open` (SQLite journal +
  Markdown files in a temporary agent root, char limits raised to 10^9 so capacity never
  interferes) that already holds N entries in the `memory` target, so the near-duplicate scan
  and the Markdown render see all of them. The N entries are appended as `memory.added.v1`
  events directly through `SqliteStorage` (going through `add` would take O(N^2)); reopening
  the store renders MEMORY.md from the journal. A few warm-up adds run first (the first one
  also fills the token-set cache of all N entries; it is reported as "first add").
- journal replay: a journal of E events (mostly adds, some replaces and removes across the four
  streams) is built through `SqliteStorage.transaction()`; a fresh connection then folds every
  stream from version 0 (`fold(MemoryDocument.empty(t), uow.journal.read(stream_for(t)))`).
  Separately timed on the same connection: fetching the raw rows, decoding them
  (`codec.decode`) and folding the decoded events. Medians over the repeats; the database file
  is in the OS page cache (it was just written), so "cold" means a cold process-level state.

No figure here is asserted by the test suite; `tests/bench/test_bench_smoke.py` only checks that
the functions return well-formed results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pi_hermes_memory
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.system import UlidFactory
from pi_hermes_memory.codec import decode
from pi_hermes_memory.config import CONFIG_FILE_NAME
from pi_hermes_memory.domain.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.events import (
    Event,
    MemoryAdded,
    MemoryRemoved,
    MemoryReplaced,
    RemovalReason,
)
from pi_hermes_memory.domain.model import FailureCategory, Target

#: The targets from the issue, printed next to the figures.
ADD_P50_TARGET_MS = 5.0
ADD_TARGET_ENTRIES = 1_000

PROJECT = "bench"
BIG_LIMIT = 10**9
WARMUP_ADDS = 3
_BASE_TIME = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)

# --- realistic, distinct texts ----------------------------------------------------------------

_COMPONENTS = (
    "payments service", "billing worker", "search indexer", "auth gateway", "email relay",
    "report builder", "image resizer", "order pipeline", "pricing engine", "audit logger",
    "inventory sync", "webhook dispatcher", "metrics exporter", "feature flag service",
    "notification hub", "ledger reconciler", "catalog importer", "session store",
    "rate limiter", "job scheduler", "geocoding client", "PDF renderer", "chat backend",
    "analytics loader", "CDN purger", "backup agent", "config loader", "GraphQL layer",
    "mobile API", "admin console", "checkout flow", "tax calculator", "shipping quoter",
    "recommendation model", "translation cache", "upload scanner", "video transcoder",
    "docs site", "support inbox", "release bot",
)  # fmt: skip
_VERBS = (
    "reads", "caches", "retries", "validates", "batches", "compresses", "streams", "archives",
    "deduplicates", "rounds", "paginates", "normalises", "sorts", "signs", "throttles",
    "prefetches", "shards", "mirrors", "snapshots", "indexes", "replays", "aggregates",
    "encodes", "trims", "versions",
)  # fmt: skip
_THINGS = (
    "invoice totals", "customer addresses", "product images", "exchange rates",
    "warehouse stock levels", "delivery slots", "refund requests", "audit records",
    "search suggestions", "user avatars", "coupon codes", "tax tables", "shipping labels",
    "order histories", "price lists", "loyalty points", "support tickets", "feature toggles",
    "daily reports", "log bundles", "webhook payloads", "CSV exports", "translation strings",
    "thumbnail sets", "geo fences", "sales forecasts", "subscription plans", "payout batches",
    "event streams", "schema migrations", "fraud scores", "email templates", "push receipts",
    "store hours", "menu items", "parcel weights", "vendor contracts", "survey answers",
    "health probes", "timezone offsets",
)  # fmt: skip
_WHENS = (
    "after every deploy", "during the nightly batch", "before the weekly release",
    "on the first request of the day", "whenever the queue backs up", "at month end",
    "inside the retry window", "only in the EU region", "for enterprise tenants",
    "behind the canary flag", "when the replica lags", "in the staging cluster",
    "during peak traffic", "on cold starts", "for anonymous visitors", "in dry-run mode",
    "after a schema change", "while migrations run", "for mobile clients",
    "on the Sunday maintenance window", "when the cache is empty", "for legacy accounts",
    "in the load tests", "right after login", "before invoices close", "on failover",
    "for partner integrations", "in the nightly smoke suite", "when disk usage passes 80%",
    "at the top of each hour",
)  # fmt: skip
_ASIDES = (
    "the platform team owns it", "see the runbook chapter on queues",
    "Marta reviewed the design", "it was slow before version 4.2", "metrics live in Grafana",
    "the fix landed in March", "keep the timeout at 30 seconds", "tests cover the edge cases",
    "it doubles as a health check", "alerts page the on-call rotation",
    "the old path is deprecated", "ask Ravi before changing it", "the limit is documented",
    "QA signed off last sprint", "errors go to Sentry", "it uses Postgres advisory locks",
    "Redis holds the hot set", "the contract tests guard it", "the SLA is 99.9 percent",
    "the vendor SDK pins it", "logs are sampled at 10 percent", "the design doc is in Notion",
    "this surprised the new hires", "the benchmark is in CI", "it must stay idempotent",
    "clients expect ISO dates", "the default changed in 2025", "it survived the last outage",
    "the dashboard shows p99", "Kotlin and Go clients agree",
)  # fmt: skip
_SLOTS = (_COMPONENTS, _VERBS, _THINGS, _WHENS, _ASIDES)


class TextGenerator:
    """Seeded entry texts like an agent would save: `The <component> <verb> <thing> <when>; …`.

    With `distinct=True` any two texts differ in at least two of the five slots, which keeps
    their token Jaccard far below the near-duplicate threshold (0.8).
    """

    def __init__(self, seed: int, *, distinct: bool = True) -> None:
        self._rng = random.Random(seed)
        self._distinct = distinct
        self._seen: set[tuple[int, ...]] = set()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while True:
            picks = tuple(self._rng.randrange(len(slot)) for slot in _SLOTS)
            if not self._distinct:
                break
            # every "all slots but one" key must be new: then no two texts share 4 slots
            keys = [(i, *picks[:i], *picks[i + 1 :]) for i in range(len(picks))]
            if not any(k in self._seen for k in keys):
                self._seen.update(keys)
                break
        component, verb, thing, when, aside = (s[i] for s, i in zip(_SLOTS, picks, strict=True))
        return f"The {component} {verb} {thing} {when}; {aside}."


# --- helpers ----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]), like numpy's default."""
    if not values:
        raise ValueError("no values")
    data = sorted(values)
    pos = (len(data) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


@contextmanager
def _workdir(root: Path | None) -> Iterator[Path]:
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        yield Path(tmp)


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(
        agent_root=root / "agent", environ={"HOME": str(root)}, cwd=root, project=PROJECT
    )


def _write_config(root: Path) -> None:
    agent = root / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    limits = {"memoryCharLimit": BIG_LIMIT, "userCharLimit": BIG_LIMIT}
    limits["projectCharLimit"] = BIG_LIMIT
    (agent / CONFIG_FILE_NAME).write_text(json.dumps(limits), encoding="utf-8")


def _added(
    stream: str, version: int, at: datetime, entry_id: str, target: Target, text: str
) -> MemoryAdded:
    return MemoryAdded(
        stream=stream,
        version=version,
        at=at,
        entry_id=entry_id,
        target=target,
        text=text,
        project=PROJECT if target in (Target.PROJECT, Target.FAILURE) else None,
        category=FailureCategory.INSIGHT if target is Target.FAILURE else None,
        created=at.date(),
        last_referenced=at.date(),
    )


def machine_context() -> dict[str, Any]:
    cpu_model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        storage = SqliteStorage(Path(tmp) / "probe.db")
        try:
            sqlite_version = str(storage.connection.execute("SELECT sqlite_version()").get)
        finally:
            storage.close()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_model": cpu_model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "sqlite": sqlite_version,
        "platform": platform.platform(),
        "pi_hermes_memory": pi_hermes_memory.__version__,
    }


# --- add latency ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AddLatency:
    entries: int  # active entries in the `memory` target before the timed adds
    samples: int  # timed adds (warm-up adds excluded)
    warmup: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float
    first_add_ms: float  # the first warm-up add (cold token-set cache)
    prefill_s: float  # appending the N events
    open_s: float  # opening the store (renders MEMORY.md with N entries)
    statuses: dict[str, int]  # status -> count over the timed adds
    latencies_ms: tuple[float, ...] = attrs.field(repr=False)


def prefill(root: Path, entries: int, texts: Iterator[str], *, chunk: int = 5_000) -> float:
    """Create the store under `root` and append `entries` adds to the memory stream; seconds."""
    _write_config(root)
    with _open(root) as memory:  # creates the database and the Markdown directories
        db_path = memory.config.db_path
    started = time.perf_counter()
    ids = UlidFactory()
    stream = stream_for(Target.MEMORY)
    storage = SqliteStorage(db_path)
    try:
        with storage.transaction() as uow:
            version = uow.journal.version(stream)
            done = 0
            while done < entries:
                size = min(chunk, entries - done)
                events = [
                    _added(
                        stream,
                        version + i + 1,
                        _BASE_TIME + timedelta(seconds=version + i),
                        ids.new_id(),
                        Target.MEMORY,
                        next(texts),
                    )
                    for i in range(size)
                ]
                uow.journal.append(stream, version, events)
                uow.projection.apply(events)
                version += size
                done += size
    finally:
        storage.close()
    return time.perf_counter() - started


def bench_add(
    entries: int,
    samples: int,
    *,
    warmup: int = WARMUP_ADDS,
    seed: int = 1,
    root: Path | None = None,
) -> AddLatency:
    """Time `samples` single `Memory.add` calls on a store already holding `entries`."""
    if samples < 1:
        raise ValueError("samples must be >= 1")
    texts = TextGenerator(seed)
    with _workdir(root) as work:
        prefill_s = prefill(work, entries, texts)
        started = time.perf_counter()
        memory = _open(work)
        open_s = time.perf_counter() - started
        try:
            assert len(memory.entries("memory")) == entries
            latencies: list[float] = []
            statuses: dict[str, int] = {}
            first_add_ms = 0.0
            for i in range(warmup + samples):
                text = next(texts)
                started = time.perf_counter()
                result = memory.add(text, target="memory")
                elapsed_ms = (time.perf_counter() - started) * 1000
                if i == 0:
                    first_add_ms = elapsed_ms
                if i >= warmup:
                    latencies.append(elapsed_ms)
                    statuses[result.status] = statuses.get(result.status, 0) + 1
        finally:
            memory.close()
    return AddLatency(
        entries=entries,
        samples=len(latencies),
        warmup=warmup,
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        mean_ms=statistics.fmean(latencies),
        max_ms=max(latencies),
        first_add_ms=first_add_ms,
        prefill_s=prefill_s,
        open_s=open_s,
        statuses=statuses,
        latencies_ms=tuple(latencies),
    )


# --- journal replay ---------------------------------------------------------------------------

#: Share of the events per stream, and the operation mix once a stream has active entries.
_STREAM_WEIGHTS = {Target.MEMORY: 0.4, Target.USER: 0.15, Target.PROJECT: 0.3, Target.FAILURE: 0.15}
_ADD_SHARE, _REPLACE_SHARE = 0.8, 0.12  # the rest are removes


@attrs.frozen(kw_only=True)
class ReplayResult:
    events: int
    by_stream: dict[str, int]
    by_kind: dict[str, int]
    active: int  # active entries over all streams after the fold
    history: int
    repeats: int
    build_s: float
    cold_total_s: float  # the first read + decode + fold, on a fresh connection
    total_s: float  # median over the repeats of read + decode + fold via journal.read
    fetch_s: float  # median: raw SELECT of the rows
    decode_s: float  # median: codec.decode of the fetched rows
    fold_s: float  # median: fold of the decoded events

    def rate(self, seconds: float) -> float:
        return self.events / seconds if seconds > 0 else float("inf")


def build_journal(
    db_path: Path, events: int, *, seed: int = 7, chunk: int = 2_000
) -> dict[str, Any]:
    """Append `events` events over the four streams through SqliteStorage; returns counts."""
    rng = random.Random(seed)
    texts = TextGenerator(seed, distinct=False)
    ids = UlidFactory()
    targets = list(_STREAM_WEIGHTS)
    weights = [_STREAM_WEIGHTS[t] for t in targets]
    active: dict[Target, list[str]] = {t: [] for t in targets}
    version = dict.fromkeys(targets, 0)
    pending: dict[Target, list[Event]] = {t: [] for t in targets}
    kinds = {"add": 0, "replace": 0, "remove": 0}
    storage = SqliteStorage(db_path)

    def flush(uow: Any, target: Target) -> None:
        batch = pending[target]
        if batch:
            uow.journal.append(stream_for(target), batch[0].version - 1, batch)
            uow.projection.apply(batch)
            pending[target] = []

    try:
        with storage.transaction() as uow:
            for n in range(events):
                target = rng.choices(targets, weights)[0]
                stream = stream_for(target)
                version[target] += 1
                at = _BASE_TIME + timedelta(seconds=n)
                live = active[target]
                roll = rng.random()
                event: Event
                if not live or roll < _ADD_SHARE:
                    entry_id = ids.new_id()
                    event = _added(stream, version[target], at, entry_id, target, next(texts))
                    live.append(entry_id)
                    kinds["add"] += 1
                elif roll < _ADD_SHARE + _REPLACE_SHARE:
                    slot = rng.randrange(len(live))
                    new_id = ids.new_id()
                    added = _added(stream, version[target], at, new_id, target, next(texts))
                    event = MemoryReplaced(
                        stream=stream,
                        version=version[target],
                        at=at,
                        old_id=live[slot],
                        new_id=new_id,
                        text=added.text,
                        project=added.project,
                        category=added.category,
                        created=added.created,
                        last_referenced=added.last_referenced,
                    )
                    live[slot] = new_id
                    kinds["replace"] += 1
                else:
                    slot = rng.randrange(len(live))
                    live[slot], live[-1] = live[-1], live[slot]
                    event = MemoryRemoved(
                        stream=stream,
                        version=version[target],
                        at=at,
                        entry_id=live.pop(),
                        reason=RemovalReason.TOOL,
                    )
                    kinds["remove"] += 1
                pending[target].append(event)
                if len(pending[target]) >= chunk:
                    flush(uow, target)
            for target in targets:
                flush(uow, target)
    finally:
        storage.close()
    return {
        "by_stream": {stream_for(t): version[t] for t in targets},
        "by_kind": kinds,
        "active": sum(len(v) for v in active.values()),
    }


_SELECT_ROWS = "SELECT tag, data FROM events WHERE stream = ? ORDER BY version"


def _replay_once(db_path: Path) -> dict[str, Any]:
    storage = SqliteStorage(db_path)
    try:
        started = time.perf_counter()
        with storage.transaction() as uow:
            docs = {
                t: fold(MemoryDocument.empty(t), uow.journal.read(stream_for(t))) for t in Target
            }
        total = time.perf_counter() - started

        conn = storage.connection
        started = time.perf_counter()
        rows = {t: list(conn.execute(_SELECT_ROWS, (stream_for(t),))) for t in Target}
        fetch = time.perf_counter() - started

        started = time.perf_counter()
        decoded = {t: [decode(tag, data) for tag, data in rows[t]] for t in Target}
        decode_s = time.perf_counter() - started

        started = time.perf_counter()
        folded = {t: fold(MemoryDocument.empty(t), decoded[t]) for t in Target}
        fold_s = time.perf_counter() - started
    finally:
        storage.close()
    assert all(folded[t].version == docs[t].version for t in Target)
    return {
        "total": total,
        "fetch": fetch,
        "decode": decode_s,
        "fold": fold_s,
        "events": sum(len(v) for v in rows.values()),
        "active": sum(len(d.active) for d in docs.values()),
        "history": sum(len(d.history) for d in docs.values()),
    }


def bench_replay(events: int, *, repeats: int = 3, root: Path | None = None) -> ReplayResult:
    """Build a journal of `events` events, then time cold replays of all four streams."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    with _workdir(root) as work:
        db_path = work / "replay.db"
        started = time.perf_counter()
        built = build_journal(db_path, events)
        build_s = time.perf_counter() - started
        runs = [_replay_once(db_path) for _ in range(repeats)]
    first = runs[0]
    assert first["events"] == events and first["active"] == built["active"]
    return ReplayResult(
        events=first["events"],
        by_stream=built["by_stream"],
        by_kind=built["by_kind"],
        active=first["active"],
        history=first["history"],
        repeats=repeats,
        build_s=build_s,
        cold_total_s=first["total"],
        total_s=statistics.median(r["total"] for r in runs),
        fetch_s=statistics.median(r["fetch"] for r in runs),
        decode_s=statistics.median(r["decode"] for r in runs),
        fold_s=statistics.median(r["fold"] for r in runs),
    )


# --- report -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Plan:
    add_sizes: tuple[tuple[int, int], ...]  # (entries, samples)
    replay_events: int
    replay_repeats: int


FULL = Plan(
    add_sizes=((100, 200), (1_000, 200), (10_000, 200)), replay_events=100_000, replay_repeats=3
)
QUICK = Plan(add_sizes=((100, 50), (1_000, 50)), replay_events=20_000, replay_repeats=1)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _add_target(result: AddLatency) -> str:
    if result.entries != ADD_TARGET_ENTRIES:
        return "—"
    verdict = "met" if result.p50_ms <= ADD_P50_TARGET_MS else "MISSED"
    return f"p50 ≤ {ADD_P50_TARGET_MS:g} ms: {verdict}"


def render_markdown(
    context: dict[str, Any], adds: Sequence[AddLatency], replay: ReplayResult | None
) -> str:
    out = ["## Machine", ""]
    out.append(
        _table(
            ["CPUs (usable)", "CPU model", "Python", "SQLite", "platform"],
            [
                [
                    f"{context['cpu_count']} ({context['cpus_usable']})",
                    context["cpu_model"],
                    f"{context['implementation']} {context['python']}",
                    context["sqlite"],
                    context["platform"],
                ]
            ],
        )
    )
    out += ["", "## `add` latency (memory target, SQLite + Markdown on disk)", ""]
    out.append(
        _table(
            [
                "entries in scope",
                "samples",
                "p50 ms",
                "p95 ms",
                "mean ms",
                "max ms",
                "first add ms",
                "statuses",
                "target (issue)",
            ],
            [
                [
                    f"{r.entries:,}",
                    r.samples,
                    f"{r.p50_ms:.2f}",
                    f"{r.p95_ms:.2f}",
                    f"{r.mean_ms:.2f}",
                    f"{r.max_ms:.2f}",
                    f"{r.first_add_ms:.2f}",
                    ", ".join(f"{k}={v}" for k, v in sorted(r.statuses.items())),
                    _add_target(r),
                ]
                for r in adds
            ],
        )
    )
    target = f"add p50 ≤ {ADD_P50_TARGET_MS:g} ms at {ADD_TARGET_ENTRIES:,} entries"
    out += ["", f"Target from the issue: {target}. {WARMUP_ADDS} warm-up adds precede the samples."]
    if replay is not None:
        kinds = ", ".join(f"{k}={v:,}" for k, v in replay.by_kind.items())
        out += [
            "",
            f"## Journal replay ({replay.events:,} events: {kinds}; "
            f"{replay.active:,} active + {replay.history:,} history entries after the fold)",
            "",
        ]
        rows: list[tuple[str, float]] = [
            ("read + decode + fold (cold, first run)", replay.cold_total_s),
            (f"read + decode + fold (median of {replay.repeats})", replay.total_s),
            ("  SQL fetch only", replay.fetch_s),
            ("  decode only (codec.decode)", replay.decode_s),
            ("  fold only", replay.fold_s),
        ]
        out.append(
            _table(
                ["phase", "seconds", "events/s"],
                [[name, f"{s:.3f}", f"{replay.rate(s):,.0f}"] for name, s in rows],
            )
        )
        out += ["", f"Journal build (not a target): {replay.build_s:.1f} s."]
    return "\n".join(out)


def to_json(
    context: dict[str, Any], adds: Sequence[AddLatency], replay: ReplayResult | None
) -> dict[str, Any]:
    return {
        "context": context,
        "targets": {"add_p50_ms": ADD_P50_TARGET_MS, "add_at_entries": ADD_TARGET_ENTRIES},
        "add": [attrs.asdict(r) for r in adds],
        "replay": None if replay is None else attrs.asdict(replay),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    context = machine_context()
    adds = []
    for entries, samples in plan.add_sizes:
        print(f"… add latency at {entries:,} entries", file=sys.stderr, flush=True)
        adds.append(bench_add(entries, samples))
    print(f"… journal replay of {plan.replay_events:,} events", file=sys.stderr, flush=True)
    replay = bench_replay(plan.replay_events, repeats=plan.replay_repeats)
    print(render_markdown(context, adds, replay))
    print(f"\n(total benchmark time {time.perf_counter() - started:.0f} s)", flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(to_json(context, adds, replay), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
