"""The LangGraph store over a real store (issue 31 §1, ADR 0095).

LangGraph ships no reusable store test suite (langgraph and langgraph-checkpoint hold none):
the first tests below are the equivalent of the checks its own stores' tests make (put/get,
overwrite, delete, search with filters and paging, list_namespaces with conditions and depth,
batch ordering, async), then our own rules (scanner, journal, history, another process), then
a real graph across two threads.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp
from pi_hermes_memory.adapters.frameworks.langgraph_store import PiHermesStore
from pi_hermes_memory.errors import InvalidArgument, WriteRefused

SECRET = "use ghp_" + "A1b2" * 9 + " for CI"


def _open(tmp_path: Path, **kwargs: Any) -> PiHermesStore:
    return PiHermesStore.open(agent_root=tmp_path / "agent", cwd=tmp_path, environ={}, **kwargs)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PiHermesStore]:
    opened = _open(tmp_path, index={"fields": ["text"]})
    yield opened
    opened.close()


def test_put_get_overwrite_delete(store: PiHermesStore) -> None:
    assert store.get(("a",), "k") is None
    store.put(("a", "b", "c", "d"), "k", {"text": "first", "n": 1})
    item = store.get(("a", "b", "c", "d"), "k")
    assert item is not None and item.value == {"text": "first", "n": 1}
    assert item.namespace == ("a", "b", "c", "d") and item.key == "k"
    store.put(("a", "b", "c", "d"), "k", {"text": "second", "n": 2})
    again = store.get(("a", "b", "c", "d"), "k")
    assert again is not None and again.value["n"] == 2
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    assert store.get(("a", "b", "c"), "k") is None  # namespaces are exact for get
    store.delete(("a", "b", "c", "d"), "k")
    assert store.get(("a", "b", "c", "d"), "k") is None
    store.delete(("a", "b", "c", "d"), "k")  # deleting a missing key is not an error


def test_search_by_prefix_filter_and_paging(store: PiHermesStore) -> None:
    for i in range(5):
        store.put(("docs", "x" if i % 2 else "y"), f"k{i}", {"text": f"note {i}", "n": i})
    store.put(("other",), "k", {"text": "note", "n": 9})
    assert len(store.search(("docs",), limit=10)) == 5
    assert {i.key for i in store.search(("docs", "x"))} == {"k1", "k3"}
    assert [i.key for i in store.search(("docs",), filter={"n": 2})] == ["k2"]
    assert {i.key for i in store.search(("docs",), filter={"n": {"$gte": 3}})} == {"k3", "k4"}
    assert {i.key for i in store.search(("docs",), filter={"n": {"$ne": 0, "$lt": 2}})} == {"k1"}
    newest = store.search(("docs",), limit=2)
    assert [i.key for i in newest] == ["k4", "k3"]  # newest update first
    assert [i.key for i in store.search(("docs",), limit=2, offset=2)] == ["k2", "k1"]
    assert len(store.search((), limit=100)) == 6


def test_query_search_goes_through_our_search(store: PiHermesStore) -> None:
    store.put(("m", "alice"), "tea", {"text": "Alice drinks green tea", "n": 1})
    store.put(("m", "alice"), "car", {"text": "Alice drives a red car", "n": 2})
    store.put(("m", "bob"), "tea", {"text": "Bob drinks black tea", "n": 3})
    hits = store.search(("m",), query="green tea")
    assert hits[0].key == "tea" and hits[0].namespace == ("m", "alice")
    assert hits[0].score is not None and 0 < hits[0].score <= 1
    assert {h.namespace for h in store.search(("m", "bob"), query="tea")} == {("m", "bob")}
    assert [h.value["n"] for h in store.search(("m",), query="tea", filter={"n": 3})] == [3]


def test_index_config_chooses_the_searched_fields(tmp_path: Path) -> None:
    with_fields = _open(tmp_path, index={"fields": ["title"]})
    try:
        with_fields.put(("n",), "1", {"title": "kettle", "body": "walrus"})
        assert [i.key for i in with_fields.search(("n",), query="kettle")] == ["1"]
        assert with_fields.search(("n",), query="walrus") == []
        with_fields.put(("n",), "2", {"title": "x", "body": "walrus"}, index=["body"])
        assert [i.key for i in with_fields.search(("n",), query="walrus")] == ["2"]
    finally:
        with_fields.close()


def test_list_namespaces(store: PiHermesStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("f", "b")]:
        store.put(ns, "k", {"text": "v"})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("f", "b")]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("b",)) == [("f", "b")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("f", "b"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",), ("f",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]


def test_batch_answers_in_order_and_abatch_matches(store: PiHermesStore) -> None:
    ops = [
        PutOp(("b",), "k", {"text": "v"}),
        GetOp(("b",), "k"),
        SearchOp(("b",)),
        ListNamespacesOp(),
        PutOp(("b",), "k", None),
        GetOp(("b",), "k"),
    ]
    results = store.batch(ops)
    assert results[0] is None and results[1] is not None and results[1].value == {"text": "v"}
    assert [i.key for i in results[2]] == ["k"] and results[3] == [("b",)]
    assert results[4] is None and results[5] is None

    async def run() -> Any:
        await store.aput(("c",), "k", {"text": "async"})
        return await store.aget(("c",), "k"), await store.asearch(("c",))

    got, found = asyncio.run(run())
    assert got.value == {"text": "async"} and [i.key for i in found] == ["k"]


def test_a_refused_put_raises_a_typed_error_and_stores_nothing(store: PiHermesStore) -> None:
    with pytest.raises(WriteRefused) as refused:
        store.put(("s",), "k", {"text": SECRET})
    assert refused.value.status == "blocked"
    assert store.get(("s",), "k") is None
    store.put(("s",), "k", {"text": "fine"})
    with pytest.raises(WriteRefused):
        store.put(("s",), "k", {"text": SECRET})
    item = store.get(("s",), "k")
    assert item is not None and item.value == {"text": "fine"}


def test_overwrites_are_history_and_deletes_restorable(store: PiHermesStore) -> None:
    store.put(("h",), "k", {"text": "one"})
    store.put(("h",), "k", {"text": "two"})
    [entry] = store.memory.entries("memory", scope="custom:langgraph")
    assert ['"one"' in v.text for v in store.memory.history(entry.id)] == [True, False]
    store.delete(("h",), "k")
    assert store.memory.restore(entry.id).status.value == "restored"
    item = store.get(("h",), "k")
    assert item is not None and item.value == {"text": "two"}


def test_another_process_sees_every_acknowledged_put(store: PiHermesStore, tmp_path: Path) -> None:
    store.put(("p",), "mine", {"text": "from the test"})
    child = textwrap.dedent(
        f"""
        from pi_hermes_memory.adapters.frameworks.langgraph_store import PiHermesStore
        s = PiHermesStore.open(agent_root={str(tmp_path / "agent")!r}, cwd={str(tmp_path)!r},
                               environ={{}})
        assert s.get(("p",), "mine").value == {{"text": "from the test"}}
        s.put(("p",), "theirs", {{"text": "from the child"}})
        s.close()
        """
    )
    subprocess.run([sys.executable, "-c", child], check=True, timeout=120)
    item = store.get(("p",), "theirs")  # read from the store, never from a stale cache
    assert item is not None and item.value == {"text": "from the child"}


def test_the_key_index_is_dropped_when_another_writer_changed_the_store(
    store: PiHermesStore, tmp_path: Path
) -> None:
    """ADR 0103: a put finds its key in an index kept between batches, trusted only while the
    journal revision is the one of our own last write."""
    store.put(("p",), "a", {"text": "one"})
    store.put(("p",), "b", {"text": "two"})
    other = _open(tmp_path)  # a second writer on the same store
    try:
        other.put(("p",), "a", {"text": "changed elsewhere"})
        other.delete(("p",), "b")
        other.put(("p",), "c", {"text": "new elsewhere"})
    finally:
        other.close()
    item = store.get(("p",), "a")
    assert item is not None and item.value == {"text": "changed elsewhere"}
    assert store.get(("p",), "b") is None
    store.put(("p",), "c", {"text": "overwritten here"})  # an update of their entry, not a 2nd
    rows = [v for v in store.memory.entries("memory", scope="custom:langgraph")]
    assert len(rows) == 2
    assert len(store.memory.history(rows[-1].id)) == 2
    item = store.get(("p",), "c")
    assert item is not None and item.value == {"text": "overwritten here"}


def test_a_returned_value_is_the_callers_copy(store: PiHermesStore) -> None:
    store.put(("p",), "a", {"text": "one", "tags": ["x"]})
    item = store.get(("p",), "a")
    assert item is not None
    item.value["tags"].append("mutated")
    again = store.get(("p",), "a")
    assert again is not None and again.value == {"text": "one", "tags": ["x"]}


class _Clock:
    """The store's injected clock (time is an input of the TTL rules, not what is tested)."""

    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def _ttl_store(tmp_path: Path, clock: _Clock, **ttl: Any) -> PiHermesStore:
    opened = _open(tmp_path, index={"fields": ["text"]}, ttl=ttl or None)
    return PiHermesStore(
        opened.memory, index={"fields": ["text"]}, ttl=ttl or None, owns_memory=True, clock=clock
    )


