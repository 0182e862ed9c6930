"""The shared PostgreSQL store under load, side by side with SQLite (issue 16, ADR 0050).

    python -m tests.bench.postgres [--hosts 8] [--writes 250] [--rows 100000] [--samples 50]

1. Many hosts, one journal: `--hosts` processes, each a host with its own agent root and
   Markdown files, each adding `--writes` distinct entries through `Memory.add` at once
   against one database. Counted afterwards: acknowledged adds missing from the store (lost),
   texts held more than once (duplicated), and whether every host's MEMORY.md converges to
   the same bytes once each host has opened the store again.
2. At `--rows` rows (the search benchmark's corpus, `run.build_search_store`), on a SQLite and
   a PostgreSQL store built alike in the same run: `Memory.add` p50 and `memory_search` p50
   (FTS only, and hybrid with a 64-dimension bag-of-words embedder and every row embedded).

The server is $PI_HERMES_PG_DSN, else a throwaway cluster (tests/support/postgres.py) with
fsync on. No timing is asserted; the figures are printed (and written with --json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pi_hermes_memory

from tests.bench import run
from tests.support.postgres import DSN_ENV, create_database, running_cluster, with_dbname

_ENV = "BENCH_TEAM_DSN"
_SESSION_PROJECT = run.SEARCH_SESSION_PROJECT


def _config(root: Path, postgres: bool) -> None:
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "memoryCharLimit": run.BIG_LIMIT,
        "userCharLimit": run.BIG_LIMIT,
        "projectCharLimit": run.BIG_LIMIT,
    }
    if postgres:
        config["storage"] = {"backend": "postgres", "dsnEnv": _ENV}
    (root / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")


def _open(root: Path, dsn: str | None, **kw: Any) -> pi_hermes_memory.Memory:
    environ = {"HOME": str(root.parent)}
    if dsn is not None:
        environ[_ENV] = dsn
    return pi_hermes_memory.open(
        agent_root=root, environ=environ, cwd=root.parent, project=_SESSION_PROJECT, **kw
    )


# --- 1. many hosts ----------------------------------------------------------------------------


def worker(root: Path, texts_path: Path, out: Path) -> None:
    """One host: add its texts one by one; record the acknowledged ones."""
    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    acked: list[str] = []
    statuses: dict[str, int] = {}
    latencies: list[float] = []
    with _open(root, os.environ[_ENV]) as memory:
        for text in texts:
            started = time.perf_counter()
            result = memory.add(text, target="memory")
            latencies.append((time.perf_counter() - started) * 1000)
            statuses[result.status] = statuses.get(result.status, 0) + 1
            if result.status == "added":
                acked.append(text)
    out.write_text(json.dumps({"acked": acked, "statuses": statuses, "ms": latencies}))


def bench_hosts(dsn: str, hosts: int, writes: int, work: Path) -> dict[str, Any]:
    texts = run.TextGenerator(7)
    roots = [work / f"host-{h}" / "agent" for h in range(hosts)]
    procs = []
    started = time.perf_counter()
    for h, root in enumerate(roots):
        _config(root, postgres=True)
        mine = work / f"texts-{h}.json"
        mine.write_text(json.dumps([next(texts) for _ in range(writes)]), encoding="utf-8")
        argv = [sys.executable, "-m", "tests.bench.postgres", "--worker", str(root), str(mine)]
        procs.append(
            subprocess.Popen([*argv, str(work / f"out-{h}.json")], env={**os.environ, _ENV: dsn})
        )
    failed = [p.args for p in procs if p.wait() != 0]
    elapsed = time.perf_counter() - started
    if failed:
        raise RuntimeError(f"{len(failed)} host processes failed")
    outs = [json.loads((work / f"out-{h}.json").read_text()) for h in range(hosts)]
    acked = [t for o in outs for t in o["acked"]]
    replicas = []
    for root in roots:  # each host opens again: its replica catches up with the journal
        with _open(root, dsn) as memory:
            stored = [e.text for e in memory.entries("memory")]
        replicas.append((root / "pi-hermes-memory" / "MEMORY.md").read_bytes())
    held = set(stored)
    latencies = [ms for o in outs for ms in o["ms"]]
    return {
        "hosts": hosts,
        "writes_per_host": writes,
        "acknowledged": len(acked),
        "statuses": _merged(o["statuses"] for o in outs),
        "lost": sum(1 for t in acked if t not in held),
        "duplicated": len(stored) - len(held),
        "entries": len(stored),
        "replicas_converged": all(r == replicas[0] for r in replicas),
        "seconds": round(elapsed, 2),
        "adds_per_s": round(len(latencies) / elapsed, 1),
        "add_p50_ms": round(run.percentile(latencies, 50), 2),
        "add_p95_ms": round(run.percentile(latencies, 95), 2),
    }


def _merged(counts: Iterator[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


# --- 2. side by side at N rows ----------------------------------------------------------------


def _embed_all(store: Any, embedder: Any) -> None:
    """A vector for every row, written through the store's vector store."""
    from pi_hermes_memory.ports.vectors import VectorScope

    everything = VectorScope.everything()
    while True:
        rows = store.missing(everything, embedder.model_id, limit=5_000)
        if not rows:
            return
        store.put(rows, embedder.embed([t for _, t in rows], kind="passage"), embedder.model_id)


