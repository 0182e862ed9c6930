"""The server's cache of opened stores (ADR 0044): bounded, one call at a time per store,
eviction while other threads use the stores loses nothing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from pi_hermes_memory.adapters.server.app import ServerSettings, StoreCache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / "work").mkdir()
    stores = StoreCache(ServerSettings(cwd=str(tmp_path / "work"), cache_size=2))
    yield stores
    stores.close()


def test_one_store_per_tenant_reused(cache: StoreCache) -> None:
    first = cache.run("p1", None, lambda m: m)
    assert cache.run("p1", None, lambda m: m) is first
    assert cache.run("p2", "a1", lambda m: m) is not first
    assert [(s["project"], s["agent"]) for s in cache.states()] == [("p1", None), ("p2", "a1")]


def test_bounded_and_evicted_stores_are_closed(cache: StoreCache) -> None:
    for project in ("p1", "p2", "p3"):
        cache.run(project, None, lambda m: m.entries())
    assert [s["project"] for s in cache.states()] == ["p2", "p3"]


def test_calls_on_one_store_never_overlap(cache: StoreCache) -> None:
    inside, overlaps = [0], []

    def work(memory: Any) -> None:
        inside[0] += 1
        if inside[0] > 1:
            overlaps.append(inside[0])
        memory.entries()
        inside[0] -= 1

    threads = [
        threading.Thread(target=lambda: [cache.run("p1", None, work) for _ in range(20)])
        for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []


def test_writes_survive_eviction_churn(cache: StoreCache) -> None:
    """6 threads write into 4 projects through a cache of 2: every store is evicted and
    reopened many times while others wait for it; every write is there once."""
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for s in range(8):
                project = f"p{(w + s) % 4}"
                text = f"churn writer {w} step {s}"

                def add(memory: Any, text: str = text) -> Any:
                    return memory.add(text, target="project", force=True)

                result = cache.run(project, None, add)
                assert result.success, result.message
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    texts = []
    for p in range(4):
        texts += [e.text for e in cache.run(f"p{p}", None, lambda m: m.entries("project"))]
    churn = [t for t in texts if t.startswith("churn writer")]
    assert sorted(churn) == sorted(f"churn writer {w} step {s}" for w in range(6) for s in range(8))
