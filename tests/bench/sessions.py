"""Session history figures (issue 5): index throughput, re-index of an unchanged tree, append
growth of one file, session_search latency of both variants, database size; and (issue 17,
ADR 0041) legacy session_search p50/p95 for rare words, common words and CJK terms at each
size of `--curve` and at the full size, with the ranking before ADR 0041 (`before`: bm25 over
every match) and after it (`after`) timed side by side on the same index, and whether both
return the same results.

    python -m tests.bench.sessions [--sessions 2000 --messages 1000000] [--tree DIR] [--out F]
        [--curve 10000,100000]

Writes a synthetic Pi sessions tree (`tests.bench.session_tree`) unless `--tree` names one
(an agent root holding `sessions/`; left unchanged: no append step then), indexes it into a
fresh database and prints JSON. Each curve size below `--messages` gets its own tree and index
(sessions scaled alike); the full size reuses the index built for the other figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog
from pi_hermes_memory.adapters.files.session_files import PiSessionFiles
from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex
from pi_hermes_memory.adapters.system import SystemClock
from pi_hermes_memory.domain.history.request import AnchorRequest
from pi_hermes_memory.history.indexer import WORKER_MIN_BYTES, SessionIndexer
from pi_hermes_memory.history.search import SessionSearchService

from tests.bench.session_tree import (
    CJK_TERMS,
    COMMON_TERMS,
    PROJECTS,
    RARE_TERMS,
    write_session_tree,
)
from tests.support.session_reference import ExhaustiveSessionIndex


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _timed(calls: Sequence[Any], repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        for call in calls:
            start = time.perf_counter()
            call()
            samples.append((time.perf_counter() - start) * 1000)
    return {
        "queries": len(samples),
        "p50_ms": round(percentile(samples, 50), 2),
        "p95_ms": round(percentile(samples, 95), 2),
    }


def search_curve_point(db: Path, *, repeat: int) -> dict[str, Any]:
    """Legacy session_search on the index at `db`, before and after ADR 0041, interleaved
    (each query by one then the other, after one warm-up pass of both)."""
    quiet = structlog.wrap_logger(logging.getLogger("bench.sessions"))
    indexes = {"before": ExhaustiveSessionIndex(db), "after": SqliteSessionIndex(db)}
    services = {
        name: SessionSearchService(index=index, current_project="api-gateway", logger=quiet)
        for name, index in indexes.items()
    }
    counts = indexes["after"].counts()
    cases = {"rare": RARE_TERMS, "common": COMMON_TERMS, "cjk": CJK_TERMS}
    point: dict[str, Any] = {"messages_indexed": counts.messages, "same_results": {}}
    try:
        for case, terms in cases.items():
            results = {name: [svc.search(t) for t in terms] for name, svc in services.items()}
            point["same_results"][case] = results["before"] == results["after"]
            samples: dict[str, list[float]] = {name: [] for name in services}
            for _ in range(repeat):
                for term in terms:
                    for name, svc in services.items():
                        start = time.perf_counter()
                        svc.search(term)
                        samples[name].append((time.perf_counter() - start) * 1000)
            for name, values in samples.items():
                point.setdefault(name, {})[case] = {
                    "queries": len(values),
                    "p50_ms": round(percentile(values, 50), 2),
                    "p95_ms": round(percentile(values, 95), 2),
                }
    finally:
        for index in indexes.values():
            index.close()
    return point


def bench(
    agent_root: Path,
    db: Path,
    *,
    repeat: int = 5,
    grow: bool = True,
    parse_in_worker: bool | None = None,
) -> dict[str, Any]:
    """The figures for the tree under `agent_root`; `grow`: append 40 lines to its largest
    file and time the incremental run (only on a tree that may be changed);
    `parse_in_worker`: as `SessionIndexer`'s (None: a helper process on 2+ cores)."""
    quiet = structlog.wrap_logger(logging.getLogger("bench.sessions"))
    sessions = agent_root / "sessions"
    jsonl = sum(p.stat().st_size for p in sessions.rglob("*.jsonl"))
    index = SqliteSessionIndex(db)
    indexer = SessionIndexer(
        source=PiSessionFiles(sessions),
        index=index,
        clock=SystemClock(),
        parse_in_worker=parse_in_worker,
        logger=quiet,
    )
    full = indexer.index_all()
    unchanged = indexer.index_all()
    grown = max(sessions.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    if grow:
        tail = grown.read_bytes().splitlines(keepends=True)[-40:]
        with open(grown, "ab") as f:
            f.writelines(tail)
    appended = indexer.index_all()
    start = time.perf_counter()
    indexer.index_file(grown)
    live_ms = (time.perf_counter() - start) * 1000

    search = SessionSearchService(index=index, current_project="api-gateway", logger=quiet)
    legacy = {
        "rare": _timed([lambda t=t: search.search(t) for t in RARE_TERMS], repeat),
        "common": _timed([lambda t=t: search.search(t) for t in COMMON_TERMS], repeat),
        "two_words": _timed(
            [
                lambda a=a, b=b: search.search(f"{a} {b}")
                for a, b in zip(COMMON_TERMS, RARE_TERMS, strict=False)
            ],
            repeat,
        ),
        "cjk": _timed([lambda t=t: search.search(t) for t in CJK_TERMS], repeat),
    }
    anchors = {
        "all_rare": _timed(
            [lambda t=t: search.anchors(AnchorRequest(all_terms=(t,))) for t in RARE_TERMS],
            repeat,
        ),
        "all_any_cwd": _timed(
            [
                lambda t=t, cwd=cwd: search.anchors(
                    AnchorRequest(cwd=cwd, all_terms=(t,), any_terms=("error", "test"))
                )
                for t, cwd in zip(RARE_TERMS, PROJECTS, strict=False)
            ],
            repeat,
        ),
        "common": _timed(
            [lambda t=t: search.anchors(AnchorRequest(all_terms=(t,))) for t in COMMON_TERMS],
            repeat,
        ),
    }
    counts = index.counts()
    index.close()
    cores = os.cpu_count() or 1
    helper = parse_in_worker is not False and cores >= 2 and jsonl >= WORKER_MIN_BYTES
    db_bytes = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return {
        "jsonl_mb": round(jsonl / 1e6, 1),
        "files": counts.files,
        "sessions": counts.sessions,
        "messages_indexed": counts.messages,
        "full_index": {
            "parse": "helper process" if helper else "this process",
            "seconds": round(full.seconds, 2),
            "mb_per_second": round(jsonl / 1e6 / full.seconds, 1),
            "skipped": dict(full.skipped),
        },
        "reindex_unchanged_seconds": round(unchanged.seconds, 3),
        "append_one_file": {
            "seconds": round(appended.seconds, 3),
            "messages": appended.messages,
        },
        "live_unchanged_ms": round(live_ms, 2),
        "legacy": legacy,
        "anchors": anchors,
        "db_mb": round(db_bytes / 1e6, 1),
        "db_to_jsonl": round(db_bytes / jsonl, 3),
    }


def index_tree(agent_root: Path, db: Path, *, parse_in_worker: bool | None) -> None:
    """Index the sessions tree under `agent_root` into a fresh database at `db`."""
    index = SqliteSessionIndex(db)
    try:
        SessionIndexer(
            source=PiSessionFiles(agent_root / "sessions"),
            index=index,
            clock=SystemClock(),
            parse_in_worker=parse_in_worker,
            logger=structlog.wrap_logger(logging.getLogger("bench.sessions")),
        ).index_all()
    finally:
        index.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.sessions", description=__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tree", type=Path, help="an existing agent root (with sessions/)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--in-process", action="store_true", help="parse in this process (no helper process)"
    )
    parser.add_argument(
        "--curve",
        default="10000,100000",
        help="message counts (comma-separated) of the session_search curve below --messages",
    )
    args = parser.parse_args(argv)
    sizes = sorted({int(n) for n in args.curve.split(",") if n.strip()})
    work = Path(tempfile.mkdtemp(prefix="bench-sessions-"))
    try:
        curve: dict[str, Any] = {}
        for size in (n for n in sizes if 0 < n < args.messages and args.tree is None):
            point_root = work / f"curve-{size}"
            write_session_tree(
                point_root,
                sessions=max(6, args.sessions * size // args.messages),
                messages=size,
                seed=args.seed,
                workers=max(1, min(4, os.cpu_count() or 1)),
            )
            db = work / f"curve-{size}.db"
            index_tree(point_root, db, parse_in_worker=False if args.in_process else None)
            curve[str(size)] = search_curve_point(db, repeat=args.repeat)
            shutil.rmtree(point_root, ignore_errors=True)
        root = args.tree
        if root is None:
            root = work / "agent"
            write_session_tree(
                root,
                sessions=args.sessions,
                messages=args.messages,
                seed=args.seed,
                workers=max(1, min(4, os.cpu_count() or 1)),
            )
        figures = bench(
            root,
            work / "sessions.db",
            repeat=args.repeat,
            grow=args.tree is None,
            parse_in_worker=False if args.in_process else None,
        )
        curve["tree" if args.tree is not None else str(args.messages)] = search_curve_point(
            work / "sessions.db", repeat=args.repeat
        )
        figures["session_search_curve"] = curve
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(figures, indent=2, ensure_ascii=False)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
