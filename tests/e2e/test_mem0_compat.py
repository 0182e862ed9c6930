"""mem0's method and result shapes over a real store (issue 31 §4, ADR 0095)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.compat.mem0 import Memory
from pi_hermes_memory.errors import InvalidArgument, WriteRefused

from tests.support.fake_llm import FAKE_LLM

SECRET = "use ghp_" + "A1b2" * 9 + " for CI"
ITEM_KEYS = {"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id"}


def _open(tmp_path: Path) -> Memory:
    return Memory(agent_root=tmp_path / "agent", cwd=tmp_path, environ={})


@pytest.fixture
def m(tmp_path: Path) -> Iterator[Memory]:
    memory = _open(tmp_path)
    yield memory
    memory.close()


def test_add_search_get_all_have_mem0s_shapes(m: Memory) -> None:
    added = m.add("My favourite colour is green", user_id="alice", infer=False)
    [result] = added["results"]
    assert set(result) == {"id", "memory", "event"} and result["event"] == "ADD"
    found = m.search("favourite colour", filters={"user_id": "alice"})["results"]
    assert [r["id"] for r in found] == [result["id"]]
    assert ITEM_KEYS | {"score"} <= set(found[0]) and 0 < found[0]["score"] <= 1
    assert found[0]["user_id"] == "alice" and len(found[0]["hash"]) == 32
    # the mem0 v1 spelling (user_id= at the top level, limit=) works too
    assert m.search("colour", user_id="alice", limit=1)["results"][0]["id"] == result["id"]
    listed = m.get_all(filters={"user_id": "alice"})["results"]
    assert [r["memory"] for r in listed] == ["My favourite colour is green"]


def test_users_are_isolated_scopes(m: Memory, tmp_path: Path) -> None:
    alice = m.add("I live in Lyon", user_id="alice", infer=False)["results"][0]["id"]
    m.add("I live in Oslo", user_id="bob", infer=False)
    assert [r["memory"] for r in m.search("live", filters={"user_id": "bob"})["results"]] == [
        "I live in Oslo"
    ]
    assert alice not in {r["id"] for r in m.get_all(filters={"user_id": "bob"})["results"]}
    # the rows are user:<id> scoped rows of the user profile layer
    with pi_hermes_memory.open(agent_root=tmp_path / "agent", cwd=tmp_path, environ={}) as plain:
        assert plain.entries("user") == []  # a session without access sees neither
    grant = {"scopes": {"agentAccess": {"admin": ["global", "user:alice"]}}}
    with pi_hermes_memory.open(
        agent_root=tmp_path / "agent", cwd=tmp_path, environ={}, agent_id="admin", overrides=grant
    ) as admin:
        assert [(e.id, e.scope) for e in admin.entries("user")] == [(alice, "user:alice")]


def test_update_keeps_the_id_and_history_is_the_supersede_chain(m: Memory) -> None:
    memory_id = m.add("I drink tea", user_id="alice", infer=False)["results"][0]["id"]
    assert m.update(memory_id, "I drink coffee") == {"message": "Memory updated successfully!"}
    got = m.get(memory_id)
    assert got is not None and got["id"] == memory_id and got["memory"] == "I drink coffee"
    assert got["updated_at"] is not None
    history = m.history(memory_id)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I drink tea"),
        ("UPDATE", "I drink tea", "I drink coffee"),
    ]
    assert {h["memory_id"] for h in history} == {memory_id}
    assert m.delete(memory_id) == {"message": "Memory deleted successfully!"}
    assert m.get(memory_id) is None
    assert m.history(memory_id)[-1] | {"id": None, "created_at": None} == {
        "id": None, "memory_id": memory_id, "old_memory": "I drink coffee", "new_memory": None,
        "event": "DELETE", "created_at": None, "updated_at": None, "is_deleted": True,
        "actor_id": None, "role": None,
    }  # fmt: skip


def test_a_new_object_finds_ids_through_the_identity(m: Memory, tmp_path: Path) -> None:
    memory_id = m.add("I play chess", user_id="alice", infer=False)["results"][0]["id"]
    m.close()
    again = _open(tmp_path)
    try:
        assert again.get(memory_id) is None  # no identity used yet: documented
        got = again.get(memory_id, user_id="alice")
        assert got is not None and got["memory"] == "I play chess"
        with pytest.raises(InvalidArgument, match="not found"):
            again.update("01UNKNOWN", "x", user_id="alice")
    finally:
        again.close()


def test_a_secret_is_refused_with_a_typed_error_and_not_stored(m: Memory) -> None:
    with pytest.raises(WriteRefused) as refused:
        m.add(SECRET, user_id="alice", infer=False)
    assert refused.value.status == "blocked"
    assert m.get_all(filters={"user_id": "alice"})["results"] == []


def test_a_fact_already_held_is_event_none(m: Memory) -> None:
    first = m.add("I live in Lyon", user_id="alice", infer=False)["results"][0]
    again = m.add("I live in Lyon", user_id="alice", infer=False)["results"][0]
    assert again["event"] == "NONE" and len(m.get_all(filters={"user_id": "alice"})["results"]) == 1
    assert first["event"] == "ADD"


def test_without_an_llm_the_users_statements_are_captured(m: Memory) -> None:
    added = m.add(
        [
            {"role": "user", "content": "I work as a nurse in Lyon. What time is it?"},
            {"role": "assistant", "content": "The assistant lives on a server in Paris."},
        ],
        user_id="alice",
    )
    texts = [r["memory"] for r in added["results"]]
    assert texts == ["I work as a nurse in Lyon."]


def test_with_an_llm_facts_are_extracted(tmp_path: Path) -> None:
    reply = json.dumps({"facts": ["Alice is vegetarian", "Alice lives in Lyon"]})
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "hermes-memory-config.json").write_text(
        json.dumps({"llm": {"provider": "command", "command": [sys.executable, FAKE_LLM]}}),
        encoding="utf-8",
    )
    with Memory(
        agent_root=tmp_path / "agent", cwd=tmp_path, environ={"FAKE_LLM_REPLY": reply}
    ) as m:
        added = m.add("hi! btw I don't eat meat and I'm in Lyon", user_id="alice")
        assert [(r["memory"], r["event"]) for r in added["results"]] == [
            ("Alice is vegetarian", "ADD"),
            ("Alice lives in Lyon", "ADD"),
        ]


def test_agent_and_run_identities_and_metadata(m: Memory) -> None:
    a = m.add("Deploys go through make release", agent_id="ops", infer=False)["results"][0]
    r = m.add(
        "This run targets staging", run_id="r1", infer=False,
        metadata={"kind": "decision", "importance": 0.9},
    )["results"][0]  # fmt: skip
    got = m.get(a["id"])
    assert got is not None and got["agent_id"] == "ops"
    got = m.get(r["id"])
    assert got is not None and got["run_id"] == "r1"
    assert got["metadata"] == {"kind": "decision", "importance": 0.9}
    assert m.search("release", filters={"run_id": "r1"})["results"] == []


def test_delete_all_and_reset_remove_what_restore_brings_back(m: Memory, tmp_path: Path) -> None:
    m.add("I live in Lyon", user_id="alice", infer=False)
    m.add("I live in Oslo", user_id="bob", infer=False)
    m.delete_all(user_id="alice")
    assert m.get_all(filters={"user_id": "alice"})["results"] == []
    assert len(m.get_all(filters={"user_id": "bob"})["results"]) == 1
    m.reset()
    assert m.get_all(filters={"user_id": "bob"})["results"] == []


def test_bad_arguments_are_clear_errors(m: Memory) -> None:
    with pytest.raises(InvalidArgument, match="user_id, agent_id or run_id"):
        m.add("x", infer=False)
    with pytest.raises(InvalidArgument, match="metadata"):
        m.search("x", filters={"user_id": "a", "city": "Lyon"})
    with pytest.raises(InvalidArgument, match="messages"):
        m.add(42, user_id="a")
    with pytest.raises(InvalidArgument, match="scope"):
        m.add("x", user_id="not valid!", infer=False)


def test_a_near_duplicate_fact_is_none_and_a_raw_add_is_kept(tmp_path: Path) -> None:
    near = "The deploy script lives in tools/deploy.sh now"
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "hermes-memory-config.json").write_text(
        json.dumps({"llm": {"provider": "command", "command": [sys.executable, FAKE_LLM]}}),
        encoding="utf-8",
    )
    environ = {"FAKE_LLM_REPLY": json.dumps({"facts": [near]})}
    with Memory(agent_root=tmp_path / "agent", cwd=tmp_path, environ=environ) as m:
        first = m.add("The deploy script lives in tools/deploy.sh", user_id="a", infer=False)
        held = first["results"][0]["id"]
        inferred = m.add("where is the deploy script?", user_id="a")["results"]
        assert [(r["id"], r["event"]) for r in inferred] == [(held, "NONE")]
        raw = m.add(near, user_id="a", infer=False)["results"][0]
        assert raw["event"] == "ADD" and raw["id"] != held  # infer=False stores what it is given