def test_an_expired_item_is_invisible_and_swept_through_the_journal(tmp_path: Path) -> None:
    clock = _Clock()
    store = _ttl_store(tmp_path, clock)
    try:
        assert store.supports_ttl
        store.put(("t",), "short", {"text": "kettle short lived"}, ttl=1)
        store.put(("t",), "long", {"text": "kettle long lived"}, ttl=10)
        store.put(("u",), "forever", {"text": "kettle forever"})
        clock.advance(30)
        assert store.get(("t",), "short", refresh_ttl=False) is not None
        clock.advance(31)  # 61 s: "short" expired, nothing swept yet
        assert store.get(("t",), "short") is None
        assert [i.key for i in store.search(("t",))] == ["long"]
        assert [i.key for i in store.search(("t",), query="kettle")] == ["long"]
        store.put(("v",), "gone", {"text": "x"}, ttl=1)
        clock.advance(61)
        assert store.list_namespaces() == [("t",), ("u",)]
        assert store.sweep_ttl() == 2  # "short" and "gone"; "long" and "forever" stay
        assert store.sweep_ttl() == 0
        texts = [v.text for v in store.memory.entries("memory", scope="custom:langgraph")]
        assert len(texts) == 2 and all('"key":"short"' not in t for t in texts)
        removed = [v for v in store.memory.removed("memory") if '"key":"short"' in v.text]
        assert len(removed) == 1  # a removal like any delete: restorable
        assert store.memory.restore(removed[0].id, target="memory").success
        assert store.get(("t",), "short") is None  # restored, but still past its expiry
        store.put(("t",), "short", {"text": "again"})  # a put on an expired key: a new item
        again = store.get(("t",), "short")
        assert again is not None and again.created_at == clock.at
    finally:
        store.close()


