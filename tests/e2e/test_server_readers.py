"""Reads in reader processes beside one writer per store (ADR 0083), against real
`pi-hermes-memory serve` processes: every acknowledged store is found by a later search from
any client, a hand edit is imported before a search answers, and a server with readers
answers every read exactly as one without them (`--readers 0`)."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.memory_server import RunningServer, running

PROJECTS = ("ra", "rb", "rc")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running(tmp_path_factory.mktemp("readers"), "--readers", "2") as s:
        yield s


def _hits(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [
        h["content"] if "content" in h else h["text"] for h in response.json()["data"]["results"]
    ]


def test_many_clients_on_several_projects_find_every_acknowledged_store(
    srv: RunningServer,
) -> None:
    """Writers store and at once search for what they stored, through another connection
    than the one that stored it, while readers search the same projects; no request fails
    and every acknowledged store is found (read-your-writes across clients)."""
    writers, readers, steps = 6, 6, 10
    failures: list[str] = []
    acknowledged: list[tuple[str, str]] = []
    done = threading.Event()

    def write(w: int) -> None:
        project = PROJECTS[w % len(PROJECTS)]
        headers = {"X-Project": project}
        with (
            httpx.Client(base_url=srv.url, timeout=60) as storing,
            httpx.Client(base_url=srv.url, timeout=60) as searching,
        ):
            for s in range(steps):
                token = f"rw{w}x{s}"
                r = storing.post(
                    "/api/memory/store",
                    json={"content": f"reader test writer {w} step {s} {token}", "force": True},
                    headers=headers,
                )
                if r.status_code != 201:
                    failures.append(f"store {token}: {r.status_code} {r.text}")
                    continue
                acknowledged.append((project, token))
                found = searching.post("/api/memory/search", json={"query": token}, headers=headers)
                if found.status_code != 200 or not any(token in h for h in _hits(found)):
                    failures.append(f"search right after store missed {token}: {found.text}")

    def read(r: int) -> None:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            i = 0
            while not done.is_set():
                project = PROJECTS[(r + i) % len(PROJECTS)]
                headers = {"X-Project": project}
                answers = [
                    c.post("/api/memory/search", json={"query": "reader test"}, headers=headers),
                    c.get("/api/memory/list", params={"limit": 5}, headers=headers),
                    c.get("/api/memory/stats", headers=headers),
                ]
                failures.extend(
                    f"{a.status_code} {a.text}" for a in answers if a.status_code != 200
                )
                i += 1

    threads = [threading.Thread(target=read, args=(r,)) for r in range(readers)]
    writing = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in [*threads, *writing]:
        t.start()
    for t in writing:
        t.join()
    done.set()
    for t in threads:
        t.join()
    assert failures == []
    assert len(acknowledged) == writers * steps
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        for project, token in acknowledged:
            found = c.post(
                "/api/memory/search", json={"query": token}, headers={"X-Project": project}
            )
            assert any(token in h for h in _hits(found)), (project, token)


def test_a_hand_edit_is_imported_before_a_search_answers(srv: RunningServer) -> None:
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        assert (
            c.post("/api/memory/store", json={"content": "Deploys go through staging"}).status_code
            == 201
        )
        for _ in range(4):  # every reader process has the store open and has read the file
            assert _hits(c.post("/api/memory/search", json={"query": "staging"}))
        memory_md = srv.root / "pi-hermes-memory" / "MEMORY.md"
        with memory_md.open("a", encoding="utf-8") as f:
            f.write("\n§\nThe release train leaves on handeditqz Thursdays\n")
        for _ in range(4):  # whichever reader answers
            hits = _hits(c.post("/api/memory/search", json={"query": "handeditqz"}))
            assert any("handeditqz" in h for h in hits)
        listed = c.get("/api/memory/list", params={"limit": 1000}).json()["data"]["entries"]
        assert sum("handeditqz" in e["text"] for e in listed) == 1


# -- the same answers with and without readers ------------------------------------------------

_WORDS = ("deploy", "staging", "port", "release", "tests", "python", "cache", "rule", "agent")


def _seed(c: httpx.Client) -> None:
    for i in range(40):
        text = (
            f"{_WORDS[i % 9]} note {i}: the {_WORDS[(i * 5) % 9]} uses {_WORDS[(i * 7) % 9]} n{i}"
        )
        project = {"X-Project": PROJECTS[i % 2]} if i % 3 == 0 else {}
        body: dict[str, Any] = {"content": text, "force": True}
        if project:
            body["target"] = "project"
        assert c.post("/api/memory/store", json=body, headers=project).status_code == 201


def _answers(c: httpx.Client, query: str, project: str | None, limit: int) -> list[Any]:
    headers = {"X-Project": project} if project else {}
    search = c.post("/api/memory/search", json={"query": query, "limit": limit}, headers=headers)
    listing = c.get("/api/memory/list", params={"limit": limit}, headers=headers)
    stats = c.get("/api/memory/stats", headers=headers)
    out: list[Any] = [(r.status_code, r.json()) for r in (search, listing, stats)]
    ids = (
        [h["id"] for h in search.json()["data"].get("results", [])]
        if search.status_code == 200
        else []
    )
    out += [(c.get(f"/api/memory/{i}", headers=headers).json()) for i in ids[:3]]
    return out


@pytest.mark.parametrize("readers", [("--readers", "2"), ()], ids=["readers-2", "default"])
def test_readers_answer_as_the_writer_alone(tmp_path: Path, readers: tuple[str, ...]) -> None:
    """One seeded store copied to two servers, `--readers 2` or the default (one reader on 2
    CPUs, ADR 0117) and `--readers 0` (the path before ADR 0083): searches, listings, stats and
    gets answer the same bytes of JSON."""
    (tmp_path / "a").mkdir()
    with (
        running(tmp_path / "a", "--readers", "0") as seeding,
        httpx.Client(base_url=seeding.url, timeout=60) as c,
    ):
        _seed(c)
    shutil.copytree(tmp_path / "a", tmp_path / "b", ignore=shutil.ignore_patterns("server.log"))
    with (
        running(tmp_path / "a", "--readers", "0") as old,
        running(tmp_path / "b", *readers) as new,
        httpx.Client(base_url=old.url, timeout=60) as o,
        httpx.Client(base_url=new.url, timeout=60) as n,
    ):

        @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            words=st.lists(
                st.sampled_from((*_WORDS, "n1", "n12", "nothing", "the")), min_size=1, max_size=3
            ),
            project=st.sampled_from((None, *PROJECTS[:2])),
            limit=st.integers(1, 20),
        )
        def same(words: list[str], project: str | None, limit: int) -> None:
            query = " ".join(words)
            assert _answers(n, query, project, limit) == _answers(o, query, project, limit)

        same()
        state = n.get("/api/status").json()["data"]["readers"]
        assert state["size"] == 0 or state["answered"] > 0  # the readers answered some


def _children(pid: int) -> list[int]:
    """The reader processes of the server `pid` (not multiprocessing's resource tracker)."""
    found = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            found.append(int(child))
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to find the reader")
def test_a_killed_reader_fails_over_to_the_writer_and_is_started_again(tmp_path: Path) -> None:
    import os
    import signal

    with (
        running(tmp_path, "--readers", "1") as srv,
        httpx.Client(base_url=srv.url, timeout=60) as c,
    ):
        stored = c.post("/api/memory/store", json={"content": "Builds run on the ci box"})
        assert stored.status_code == 201
        for _ in range(3):
            found = c.post("/api/memory/search", json={"query": "ci box"})
            assert any("ci box" in h for h in _hits(found))
        (reader,) = _children(srv.process.pid)
        os.kill(reader, signal.SIGKILL)
        time.sleep(1)  # the server sees the dead pipe with no read waiting on it
        for _ in range(5):  # the first may meet the dead pipe: the writer answers it
            found = c.post("/api/memory/search", json={"query": "ci box"})
            assert any("ci box" in h for h in _hits(found))
        children = _children(srv.process.pid)
        assert reader not in children and len(children) == 1
