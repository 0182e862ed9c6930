"""The default number of reader processes (ADR 0117), on real `pi-hermes-memory serve`
processes: one reader where the server may use 2 CPUs or more, none on one; `--readers 0`
still turns them off; reads through the default reader see every acknowledged write and
every hand edit; the stdio MCP server starts none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pi_hermes_memory.adapters.server.readers import default_readers, usable_cpus

from tests.support.memory_server import environment, running

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="needs /proc to find the reader processes"
)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _readers(pid: int) -> list[int]:
    """The reader processes of the server `pid` (not multiprocessing's resource tracker)."""
    found = []
    for child in _children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            found.append(child)
    return found


def _status(c: httpx.Client) -> dict[str, object]:
    r = c.get("/api/status")
    assert r.status_code == 200, r.text
    data: dict[str, object] = r.json()["data"]
    return data


def _readers_state(c: httpx.Client) -> dict[str, int]:
    state = _status(c)["readers"]
    assert isinstance(state, dict)
    return state


def _wait_ready(c: httpx.Client, want: int) -> None:
    """Until the server says `want` readers answer reads (they import the library first)."""
    deadline = time.monotonic() + 60
    while (_readers_state(c)["size"], _readers_state(c)["ready"]) != (want, want):
        assert time.monotonic() < deadline, _status(c)
        time.sleep(0.05)


def _hits(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [
        h["content"] if "content" in h else h["text"] for h in response.json()["data"]["results"]
    ]


def test_the_default_follows_the_cpus_the_process_may_use() -> None:
    assert [default_readers(n) for n in (1, 2, 3, 64)] == [0, 1, 1, 1]
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no affinity call on this platform")
    # a real child pinned to one CPU (as `taskset -c 0` or a one-CPU container would)
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from pi_hermes_memory.adapters.server.readers import default_readers, usable_cpus; "
        "print(usable_cpus(), default_readers())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "0"]
    assert usable_cpus() == len(os.sched_getaffinity(0))


@pytest.mark.skipif(usable_cpus() < 2, reason="the default is no reader on one CPU")
def test_the_default_starts_one_reader_that_answers_searches_and_sees_every_write(
    tmp_path: Path,
) -> None:
    """No --readers, no PI_MEMORY_READERS: one reader process is started as the server starts
    listening; writes via REST and searches from another connection, interleaved, find every
    acknowledged write; the reader (not only the writer) has the store open, so it answered;
    a hand edit of MEMORY.md is found by the next search and imported exactly once."""
    with (
        running(tmp_path) as srv,
        httpx.Client(base_url=srv.url, timeout=60) as storing,
        httpx.Client(base_url=srv.url, timeout=60) as searching,
    ):
        _wait_ready(searching, 1)
        (reader,) = _readers(srv.process.pid)
        for step in range(12):
            token = f"dflt{step}qz"
            stored = storing.post(
                "/api/memory/store", json={"content": f"default reader step {step} {token}"}
            )
            assert stored.status_code == 201, stored.text
            for earlier in range(step + 1):  # every acknowledged write, not only the last
                found = _hits(
                    searching.post("/api/memory/search", json={"query": f"dflt{earlier}qz"})
                )
                assert any(f"dflt{earlier}qz" in h for h in found), (step, earlier, found)
        # the reader answered reads, not only the writer; once it has the store open (the
        # searches above), every search of a settled store is its
        assert _readers_state(searching)["answered"] > 0, _status(searching)
        before = _readers_state(searching)["answered"]
        for step in range(12):
            assert _hits(searching.post("/api/memory/search", json={"query": f"dflt{step}qz"}))
        assert _readers_state(searching)["answered"] == before + 12
        assert _readers(srv.process.pid) == [reader]  # still the one reader, never restarted

        memory_md = srv.root / "pi-hermes-memory" / "MEMORY.md"
        for edit in range(3):
            with memory_md.open("a", encoding="utf-8") as f:
                f.write(f"\n§\nThe release train leaves on handdflt{edit}zq Thursdays\n")
            hits = _hits(searching.post("/api/memory/search", json={"query": f"handdflt{edit}zq"}))
            assert any(f"handdflt{edit}zq" in h for h in hits)
            token = f"afteredit{edit}qz"
            stored = storing.post("/api/memory/store", json={"content": f"after the edit {token}"})
            assert stored.status_code == 201, stored.text
            assert any(
                token in h
                for h in _hits(searching.post("/api/memory/search", json={"query": token}))
            )
        listed = searching.get("/api/memory/list", params={"limit": 1000}).json()["data"]
        texts = [e["text"] for e in listed["entries"]]
        for edit in range(3):
            assert sum(f"handdflt{edit}zq" in t for t in texts) == 1
        assert sum("dflt" in t and "hand" not in t for t in texts) == 12


def test_the_first_search_is_answered_while_the_reader_starts(tmp_path: Path) -> None:
    """Searches sent as soon as /health answers are answered (by the writer while the reader
    imports), and find what was stored; the status says how many readers answer."""
    with running(tmp_path) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        assert (
            c.post("/api/memory/store", json={"content": "early bird note zqearly"}).status_code
            == 201
        )
        for _ in range(5):
            assert any(
                "zqearly" in h
                for h in _hits(c.post("/api/memory/search", json={"query": "zqearly"}))
            )
        assert _readers_state(c)["size"] == default_readers()


def test_readers_0_turns_the_default_off(tmp_path: Path) -> None:
    for args, env in ((("--readers", "0"), None), ((), {"PI_MEMORY_READERS": "0"})):
        (tmp_path / str(len(args))).mkdir()
        with (
            running(tmp_path / str(len(args)), *args, env=env) as srv,
            httpx.Client(base_url=srv.url, timeout=60) as c,
        ):
            assert (
                c.post("/api/memory/store", json={"content": "off note zqoff"}).status_code == 201
            )
            for _ in range(3):
                assert _hits(c.post("/api/memory/search", json={"query": "zqoff"}))
            assert _readers_state(c) == {"size": 0, "ready": 0, "answered": 0}
            assert _readers(srv.process.pid) == []


def test_the_stdio_mcp_server_starts_no_reader(tmp_path: Path) -> None:
    """One client over stdio: a reader would be pure cost, even with PI_MEMORY_READERS set."""
    (tmp_path / "work").mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pi_hermes_memory.adapters.cli.app", "mcp"],
        env=environment(tmp_path / "agent", {"PI_MEMORY_READERS": "2"}),
        cwd=str(tmp_path / "work"),
    )

    def stdio_servers() -> list[int]:
        return [
            pid
            for pid in _children(os.getpid())
            if b"cli.app\x00mcp" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool(
                "memory", {"action": "add", "target": "memory", "content": "stdio note zqstdio"}
            )
            for _ in range(3):
                result = await session.call_tool("memory_search", {"query": "zqstdio"})
                assert not result.is_error and "zqstdio" in json.dumps(result.model_dump())
            (server,) = stdio_servers()
            assert _readers(server) == []

    anyio.run(main)
