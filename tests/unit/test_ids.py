"""Entries by id (ADR 0028) on in-memory adapters: the memory tool's `id`, Memory.get /
update / delete / history, and error messages that never echo a refused value in full."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.echo import shown

#: a GitHub token the scanner refuses (the scanner's own test corpus uses this shape)
SECRET = "ghp_" + "A1b2" * 9


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    storage = InMemoryStorage()
    with pi_hermes_memory.open(
        agent_root=tmp_path,
        cwd=tmp_path / "web",
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=InMemorySearchIndex(storage),
    ) as m:
        yield m


def _id(result: Any) -> str:
    assert result.success, result
    assert result.entry_id is not None
    return str(result.entry_id)


def test_ids_are_in_entries_write_results_and_search(memory: Memory) -> None:
    entry_id = _id(memory.add("The build uses Bazel 7"))
    assert [e.id for e in memory.entries("memory")] == [entry_id]
    hits = memory.call_tool("memory_search", {"query": "Bazel"})["results"]
    assert [h["id"] for h in hits] == [entry_id]


def test_get_update_delete_history(memory: Memory) -> None:
    """ADR 0074: the id `add` returns names the memory across every update."""
    a = _id(memory.add("The API listens on port 8080"))
    got = memory.get(a)
    assert got is not None and got.text == "The API listens on port 8080"
    assert (got.id, got.version, got.version_id) == (a, 1, a)
    first = memory.update(a, "The API listens on port 9090")
    assert (first.entry_id, first.version) == (a, 2) and first.version_id not in (None, a)
    second = memory.update(a, "The API listens on port 7070")
    assert (second.entry_id, second.version) == (a, 3)
    b, c = str(first.version_id), str(second.version_id)
    history = memory.history(a)
    assert [(e.id, e.version, e.version_id) for e in history] == [(a, 1, a), (a, 2, b), (a, 3, c)]
    assert memory.history(c) == history and memory.history(f"{a}@2") == history
    current = memory.get(a)
    assert current is not None and current.text == "The API listens on port 7070"
    old = memory.get(f"{a}@1")
    assert old is not None and old.superseded_by == b  # old versions stay readable
    assert memory.get(b) == memory.get(f"{a}@2") and memory.get(f"{a}@4") is None
    # a write naming an old version keeps today's answer, naming the memory's id
    stale = memory.update(b, "The API listens on port 1")
    assert (stale.success, stale.status, stale.entry_id) == (False, "superseded", a)
    assert a in stale.message
    assert memory.delete(f"{a}@1").status == "superseded"
    assert memory.update(f"{a}@3", "The API listens on port 6060").status == "replaced"
    removed = memory.delete(a)
    assert (removed.status, removed.entry_id) == ("removed", a)
    assert memory.get(a) is None
    assert memory.delete(a).status == "gone"
    assert memory.update(a, "again").status == "gone"
    assert [e.version for e in memory.history(a)] == [1, 2, 3]  # the removed head is not listed
    restored = memory.restore(a)
    assert restored.status == "restored" and restored.entry_id == a
    back = memory.get(a)
    assert back is not None and back.text == "The API listens on port 6060" and back.version == 4
    for unknown in ("nope", "", f"{a}@0", "@1"):
        assert memory.update(unknown, "x").status == "not_found"
        assert memory.delete(unknown).status == "not_found"
        assert memory.get(unknown) is None and memory.history(unknown) == []


def test_a_joined_chain_keeps_its_id_as_an_alias(memory: Memory) -> None:
    """ADR 0074: a replace into an equal active text joins two memories; the absorbed one's
    id still names the survivor for reads and writes."""
    a = _id(memory.add("Deploys run on Fridays"))
    b = _id(memory.add("Deploys run on Tuesdays"))
    joined = memory.update(a, "Deploys run on Tuesdays")
    assert joined.success and joined.entry_id == b, joined
    for ref in (a, b):
        view = memory.get(ref)
        assert view is not None and (view.id, view.text) == (b, "Deploys run on Tuesdays")
    assert memory.update(a, "Deploys run on Wednesdays").entry_id == b
    assert [e.text for e in memory.entries("memory")] == ["Deploys run on Wednesdays"]
    assert {e.id for e in memory.history(a)} == {a, b}
    assert memory.delete(a).status == "removed" and memory.get(b) is None


def test_update_keeps_the_target_and_category(memory: Memory) -> None:
    f = _id(memory.add("pytest -x hid the second failure", target="failure", category="insight"))
    g = _id(memory.update(f, "pytest -x hides later failures; run without -x", category=None))
    assert g == f  # the memory keeps its id (ADR 0074)
    new = memory.get(g)
    assert new is not None and (new.target, new.category) == ("failure", "insight")


def test_the_memory_tool_takes_id(memory: Memory) -> None:
    a = _id(memory.add("Prefers dark mode", target="user"))
    out = memory.call_tool(
        "memory", {"action": "replace", "target": "user", "id": a, "content": "Prefers light mode"}
    )
    assert out["status"] == "replaced" and out["entry_id"] == a and out["version"] == 2, out
    stale = memory.call_tool(
        "memory", {"action": "replace", "target": "user", "id": f"{a}@1", "content": "x y z"}
    )
    assert stale["status"] == "superseded" and stale["entry_id"] == a
    again = memory.call_tool(
        "memory", {"action": "replace", "target": "user", "id": a, "content": "Prefers sepia"}
    )
    assert again["status"] == "replaced" and again["entry_id"] == a and again["version"] == 3
    wrong_target = memory.call_tool(
        "memory", {"action": "remove", "target": "memory", "id": out["entry_id"]}
    )
    assert wrong_target["status"] == "not_found"
    gone = memory.call_tool("memory", {"action": "remove", "target": "user", "id": out["entry_id"]})
    assert gone["status"] == "removed"
    assert (
        memory.call_tool("memory", {"action": "remove", "target": "user", "id": out["entry_id"]})[
            "status"
        ]
        == "gone"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "remove", "target": "memory", "id": "a", "old_text": "b"}, "not both"),
        ({"action": "remove", "target": "memory"}, "old_text (or id) is required"),
        ({"action": "remove", "target": "memory", "id": " "}, "id cannot be empty"),
        ({"action": "add", "target": "memory", "content": "x", "id": "a"}, "id is not used by add"),
        ({"action": "promote", "id": 5}, "id must be a string"),
        ({"operations": [{"action": "remove", "target": "memory"}]}, "old_text (or id)"),
    ],
)
def test_id_argument_errors(memory: Memory, arguments: dict[str, Any], message: str) -> None:
    out = memory.call_tool("memory", arguments)
    text = out["message"] if "results" not in out else out["results"][0]["message"]
    assert message in text, out


def test_batch_operations_take_ids(memory: Memory) -> None:
    a = _id(memory.add("Lint with ruff"))
    b = _id(memory.add("Format with black"))
    out = memory.call_tool(
        "memory",
        {
            "operations": [
                {"action": "replace", "target": "memory", "id": a, "content": "Lint with ruff 0.9"},
                {"action": "remove", "target": "memory", "id": b},
                {"action": "remove", "target": "memory", "id": f"{a}@1"},  # an old version
                {"action": "remove", "target": "memory", "id": "missing"},
            ]
        },
    )
    assert [r["status"] for r in out["results"]] == [
        "replaced",
        "removed",
        "superseded",
        "not_found",
    ]
    assert [e.text for e in memory.entries("memory")] == ["Lint with ruff 0.9"]


def test_promote_and_demote_by_id(memory: Memory) -> None:
    p = _id(memory.add("Run make check before pushing", target="project"))
    out = memory.call_tool("memory", {"action": "promote", "id": p})
    assert out["status"] == "promoted", out
    assert memory.get(p) is not None and memory.get(p).target == "memory"  # type: ignore[union-attr]
    back = memory.call_tool("memory", {"action": "demote", "id": p})
    assert back["status"] == "demoted", back
    assert (
        memory.call_tool("memory", {"action": "demote", "id": "missing"})["status"] == "not_found"
    )


# --- clipping -------------------------------------------------------------------------------


def test_a_huge_argument_gives_a_small_error(memory: Memory) -> None:
    huge = "x" * 10_000_000
    for tool, arguments in [
        ("memory", {"action": "add", "target": huge, "content": "c"}),
        ("memory", {"action": huge}),
        ("memory", {huge: 1}),
        ("memory", {"action": "add", "target": "memory", "content": "c", "scope": huge}),
        ("memory_search", {"query": "q", "target": huge}),
        ("memory_search", {"query": "q", "limit": 10**100_000}),
    ]:
        out = memory.call_tool(tool, arguments)
        assert not out["success"], out
        assert len(json.dumps(out)) < 1_000, (tool, len(json.dumps(out)))
        assert "chars)" in out["message"] or "bits" in out["message"], out["message"]


def test_a_secret_is_never_echoed(memory: Memory) -> None:
    for tool, arguments in [
        ("memory", {"action": "add", "target": SECRET, "content": "c"}),
        ("memory", {"action": "add", "target": "memory", "content": "c", "category": SECRET}),
        ("memory", {SECRET: "x"}),
        ("memory", {"action": "add", "target": "memory", "content": "c", "scope": SECRET}),
        ("memory", {"action": "add", "target": "memory", "content": f"my token is {SECRET}"}),
        ("memory_search", {"query": "q", "category": SECRET}),
    ]:
        out = json.dumps(memory.call_tool(tool, arguments))
        assert SECRET not in out and SECRET[:20] not in out, out
        assert "github-pat" in out, out  # the finding kind is named
    with pytest.raises(ValueError) as caught:
        memory.add("c", target=SECRET)
    assert SECRET not in str(caught.value)


def test_shown() -> None:
    assert shown("memoryy") == "'memoryy'"
    assert shown("a" * 81) == repr("a" * 80) + "…(81 chars)"
    assert shown(SECRET).startswith("(a value withheld") and "github-pat" in shown(SECRET)
    straddling = "x" * 70 + " " + SECRET  # the cut at 80 falls inside the token
    assert shown(straddling).startswith("(a value withheld")
    assert shown(12) == "12" and shown(2**300) == "an integer of 301 bits"
    assert shown([1, 2]) == "a list" and shown(None) == "None"