def bench_backend(
    name: str, rows: int, samples: int, work: Path, dsn: str | None
) -> dict[str, Any]:
    from tests.support.embedders import BagEmbedder

    root = work / name / "agent"
    _config(root, postgres=dsn is not None)
    with _open(root, dsn) as memory:  # creates the store
        config = memory.config
    embedder = BagEmbedder()
    started = time.perf_counter()
    storage: Any
    if dsn is None:
        from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
        from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore

        storage = SqliteStorage(config.db_path)
        vectors: Any = SqliteVectorStore(storage)
    else:
        from pi_hermes_memory.adapters.postgres.storage import PgStorage
        from pi_hermes_memory.adapters.postgres.vectors import PgVectorStore

        storage = PgStorage(dsn)
        vectors = PgVectorStore(storage)
    try:
        run.build_search_store(None, rows, storage=storage)
        build_s = time.perf_counter() - started
        _embed_all(vectors, embedder)
        if dsn is not None:  # as `migrate --to postgres` (and autovacuum, a while later)
            storage.analyze()
    finally:
        storage.close()
    figures: dict[str, Any] = {"backend": name, "rows": rows, "build_s": round(build_s, 1)}
    queries = [q for kind in run.SEARCH_KINDS for q in run.search_queries(kind, samples)]
    with _open(root, dsn, embedder=embedder) as memory:
        figures["hybrid_search_p50_ms"] = _search_p50(memory, queries)
    with _open(root, dsn) as memory:
        figures["fts_search_p50_ms"] = _search_p50(memory, queries)
        texts = run.TextGenerator(99)
        latencies = []
        for i in range(samples + 5):
            started = time.perf_counter()
            result = memory.add(next(texts), target="memory")
            if i >= 5 and result.status == "added":
                latencies.append((time.perf_counter() - started) * 1000)
        figures["add_p50_ms"] = round(run.percentile(latencies, 50), 2)
    return figures


def _search_p50(memory: pi_hermes_memory.Memory, queries: Sequence[str]) -> float:
    for query in queries[:10]:
        memory.call_tool("memory_search", {"query": query})  # warm up
    latencies = []
    for query in queries:
        started = time.perf_counter()
        result = memory.call_tool("memory_search", {"query": query})
        latencies.append((time.perf_counter() - started) * 1000)
        assert result["status"] == "ok", result
    return round(statistics.median(latencies), 2)


@contextmanager
def _server() -> Iterator[str]:
    configured = os.environ.get(DSN_ENV)
    if configured:
        yield configured
        return
    with running_cluster(durable=True) as cluster:
        yield cluster.dsn()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--writes", type=int, default=250)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    report: dict[str, Any] = {"machine": run.machine_context()}
    with _server() as admin, tempfile.TemporaryDirectory(prefix="phm-bench-pg-") as tmp:
        work = Path(tmp)
        stamp = f"{os.getpid()}_{int(time.time())}"
        create_database(admin, f"bench_hosts_{stamp}")
        report["hosts"] = hosts = bench_hosts(
            with_dbname(admin, f"bench_hosts_{stamp}"), args.hosts, args.writes, work
        )
        print(json.dumps(hosts), flush=True)
        create_database(admin, f"bench_rows_{stamp}")
        pg_dsn = with_dbname(admin, f"bench_rows_{stamp}")
        sqlite = bench_backend("sqlite", args.rows, args.samples, work, None)
        print(json.dumps(sqlite), flush=True)
        postgres = bench_backend("postgres", args.rows, args.samples, work, pg_dsn)
        print(json.dumps(postgres), flush=True)
    report["side_by_side"] = [sqlite, postgres]
    for key in ("add_p50_ms", "fts_search_p50_ms", "hybrid_search_p50_ms"):
        ratio = postgres[key] / sqlite[key] if sqlite[key] else float("nan")
        print(f"{key}: sqlite {sqlite[key]} ms, postgres {postgres[key]} ms, ratio {ratio:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    ok = hosts["lost"] == 0 and hosts["duplicated"] == 0 and hosts["replicas_converged"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
