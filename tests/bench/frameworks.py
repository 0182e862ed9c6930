"""Framework front ends' overhead over a direct library call (issue 31 §5, ADR 0095, 0097,
0103).

    python -m tests.bench.frameworks [--quick]

For each front end, two stores in fresh temporary agent roots are filled with the same N
memories, one through the front end and one through `pi_hermes_memory.Memory` directly (the
call a user would make without it, in the same scope); then K writes and K searches of the
same texts and queries are timed on each, after one warm-up call. Reported: p50 wall and p50
CPU (process time) per call, and the ratio front end / direct of the p50s (both sides in one
run, on one machine, so the ratio is what to read).

- mem0: `add(text, user_id=, infer=False)` vs `Memory.add(text, target="user",
  scope="user:<id>")`; `search(query, filters={"user_id"})` vs `Memory.search(query,
  target="user")`.
- LangGraph: `store.put(ns, key, {"text": text})` vs `Memory.add(text, target="memory",
  scope="custom:langgraph")`; `store.search(ns, query=query)` vs `Memory.search(query,
  target="memory")`. A put finds its key in the store's index, trusted while the journal's
  revision is its own (ADR 0103); `bench_langgraph_put` times a put with 10 and 10,000 items
  in one namespace both ways: by that index, and by reading every item first (the old put).
- OpenAI Agents SDK (ADR 0098): the `memory` function tool's `on_invoke_tool` (JSON arguments
  in, `Memory.call_tool` in a worker thread, JSON out) vs `Memory.add(text, target="memory")`;
  the `memory_search` tool vs `Memory.search(query)`. One event loop runs every tool call.
- Claude's memory tool (ADR 0097): `tool.call({"command": "create", "path": "/memories/f<i>.md",
  "file_text": text})` vs `Memory.add(text, target="memory", scope="custom:claude-memory")`;
  the tool has no search command (its files are found through `memory_search`), so its search
  is `Memory.search(query, target="memory")` over the tool's store (entries are JSON lines) vs
  the same over the direct store. A create first reads the scope's files (a path must be new),
  under the scope's flock (ADR 0103).

Every front end goes through one skeleton, `_versus` (front end vs direct, same run).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pi_hermes_memory

QUICK = {"entries": 20, "calls": 5, "put_sizes": (10, 200)}
FULL = {"entries": 300, "calls": 30, "put_sizes": (10, 10_000)}
WORDS = [
    "deploy",
    "release",
    "kettle",
    "walrus",
    "python",
    "tea",
    "coffee",
    "server",
    "cache",
    "index",
    "journal",
    "scope",
    "graph",
    "thread",
    "vector",
    "search",
    "memory",
    "profile",
    "garden",
    "river",
    "mountain",
    "piano",
    "violin",
    "chess",
]


def _text(i: int) -> str:
    w = [WORDS[(i * k + k) % len(WORDS)] for k in (1, 3, 7, 11)]
    return f"Fact {i}: the {w[0]} uses {w[1]} near the {w[2]} and {w[3]}"


def _queries(calls: int) -> list[str]:
    return [f"{WORDS[i % len(WORDS)]} {WORDS[(i * 5 + 2) % len(WORDS)]}" for i in range(calls)]


def _timed(call: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def _ok(result: Any) -> Any:
    status = getattr(result, "status", None)
    assert status is None or status.value in ("added", "ok", "no_results"), result
    return result


def _measure(
    write: Callable[[int], Any], search: Callable[[str], Any], n: int, calls: int
) -> dict[str, float]:
    for i in range(n):
        write(i)
    write(n)  # warm-up
    search("warm up")
    writes = [_timed(lambda i=i: write(n + 1 + i)) for i in range(calls)]
    searches = [_timed(lambda q=q: search(q)) for q in _queries(calls)]
    return {
        "write_ms": statistics.median(w for w, _ in writes),
        "write_cpu_ms": statistics.median(c for _, c in writes),
        "search_ms": statistics.median(w for w, _ in searches),
        "search_cpu_ms": statistics.median(c for _, c in searches),
    }


def _kwargs(root: Path) -> dict[str, Any]:
    return {"agent_root": root / "agent", "cwd": root, "environ": {}}


Write = Callable[[int], Any]
Search = Callable[[str], Any]
FrontEnd = Callable[[Path], AbstractContextManager[tuple[Write, Search]]]


def _versus(
    name: str,
    n: int,
    calls: int,
    front_end: FrontEnd,
    *,
    target: str,
    scope: str | None,
    limits: dict[str, int],
) -> dict[str, Any]:
    """The one skeleton of every front end's figures: `front_end(root)` yields its write and
    search over a fresh store; the direct side is `Memory.add(text, target, scope, force)`
    and `Memory.search(query, target)` over another fresh store with the same limits and
    grant, in the same run."""
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        with front_end(Path(a)) as (write, search):
            front = _measure(write, search, n, calls)
        overrides: dict[str, Any] = dict(limits)
        opened: dict[str, Any] = {}
        if scope is not None:
            overrides["scopes"] = {"agentAccess": {"bench": ["global", scope]}}
            opened["agent_id"] = "bench"
        with pi_hermes_memory.open(**_kwargs(Path(b)), overrides=overrides, **opened) as d:
            direct = _measure(
                lambda i: _ok(d.add(_text(i), target=target, scope=scope, force=True)),
                lambda q: _ok(d.search(q, target=target)),
                n, calls,
            )  # fmt: skip
    return _row(name, n, calls, front, direct)


def bench_mem0(n: int, calls: int) -> dict[str, Any]:
    from pi_hermes_memory.compat.mem0 import CHAR_LIMIT
    from pi_hermes_memory.compat.mem0 import Memory as Mem0

    @contextmanager
    def front_end(root: Path) -> Iterator[tuple[Write, Search]]:
        with Mem0(**_kwargs(root)) as m:
            yield (
                lambda i: m.add(_text(i), user_id="u1", infer=False),
                lambda q: m.search(q, filters={"user_id": "u1"}),
            )

    limits = {"userCharLimit": CHAR_LIMIT, "memoryCharLimit": CHAR_LIMIT}
    return _versus("mem0", n, calls, front_end, target="user", scope="user:u1", limits=limits)


def bench_langgraph(n: int, calls: int) -> dict[str, Any]:
    from pi_hermes_memory.adapters.frameworks.langgraph_store import OPEN_CHAR_LIMIT, PiHermesStore

    @contextmanager
    def front_end(root: Path) -> Iterator[tuple[Write, Search]]:
        store = PiHermesStore.open(index={"fields": ["text"]}, **_kwargs(root))
        try:
            yield (
                lambda i: store.put(("bench", "u1"), f"k{i}", {"text": _text(i)}),
                lambda q: store.search(("bench",), query=q),
            )
        finally:
            store.close()

    return _versus(
        "langgraph", n, calls, front_end, target="memory", scope="custom:langgraph",
        limits={"memoryCharLimit": OPEN_CHAR_LIMIT},
    )  # fmt: skip


def bench_openai_agents(n: int, calls: int) -> dict[str, Any]:
    import asyncio
    import json

    from pi_hermes_memory.adapters.frameworks.openai_agents import memory_tools

    def args(tool: Any, **given: Any) -> str:
        return json.dumps({**dict.fromkeys(tool.params_json_schema["properties"]), **given})

    @contextmanager
    def front_end(root: Path) -> Iterator[tuple[Write, Search]]:
        loop = asyncio.new_event_loop()  # one event loop runs every tool call
        try:
            with pi_hermes_memory.open(**_kwargs(root), overrides=big) as m:
                tools = {t.name: t for t in memory_tools(m)}
                add, search = tools["memory"], tools["memory_search"]

                def write(i: int) -> None:
                    call = args(add, action="add", target="memory", content=_text(i), force=True)
                    out = json.loads(loop.run_until_complete(add.on_invoke_tool(None, call)))  # type: ignore[arg-type]
                    assert out["success"], out

                def find(q: str) -> None:
                    call = args(search, query=q)
                    loop.run_until_complete(search.on_invoke_tool(None, call))  # type: ignore[arg-type]

                yield write, find
        finally:
            loop.close()

    big = {"memoryCharLimit": 50_000_000}  # the same limit on both sides: no eviction
    return _versus("openai-agents", n, calls, front_end, target="memory", scope=None, limits=big)


def bench_anthropic(n: int, calls: int) -> dict[str, Any]:
    from pi_hermes_memory.adapters.frameworks.anthropic_memory import (
        OPEN_CHAR_LIMIT,
        PiHermesMemoryTool,
    )

    @contextmanager
    def front_end(root: Path) -> Iterator[tuple[Write, Search]]:
        tool = PiHermesMemoryTool.open(**_kwargs(root))
        try:
            yield (
                lambda i: tool.call(
                    {"command": "create", "path": f"/memories/f{i}.md", "file_text": _text(i)}
                ),
                lambda q: _ok(tool.memory.search(q, target="memory")),
            )
        finally:
            tool.close()

    return _versus(
        "anthropic memory tool", n, calls, front_end, target="memory",
        scope="custom:claude-memory", limits={"memoryCharLimit": OPEN_CHAR_LIMIT},
    )  # fmt: skip


def bench_langgraph_put(items: int, calls: int) -> dict[str, Any]:
    """LangGraph put p50 with `items` items in one namespace: the key found in the store's
    index (ADR 0103) vs by reading the scope's every item first (what every put did before,
    forced here by dropping the index before each put)."""
    import json

    from pi_hermes_memory.adapters.frameworks.langgraph_store import PiHermesStore

    out: dict[str, Any] = {"items": items, "calls": calls}
    with tempfile.TemporaryDirectory() as a:
        store = PiHermesStore.open(index={"fields": ["text"]}, **_kwargs(Path(a)))
        try:
            stamp = "2026-01-01T00:00:00+00:00"
            ops = [
                {
                    "action": "add",
                    "target": "memory",
                    "scope": "custom:langgraph",
                    "force": True,
                    "content": json.dumps(
                        {
                            "text": _text(i),
                            "langgraph": {
                                "namespace": ["bench"],
                                "key": f"f{i}",
                                "value": {"text": _text(i)},
                                "created_at": stamp,
                                "updated_at": stamp,
                            },
                        }
                    ),
                }
                for i in range(items)
            ]
            for start in range(0, len(ops), 2000):  # filled in batches: the fill is not timed
                assert store.memory.batch(ops[start : start + 2000]).success
            store.put(("bench",), "warm", {"text": "warm up"})
            for mode in ("scan", "indexed"):
                timed = []
                for i in range(calls):
                    if mode == "scan":
                        store._index = None  # the old put: read every item to find the key
                    key, value = f"{mode}{i}", {"text": _text(i)}
                    timed.append(_timed(lambda k=key, v=value: store.put(("bench",), k, v)))
                out[f"{mode}_ms"] = round(statistics.median(w for w, _ in timed), 3)
                out[f"{mode}_cpu_ms"] = round(statistics.median(c for _, c in timed), 3)
            item = store.get(("bench",), "f1")
            assert item is not None and item.value == {"text": _text(1)}
        finally:
            store.close()
    out["ratio"] = round(out["scan_ms"] / out["indexed_ms"], 2)
    return out


def _row(
    name: str, n: int, calls: int, front: dict[str, float], direct: dict[str, float]
) -> dict[str, Any]:
    row: dict[str, Any] = {"framework": name, "entries": n, "calls": calls}
    for key, value in front.items():
        row[f"front_{key}"] = round(value, 3)
        row[f"direct_{key}"] = round(direct[key], 3)
    row["write_ratio"] = round(front["write_ms"] / direct["write_ms"], 2)
    row["search_ratio"] = round(front["search_ms"] / direct["search_ms"], 2)
    return row


def run(sizes: dict[str, Any]) -> list[dict[str, Any]]:
    n, calls = sizes["entries"], sizes["calls"]
    return [
        bench_mem0(n, calls),
        bench_langgraph(n, calls),
        bench_openai_agents(n, calls),
        bench_anthropic(n, calls),
    ]


def run_puts(sizes: dict[str, Any]) -> list[dict[str, Any]]:
    return [bench_langgraph_put(items, sizes["calls"]) for items in sizes.get("put_sizes", ())]


def render_puts(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "\n### LangGraph put: key by index vs by reading every item (p50 per put)\n",
        "| items in the namespace | read every item ms (cpu) | indexed ms (cpu) | ratio |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['items']} | {r['scan_ms']:.2f} ({r['scan_cpu_ms']:.2f}) "
            f"| {r['indexed_ms']:.2f} ({r['indexed_cpu_ms']:.2f}) | {r['ratio']} |"
        )
    return "\n".join(lines)


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "\n### Framework front ends: overhead over a direct library call (p50 per call)\n",
        "| framework | entries | write ms (cpu) | direct write ms (cpu) | write ratio "
        "| search ms (cpu) | direct search ms (cpu) | search ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['framework']} | {r['entries']} "
            f"| {r['front_write_ms']:.2f} ({r['front_write_cpu_ms']:.2f}) "
            f"| {r['direct_write_ms']:.2f} ({r['direct_write_cpu_ms']:.2f}) | {r['write_ratio']} "
            f"| {r['front_search_ms']:.2f} ({r['front_search_cpu_ms']:.2f}) "
            f"| {r['direct_search_ms']:.2f} ({r['direct_search_cpu_ms']:.2f}) "
            f"| {r['search_ratio']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.frameworks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    print(render(run(sizes)))
    print(render_puts(run_puts(sizes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
