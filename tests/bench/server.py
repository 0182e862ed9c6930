"""Server benchmark (issue 14 §4, ADR 0044): REST search and store p50/p99 and requests/s
with concurrent clients, MCP tools/call p50, and the server's overhead over a direct library
call.

    python -m tests.bench.server [--clients 16] [--requests 40] [--mcp-calls 50] [--json PATH]

A real `pi-hermes-memory serve` process on 127.0.0.1, in a throwaway agent root seeded with
`--seed` entries. Each of `--clients` threads sends `--requests` stores, then as many searches.
The ratio compares one client's sequential REST p50 with the same call made directly on an
opened `Memory` in this process (another throwaway store with the same seed).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.support.memory_server import running


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(ms: Sequence[float], seconds: float) -> dict[str, float]:
    return {
        "p50_ms": round(_pct(ms, 0.5), 2),
        "p99_ms": round(_pct(ms, 0.99), 2),
        "req_per_s": round(len(ms) / seconds, 1),
        "n": len(ms),
    }


def _concurrent(
    url: str, clients: int, requests: int, call: Callable[[httpx.Client, int, int], None]
) -> dict[str, float]:
    times: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(c: int) -> None:
        mine = []
        try:
            with httpx.Client(base_url=url, timeout=120) as client:
                for i in range(requests):
                    t = time.perf_counter()
                    call(client, c, i)
                    mine.append((time.perf_counter() - t) * 1000)
        except BaseException as exc:  # reported below, not lost with the thread
            errors.append(exc)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=work, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return _summary(times, time.perf_counter() - start)


#: makes every stored text unique across the phases
_SEQ = itertools.count()


def _store(client: httpx.Client, c: int, i: int) -> None:
    n = next(_SEQ)
    r = client.post(
        "/api/memory/store",
        json={"content": f"bench client {c} fact {n} about topic{i % 7} qz{n}", "force": True},
    )
    assert r.status_code == 201, r.text


def _search(client: httpx.Client, c: int, i: int) -> None:
    r = client.post("/api/memory/search", json={"query": f"topic{i % 7} fact"})
    assert r.status_code == 200, r.text


#: the "different stores" phase: client c works in project p<c % PROJECTS> (one open store
#: each, within the server's cache of 8)
PROJECTS = 8


def _project_store(client: httpx.Client, c: int, i: int) -> None:
    n = next(_SEQ)
    r = client.post(
        "/api/memory/store",
        json={"content": f"project rule {n} for topic{i % 7} qp{n}", "target": "project"},
        headers={"X-Project": f"p{c % PROJECTS}"},
    )
    assert r.status_code == 201, r.text


def _project_search(client: httpx.Client, c: int, i: int) -> None:
    r = client.post(
        "/api/memory/search",
        json={"query": f"topic{i % 7} rule"},
        headers={"X-Project": f"p{c % PROJECTS}"},
    )
    assert r.status_code == 200, r.text


def _seed(n: int) -> list[str]:
    return [f"seed entry {i} on subject{i % 13} with detail d{i}" for i in range(n)]


def _roomy(agent: Path) -> None:
    """A store whose capacity the benchmark's writes do not reach."""
    agent.mkdir(parents=True)
    config = {"memoryCharLimit": 100_000_000}
    (agent / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")


def _direct(seed: Sequence[str], calls: int) -> dict[str, float]:
    import pi_hermes_memory

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "w").mkdir()
        _roomy(root / "agent")
        with pi_hermes_memory.open(agent_root=root / "agent", cwd=root / "w") as memory:
            for text in seed:
                memory.add(text, force=True)
            search, store = [], []
            for i in range(calls):
                t = time.perf_counter()
                memory.call_tool("memory_search", {"query": f"topic{i % 7} fact"})
                search.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                memory.add(f"direct fact {i} about topic{i % 7} qd{i}", force=True)
                store.append((time.perf_counter() - t) * 1000)
    return {
        "search_p50_ms": round(statistics.median(search), 3),
        "store_p50_ms": round(statistics.median(store), 3),
    }


def _mcp(url: str, calls: int) -> dict[str, float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    times: list[float] = []

    async def main() -> None:
        async with (
            streamable_http_client(f"{url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for i in range(calls):
                t = time.perf_counter()
                result = await session.call_tool("memory_search", {"query": f"topic{i % 7}"})
                times.append((time.perf_counter() - t) * 1000)
                assert not result.is_error

    anyio.run(main)
    return {"tools_call_p50_ms": round(statistics.median(times), 2), "n": len(times)}


def run(clients: int, requests: int, mcp_calls: int, seed_entries: int) -> dict[str, Any]:
    seed = _seed(seed_entries)
    with tempfile.TemporaryDirectory() as tmp:
        _roomy(Path(tmp) / "agent")
        figures = _served(Path(tmp), seed, clients, requests, mcp_calls)
    direct = _direct(seed, requests)
    one = figures["one_client"]
    return {
        **figures,
        "direct": direct,
        "overhead_ratio": {
            "search": round(one["search"]["p50_ms"] / max(direct["search_p50_ms"], 1e-6), 2),
            "store": round(one["store"]["p50_ms"] / max(direct["store_p50_ms"], 1e-6), 2),
        },
    }


def _served(
    tmp: Path, seed: Sequence[str], clients: int, requests: int, mcp_calls: int
) -> dict[str, Any]:
    with running(tmp) as srv:
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            c.post("/api/memory/search", json={"query": "warm"})  # opens the store
            for text in seed:
                assert c.post("/api/memory/store", json={"content": text, "force": True}).is_success
        single_search = _concurrent(srv.url, 1, requests, _search)
        single_store = _concurrent(srv.url, 1, requests, _store)
        store = _concurrent(srv.url, clients, requests, _store)
        search = _concurrent(srv.url, clients, requests, _search)
        mcp = _mcp(srv.url, mcp_calls)
        spread_store = _concurrent(srv.url, clients, requests, _project_store)
        spread_search = _concurrent(srv.url, clients, requests, _project_search)
    return {
        "clients": clients,
        "rest_store": store,
        "rest_search": search,
        f"across_{PROJECTS}_projects": {"store": spread_store, "search": spread_search},
        "one_client": {"store": single_store, "search": single_search},
        "mcp": mcp,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.server")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=40, help="per client and kind")
    parser.add_argument("--mcp-calls", type=int, default=50)
    parser.add_argument("--seed-entries", type=int, default=200)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    figures = run(args.clients, args.requests, args.mcp_calls, args.seed_entries)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
