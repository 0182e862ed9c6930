"""Auto-recall: what `AgentSession.before_turn` adds to a turn (issue 15 §4, ADR 0049).

    python -m tests.bench.recall [--quick] [--sizes 1000,10000] [--samples N] [--out f.json]

The store is the one `bench_search` builds (`build_search_store`: five projects, 30% Chinese,
20% history), opened through `pi_hermes_memory.open` as the session of project "web". Each
sample is one `before_turn` call with a seeded user message that adaptive retrieval sends to
the search (English and Chinese questions drawn from the corpus vocabulary), timed end to end:
the adaptive decision, the worker thread, the search, the noise filter, the category lookups
and the block. The budget (`autoRecallTimeoutMs`) is set high so the figures are the search's
own time; `over_500ms` counts samples that the default budget would have cut off. `skip_us`
is the cost of a message adaptive retrieval skips ("ok", "继续", "/new": no search at all).

Modes: `keyword` (FTS5 only, the default configuration) and, when the `local` extra is
installed, `hybrid-local`: the offline multilingual-e5-small embedder embeds each query for
real; the stored vectors are seeded random unit vectors under the embedder's model id (they
rank nothing meaningful but cost what real ones cost; embedding 10k rows with the local
model would take minutes and measure the indexing, not the turn).

No figure is asserted by the test suite; the smoke test runs a tiny plan.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from tests.bench.run import _COMPONENTS as _EN_COMPONENTS
from tests.bench.run import _THINGS as _EN_THINGS
from tests.bench.run import (
    _ZH_COMPONENTS,
    _ZH_THINGS,
    SEARCH_SESSION_PROJECT,
    _table,
    _workdir,
    _write_config,
    build_search_store,
    machine_context,
    percentile,
)

SKIPPED_MESSAGES = ("ok", "继续", "/new", "thanks!", "👍", "好的")


@attrs.frozen(kw_only=True)
class RecallLatency:
    mode: str
    rows: int
    samples: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float
    injected: int  # samples that got a block
    mean_items: float
    over_500ms: int
    skip_us: float  # median cost of a skipped message, microseconds
    build_s: float


def turn_messages(count: int, seed: int = 23) -> list[str]:
    """`count` seeded user messages that adaptive retrieval sends to the search."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        if n % 3 == 2:
            out.append(f"{rng.choice(_ZH_COMPONENTS)}之前是怎么处理{rng.choice(_ZH_THINGS)}的？")
        else:
            component, thing = rng.choice(_EN_COMPONENTS), rng.choice(_EN_THINGS)
            out.append(f"what did we decide last time about the {component} and {thing}?")
    return out


def _store_random_vectors(db_path: Path, model_id: str, dimension: int) -> int:
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
    from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore

    storage = SqliteStorage(db_path)
    try:
        with storage.read() as conn:
            rows = [(str(i), str(t)) for i, t in conn.execute("SELECT id, text FROM memories")]
        rng = np.random.default_rng(7)
        store = SqliteVectorStore(storage)
        stored = 0
        for start in range(0, len(rows), 20_000):
            part = rows[start : start + 20_000]
            matrix = rng.standard_normal((len(part), dimension)).astype(np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
            stored += store.put(part, matrix, model_id)
        return stored
    finally:
        storage.close()


def bench_recall(
    rows: int, samples: int, *, mode: str = "keyword", root: Path | None = None
) -> RecallLatency:
    import pi_hermes_memory

    with _workdir(root) as work:
        base = work / f"{mode}-{rows}"
        _write_config(base)
        config_path = base / "agent" / "hermes-memory-config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["autoRecallTimeoutMs"] = 60_000
        # the synthetic questions ("what did we decide last time about …") hold words the
        # synthetic rows lack, so at the default confidence (0.5, ADR 0070) most inject
        # nothing; this bench times the whole path, block included, so it injects what
        # search's own floor keeps (the false-recall benches judge the threshold)
        config["autoRecallMinScore"] = 0.2
        config_path.write_text(json.dumps(config), encoding="utf-8")
        db = base / "agent" / "pi-hermes-memory" / "sessions.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        build_search_store(db, rows)
        embedder: Any = None
        if mode == "hybrid-local":
            from pi_hermes_memory.adapters.providers.local_embedder import DIMENSION, LocalEmbedder

            embedder = LocalEmbedder()
            _store_random_vectors(db, embedder.model_id, DIMENSION)
        memory = pi_hermes_memory.open(
            agent_root=base / "agent",
            cwd=base,
            project=SEARCH_SESSION_PROJECT,
            environ={"HOME": str(base)},
            embedder=embedder,
        )
        try:
            session = memory.session("bench")
            session.before_turn(turn_messages(1, seed=99)[0])  # warm: caches, first import
            build_s = time.perf_counter() - started
            times: list[float] = []
            items: list[int] = []
            for message in turn_messages(samples):
                t0 = time.perf_counter()
                block = session.before_turn(message)
                times.append((time.perf_counter() - t0) * 1000)
                items.append(0 if block is None else block.count("\n- ["))
            skips = []
            for _ in range(20):
                for message in SKIPPED_MESSAGES:
                    t0 = time.perf_counter()
                    assert session.before_turn(message) is None
                    skips.append((time.perf_counter() - t0) * 1_000_000)
        finally:
            memory.close()
    return RecallLatency(
        mode=mode,
        rows=rows,
        samples=samples,
        p50_ms=percentile(times, 50),
        p95_ms=percentile(times, 95),
        mean_ms=statistics.fmean(times),
        max_ms=max(times),
        injected=sum(1 for n in items if n),
        mean_items=statistics.fmean(items),
        over_500ms=sum(1 for t in times if t > 500),
        skip_us=statistics.median(skips),
        build_s=build_s,
    )


def render(results: Sequence[RecallLatency]) -> list[str]:
    rows = [
        [
            r.mode,
            f"{r.rows:,}",
            r.samples,
            f"{r.p50_ms:.1f}",
            f"{r.p95_ms:.1f}",
            f"{r.mean_ms:.1f}",
            f"{r.max_ms:.1f}",
            f"{r.injected}/{r.samples}",
            f"{r.mean_items:.2f}",
            r.over_500ms,
            f"{r.skip_us:.0f}",
        ]
        for r in results
    ]
    header = [
        "mode",
        "rows",
        "samples",
        "p50 ms",
        "p95 ms",
        "mean ms",
        "max ms",
        "with block",
        "items",
        ">500 ms",
        "skip µs",
    ]
    return ["## Auto-recall added to a turn (`before_turn`)", "", _table(header, rows)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.recall")
    parser.add_argument("--quick", action="store_true", help="small stores, few samples")
    parser.add_argument("--sizes", default=None, help="comma-separated store sizes")
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--no-hybrid", action="store_true", help="keyword mode only")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else ([200, 1_000] if args.quick else [1_000, 10_000])
    )
    samples = args.samples or (15 if args.quick else 60)
    modes = ["keyword"]
    if not args.no_hybrid:
        from pi_hermes_memory.adapters.providers.local_embedder import is_available

        if is_available():
            modes.append("hybrid-local")
        else:
            print("hybrid-local left out: the `local` extra is not installed", file=sys.stderr)
    results = [bench_recall(n, samples, mode=m) for m in modes for n in sizes]
    print("\n".join(render(results)))
    if args.out is not None:
        data = {"machine": machine_context(), "recall": [attrs.asdict(r) for r in results]}
        args.out.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
