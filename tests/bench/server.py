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
import contextlib
import itertools
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
from pi_hermes_memory.adapters.server.readers import default_readers, usable_cpus

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


def _one_store_search(client: httpx.Client, c: int, i: int) -> None:
    """`_project_search`'s request, every client on project p0."""
    _project_search(client, 0, i)


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


# -- concurrent reads (issue 29, ADR 0083) ---------------------------------------------------


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) of process `pid` from /proc (0.0 without /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of the server process `pid` and of its live children (the readers)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return _cpu(pid), sum(_cpu(int(c)) for c in children)


#: client processes a phase's clients are spread over: 16 httpx clients in one process are
#: bound by its GIL (1.6 ms of CPU each per request), which measured the load generator, not
#: the server
CLIENT_PROCESSES = 4


def _client_process(
    url: str,
    first: int,
    clients: int,
    requests: int,
    call: Callable[[httpx.Client, int, int], None],
    go: Any,
    out: Any,
) -> None:
    """Clients `first`.. of one phase in a client process: connect, wait for `go`, run."""
    offset = first
    conns = [httpx.Client(base_url=url, timeout=120) for _ in range(clients)]
    for c in conns:
        c.get("/health")
    out.put("ready")
    go.wait()
    cpu = time.process_time()
    times: list[float] = []
    lock = threading.Lock()

    def work(k: int) -> None:
        mine = []
        for i in range(requests):
            t = time.perf_counter()
            call(conns[k], offset + k, i)
            mine.append((time.perf_counter() - t) * 1000)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in conns:
        c.close()
    out.put((times, time.process_time() - cpu))


def _phase(
    url: str, pid: int, clients: int, requests: int, call: Callable[[httpx.Client, int, int], None]
) -> dict[str, float]:
    """One measured phase, its clients spread over up to CLIENT_PROCESSES processes:
    requests/s, p50, and the CPU per request of the server, its readers and the clients."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    go, out = context.Event(), context.Queue()
    procs = min(clients, CLIENT_PROCESSES)
    shares = [clients // procs + (1 if k < clients % procs else 0) for k in range(procs)]
    starts = [sum(shares[:k]) for k in range(procs)]
    children = [
        context.Process(
            target=_client_process, args=(url, starts[k], shares[k], requests, call, go, out)
        )
        for k in range(procs)
    ]
    for child in children:
        child.start()
    for _ in children:  # not measured: the client processes import httpx and connect
        assert out.get(timeout=120) == "ready"
    main, readers = _tree_cpu(pid)
    start = time.perf_counter()
    go.set()
    results = [out.get(timeout=600) for _ in children]
    seconds = time.perf_counter() - start
    main_after, readers_after = _tree_cpu(pid)
    for child in children:
        child.join()
    times = [t for r in results for t in r[0]]
    n = len(times)
    return {
        **_summary(times, seconds),
        "server_cpu_ms_per_req": round((main_after - main) * 1000 / n, 3),
        "readers_cpu_ms_per_req": round((readers_after - readers) * 1000 / n, 3),
        "client_cpu_ms_per_req": round(sum(r[1] for r in results) * 1000 / n, 3),
    }


def _seeded(tmp: Path, seed: Sequence[str], readers: int, stack: contextlib.ExitStack) -> Any:
    """A server with `readers` reader processes on its own store, seeded and warm."""
    _roomy(tmp / "agent")
    srv = stack.enter_context(running(tmp, "--readers", str(readers)))
    with httpx.Client(base_url=srv.url, timeout=120) as c:
        for text in seed:
            assert c.post("/api/memory/store", json={"content": text, "force": True}).is_success
        for p in range(PROJECTS):
            for i in range(max(1, len(seed) // PROJECTS)):
                _project_store(c, p, i)
    _concurrent(srv.url, 16, 10, _project_search)  # every reader opens every store
    return srv


#: the servers compared, by reader processes (0: every call on the store's writer, one at a
#: time, as before ADR 0083)
READERS = (0, 1, 2)
_KINDS = (
    "req_per_s",
    "p50_ms",
    "server_cpu_ms_per_req",
    "readers_cpu_ms_per_req",
    "client_cpu_ms_per_req",
)


def concurrency(
    clients: int = 16, requests: int = 40, seed_entries: int = 200, repeats: int = 3
) -> dict[str, Any]:
    """REST search throughput of servers with 0, 1 and 2 reader processes, all running at
    once on stores seeded alike and measured in turn, round after round (the machine's load
    falls on each alike): one client, `clients` clients on one store, and `clients` clients
    spread over PROJECTS stores (the same search); medians of `repeats` rounds."""
    seed = _seed(seed_entries)
    phases: dict[str, tuple[int, int, Callable[[httpx.Client, int, int], None]]] = {
        "one": (1, requests * 4, _one_store_search),
        "many": (clients, requests, _one_store_search),
        "spread": (clients, requests, _project_search),
    }
    rounds: dict[int, dict[str, list[dict[str, float]]]] = {
        r: {name: [] for name in phases} for r in READERS
    }
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        servers = {r: _seeded(Path(tmp) / f"r{r}", seed, r, stack) for r in READERS}
        for _ in range(repeats):
            for name, (n, per_client, call) in phases.items():
                for r, srv in servers.items():
                    rounds[r][name].append(_phase(srv.url, srv.process.pid, n, per_client, call))
    figures: dict[str, Any] = {"clients": clients, "repeats": repeats}
    for r in READERS:
        mode: dict[str, Any] = {
            name: {k: statistics.median(x[k] for x in values) for k in _KINDS}
            for name, values in rounds[r].items()
        }
        mode["many_over_one"] = round(mode["many"]["req_per_s"] / mode["one"]["req_per_s"], 2)
        mode["spread_over_one_store"] = round(
            mode["spread"]["req_per_s"] / mode["many"]["req_per_s"], 2
        )
        figures[f"readers_{r}"] = mode
    base = figures["readers_0"]["many"]["req_per_s"]
    for r in READERS:
        mode = figures[f"readers_{r}"]
        mode["many_over_readers_0"] = round(mode["many"]["req_per_s"] / base, 2)
    return figures


def render_concurrency(figures: dict[str, Any]) -> list[str]:
    clients = figures["clients"]
    lines = [
        "",
        f"### REST search throughput, 1 vs {clients} clients (issue 29, ADR 0083)",
        "",
        f"Servers side by side, measured in turn; medians of {figures['repeats']} rounds. "
        "Readers 0 is the path before ADR 0083 (every call on the store's writer). "
        f"This machine's default (ADR 0117, {usable_cpus()} usable CPUs): "
        f"{default_readers()} reader(s), the row marked **default**.",
        "",
        f"| readers | 1 client req/s | {clients} clients req/s | {clients} / 1 (target ≥ 2) | "
        f"vs readers 0 | over {PROJECTS} stores req/s | {PROJECTS} stores / 1 (target ≥ 1) | "
        f"server CPU ms/req at {clients}: main + readers | client CPU ms/req |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in READERS:
        m = figures[f"readers_{r}"]
        name = f"**{r} (default)**" if r == default_readers() else str(r)
        lines.append(
            f"| {name} | {m['one']['req_per_s']:.0f} | {m['many']['req_per_s']:.0f} | "
            f"{m['many_over_one']:.2f} | {m['many_over_readers_0']:.2f} | "
            f"{m['spread']['req_per_s']:.0f} | {m['spread_over_one_store']:.2f} | "
            f"{m['many']['server_cpu_ms_per_req']:.2f} + "
            f"{m['many']['readers_cpu_ms_per_req']:.2f} | "
            f"{m['many']['client_cpu_ms_per_req']:.2f} |"
        )
    default = default_readers()
    if f"readers_{default}" in figures:
        m = figures[f"readers_{default}"]
        met = m["many_over_one"] >= 2 and m["spread_over_one_store"] >= 1
        lines += [
            "",
            f"The default ({default} reader(s)): {clients} clients {m['many_over_one']:.2f}x one "
            f"(target ≥ 2), {PROJECTS} stores {m['spread_over_one_store']:.2f}x one store "
            f"(target ≥ 1): {'met' if met else 'not met'} in this run.",
        ]
    return lines


# -- what a reader costs one client (ADR 0117) ------------------------------------------------


def _rss(pid: int) -> int:
    """Resident bytes of process `pid` from /proc (0 without /proc or once it exited)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _tree_rss(pid: int) -> tuple[int, int]:
    """Resident bytes of the server `pid` and of all its live children (readers and
    multiprocessing's resource tracker, if any)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return _rss(pid), sum(_rss(int(c)) for c in children)


#: reader settings compared by `first_reads` ("default": no --readers at all)
FIRST_READ_MODES = ("0", "1", "default")


def first_reads(seed_entries: int = 200, searches: int = 100, repeats: int = 3) -> dict[str, Any]:
    """What one client meets: a fresh server on an existing store (seeded beforehand, then
    stopped), the wall time of each of its first 5 searches, sent one after the other as soon
    as /health answers, then `searches` more and the resident size of the server and its
    children. Servers for the modes are started in turn, `repeats` rounds; medians."""
    seed = _seed(seed_entries)
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in FIRST_READ_MODES}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "seeded"
        _roomy(base / "agent")
        with running(base, "--readers", "0") as srv, httpx.Client(base_url=srv.url) as c:
            for text in seed:
                assert c.post("/api/memory/store", json={"content": text, "force": True}).is_success
        for k in range(repeats):
            for mode in FIRST_READ_MODES:
                copy = Path(tmp) / f"{mode}-{k}"
                shutil.copytree(base, copy, ignore=shutil.ignore_patterns("server.log"))
                args = () if mode == "default" else ("--readers", mode)
                with running(copy, *args) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
                    firsts = []
                    for i in range(5):
                        t = time.perf_counter()
                        _search(c, 0, i)
                        firsts.append((time.perf_counter() - t) * 1000)
                    for i in range(searches):
                        _search(c, 0, i)
                    main_rss, children_rss = _tree_rss(srv.process.pid)
                    rows[mode].append(
                        {
                            "first_ms": firsts,
                            "server_rss": main_rss,
                            "children_rss": children_rss,
                        }
                    )
    out: dict[str, Any] = {"seed_entries": seed_entries, "searches": searches, "repeats": repeats}
    for mode, values in rows.items():
        out[mode] = {
            "first_ms": [
                round(statistics.median(v["first_ms"][i] for v in values), 1) for i in range(5)
            ],
            "server_mib": round(statistics.median(v["server_rss"] for v in values) / 2**20, 1),
            "children_mib": round(statistics.median(v["children_rss"] for v in values) / 2**20, 1),
        }
    return out


def render_first_reads(figures: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "### One client: the first searches after `serve` starts, and resident size",
        "",
        f"Fresh server on a stopped store of {figures['seed_entries']} entries; wall ms of "
        f"searches 1-5; resident MiB after {figures['searches']} more; medians of "
        f"{figures['repeats']} rounds.",
        "",
        "| readers | search 1 | 2 | 3 | 4 | 5 | server MiB | children MiB | total MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in FIRST_READ_MODES:
        m = figures[mode]
        name = f"default ({default_readers()})" if mode == "default" else mode
        lines.append(
            f"| {name} | "
            + " | ".join(f"{x:.0f}" for x in m["first_ms"])
            + f" | {m['server_mib']:.1f} | {m['children_mib']:.1f} | "
            f"{m['server_mib'] + m['children_mib']:.1f} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.server")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=40, help="per client and kind")
    parser.add_argument("--mcp-calls", type=int, default=50)
    parser.add_argument("--seed-entries", type=int, default=200)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--reads-only", action="store_true", help="only the 1 vs many clients search figures"
    )
    parser.add_argument(
        "--first-read",
        action="store_true",
        help="only one client's first searches after start and the resident size, by readers",
    )
    args = parser.parse_args(argv)
    if args.first_read:
        first = first_reads(args.seed_entries)
        print("\n".join(render_first_reads(first)))
        print(json.dumps(first, indent=2))
        return 0
    if args.reads_only:
        reads = concurrency(args.clients, args.requests, args.seed_entries)
        print("\n".join(render_concurrency(reads)))
        print(json.dumps(reads, indent=2))
        return 0
    figures = run(args.clients, args.requests, args.mcp_calls, args.seed_entries)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
