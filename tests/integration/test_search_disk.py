"""memory_search on SQLite FTS5 and the Markdown files: the real index, the real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery
from pi_hermes_memory.testing.contracts import EventWriter

EVERYTHING = tuple(ScopeClause(t) for t in Target)

CORPUS = [
    ("Deploys to staging need the VPN and a fresh token", Target.PROJECT, "web", None),
    ("The staging database is reset every Sunday night", Target.PROJECT, "api", None),
    ("项目构建命令是 make build，发布前要先跑类型检查", Target.PROJECT, "web", None),
    ("東京オフィスの会議室は予約が必要です", Target.MEMORY, None, None),
    ("用pytest运行测试，覆盖率要求80%", Target.PROJECT, "web", None),
    ("Prefers short answers with code first", Target.USER, None, None),
    ("pip install -e failed: old setuptools", Target.FAILURE, "web", FailureCategory.TOOL_QUIRK),
    ("Docker builds fail without BuildKit", Target.FAILURE, None, FailureCategory.FAILURE),
    ("The Café in München closes at six", Target.MEMORY, None, None),
    ("Redis holds the session cache; eviction is allkeys-lru", Target.MEMORY, None, None),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteSearchIndex]:
    storage = SqliteStorage(tmp_path_factory.mktemp("search") / "sessions.db")
    rows = EventWriter(storage)
    for text, target, project, category in CORPUS:
        rows.add(text, target, project, category)
    yield SqliteSearchIndex(storage)
    storage.close()


@given(st.text(max_size=300))
def test_any_text_is_a_valid_query(seeded: SqliteSearchIndex, text: str) -> None:
    hits = seeded.search(SearchQuery(text=text, clauses=EVERYTHING, include_superseded=True))
    assert len(hits) <= 10 and all(h.score > 0 for h in hits)


FTS5_SYNTAX = ['"', "*", "NEAR(", "AND", "OR", "NOT", "-", "^", ":", "(", ")", "'", ";", "DROP",
               "TABLE", "{", "}", "+", "staging", "构建", "猫"]  # fmt: skip


@given(st.lists(st.sampled_from(FTS5_SYNTAX), max_size=30))
def test_fts5_syntax_fragments_never_reach_fts5(
    seeded: SqliteSearchIndex, parts: list[str]
) -> None:
    for sep in ("", " "):
        seeded.search(SearchQuery(text=sep.join(parts), clauses=EVERYTHING))


@pytest.mark.parametrize(
    "query",
    ["staging", "staging VPN", "构建", "make build 构建", "pytest", "会議室", "cafe", "docker fail",
     "session cache eviction", "京", "the", "setuptools pip"],
)  # fmt: skip
def test_sqlite_and_in_memory_indexes_agree(seeded: SqliteSearchIndex, query: str) -> None:
    memory = InMemoryStorage()
    rows = EventWriter(memory)
    for text, target, project, category in CORPUS:
        rows.add(text, target, project, category)
    q = SearchQuery(text=query, clauses=EVERYTHING, limit=20)
    disk = seeded.search(q)
    mem = InMemorySearchIndex(memory).search(q)
    # one relevance function (ADR 0068): the same hits, order and scores ("the": none)
    assert [(h.id, h.score) for h in disk] == [(h.id, h.score) for h in mem]
    assert bool(disk) is (query != "the")


def test_glued_words_are_indexed(seeded: SqliteSearchIndex) -> None:
    hits = seeded.search(SearchQuery(text="PYTEST", clauses=EVERYTHING))
    assert [h.text for h in hits] == ["用pytest运行测试，覆盖率要求80%"]


# --- the store end to end ---------------------------------------------------------------------


def open_memory(root: Path, **kw: object) -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(root.parent)}, cwd=root.parent, **kw
    )


def test_tool_end_to_end_with_scope_and_history(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    with open_memory(root, project="web") as web:
        web.add("Web deploys with Docker Compose", target="project")
        web.replace("Docker Compose", "Web deploys with Kubernetes manifests", target="project")
    with open_memory(root, project="api") as api:
        api.add("API deploys with a systemd unit", target="project")
        result = api.call_tool("memory_search", {"query": "deploys", "include_superseded": True})
        assert [r["text"] for r in result["results"]] == ["API deploys with a systemd unit"]
    with open_memory(root, project="web") as web:
        result = web.call_tool(
            "memory_search", {"query": "web deploys", "include_superseded": True}
        )
        assert result["status"] == "ok"
        by_text = {r["text"]: r for r in result["results"]}
        assert set(by_text) == {
            "Web deploys with Kubernetes manifests",
            "Web deploys with Docker Compose",
        }
        old = by_text["Web deploys with Docker Compose"]
        new = by_text["Web deploys with Kubernetes manifests"]
        # one memory, two versions: the stable id is shared, the link names the version (ADR 0074)
        assert old["id"] == new["id"] and old["version_id"] != new["version_id"]
        assert old["superseded_by"] == new["version_id"] and old["superseded_at"]
        assert "superseded_by" not in new
        assert f"(superseded by {new['version_id']} on {old['superseded_at']})" in result["message"]


def test_hand_edit_of_memory_md_is_visible_to_the_next_search(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    with open_memory(root) as m:
        m.add("The nightly backup runs at 02:00", target="memory")
        assert m.search("sourdough").status == "no_results"
        path = root / "pi-hermes-memory" / "MEMORY.md"
        path.write_text(path.read_text() + "§\nThe office bakes sourdough on Fridays\n")
        hits = m.search("sourdough").hits
        assert [h.text for h in hits] == ["The office bakes sourdough on Fridays"]


def test_search_takes_no_write_lock(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    with open_memory(root) as m:
        m.add("Readers never wait for writers in WAL mode", target="memory")
        other = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            other.execute("INSERT INTO store_meta VALUES ('x', 'y')")
            assert [h.text for h in m.search("readers WAL").hits] == [
                "Readers never wait for writers in WAL mode"
            ]
        finally:
            other.execute("ROLLBACK")
            other.close()


def test_custom_storage_needs_a_search_index(tmp_path: Path) -> None:
    from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown

    storage = InMemoryStorage()
    kw: dict[str, object] = {"storage": storage, "markdown": InMemoryMarkdown()}
    with open_memory(tmp_path / "a", **kw) as m:
        assert "memory_search" not in [t.name for t in m.tool_definitions()]
    kw = {**kw, "search_index": InMemorySearchIndex(storage)}
    with open_memory(tmp_path / "b", **kw) as m:
        m.add("Custom stores can search too", target="memory")
        assert m.call_tool("memory_search", {"query": "custom"})["status"] == "ok"