def test_a_read_refreshes_the_ttl_unless_told_not_to(tmp_path: Path) -> None:
    clock = _Clock()
    store = _ttl_store(tmp_path, clock, default_ttl=1, refresh_on_read=True)
    try:
        store.put(("t",), "k", {"text": "walrus"})  # default_ttl: 1 minute
        clock.advance(50)
        assert store.get(("t",), "k") is not None  # refreshed: expires at 110 s
        clock.advance(50)
        assert [i.key for i in store.search(("t",), query="walrus")] == ["k"]  # to 160 s
        clock.advance(50)
        assert store.get(("t",), "k", refresh_ttl=False) is not None  # 150 s: no refresh
        clock.advance(11)
        assert store.get(("t",), "k") is None  # 161 s
        assert store.sweep_ttl() == 1
    finally:
        store.close()
    clock.advance(-1000)
    reopened = _ttl_store(tmp_path, clock)  # the expiry lives in the entry, not in the object
    try:
        reopened.put(("t",), "p", {"text": "persisted"}, ttl=1)
    finally:
        reopened.close()
    clock.advance(61)
    third = _ttl_store(tmp_path, clock)
    try:
        assert third.get(("t",), "p") is None and third.sweep_ttl() == 1
    finally:
        third.close()


def test_the_ttl_sweeper_thread_starts_and_stops(tmp_path: Path) -> None:
    store = _ttl_store(tmp_path, _Clock(), sweep_interval_minutes=60)
    try:
        with pytest.raises(InvalidArgument):
            store.start_ttl_sweeper(0)
        store.start_ttl_sweeper()
        assert store.stop_ttl_sweeper(timeout=10)
    finally:
        store.close()


def test_a_missing_extra_is_one_clear_line(tmp_path: Path) -> None:
    child = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "langgraph" or name.startswith("langgraph."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
        sys.meta_path.insert(0, Block())
        import pi_hermes_memory  # the core package never needs it
        import pi_hermes_memory.adapters.frameworks.langgraph_store
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: pi_hermes_memory.adapters.frameworks.langgraph_store needs LangGraph: "
        "pip install 'pi-hermes-memory[langgraph]'"
    )


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


def _graph(store: BaseStore) -> Any:
    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        if state["said"]:
            store.put(("memories", state["user"]), str(len(state["said"])), {"text": state["said"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        found = store.search(("memories", state["user"]), query="tea")
        return {"recalled": [item.value["text"] for item in found]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store, checkpointer=InMemorySaver())


def test_a_real_graph_writes_in_one_thread_and_reads_in_another(tmp_path: Path) -> None:
    first = _open(tmp_path, index={"fields": ["text"]})
    try:
        graph = _graph(first)
        out = graph.invoke(
            {"user": "alice", "said": "Alice drinks green tea", "recalled": []},
            {"configurable": {"thread_id": "1"}},
        )
        assert out["recalled"] == ["Alice drinks green tea"]
        with pytest.raises(WriteRefused):
            graph.invoke(
                {"user": "alice", "said": SECRET, "recalled": []},
                {"configurable": {"thread_id": "1"}},
            )
    finally:
        first.close()
    second = _open(tmp_path, index={"fields": ["text"]})  # a new store object: from disk
    try:
        out = _graph(second).invoke(
            {"user": "alice", "said": "", "recalled": []}, {"configurable": {"thread_id": "2"}}
        )
        assert out["recalled"] == ["Alice drinks green tea"]
        other = _graph(second).invoke(
            {"user": "bob", "said": "", "recalled": []}, {"configurable": {"thread_id": "3"}}
        )
        assert other["recalled"] == []
    finally:
        second.close()
