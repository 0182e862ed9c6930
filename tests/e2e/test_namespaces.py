"""agent:/custom:/user: scopes end to end: no path leaks a row across the access map."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory

ACCESS = {
    "scopes": {
        "agentAccess": {
            "coder": ["global", "agent:coder", "custom:team"],
            "reviewer": ["global", "agent:reviewer", "custom:team", "user:ann"],
        }
    }
}
SECRET_PLAN = "Coder plans to refactor the billing module next sprint"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(json.dumps(ACCESS))
    return root


def as_agent(root: Path, agent: str | None, **kw: Any) -> Memory:
    return pi_hermes_memory.open(
        agent_root=root,
        environ={"HOME": str(root.parent)},
        cwd=root.parent,
        agent_id=agent,
        project="shop",
        **kw,
    )


def seed(root: Path) -> None:
    with as_agent(root, "coder") as m:
        assert m.add(SECRET_PLAN, scope="agent:coder").status == "added"
        assert m.add("The team deploys on Tuesdays", scope="custom:team").status == "added"
        assert m.add("Everyone uses UTC in logs").status == "added"


def test_rows_land_in_markdown_with_their_scope(root: Path) -> None:
    seed(root)
    folder = root / "pi-hermes-memory"
    # the file in the TypeScript extension's spelling; the scopes in its sidecar (ADR 0077)
    text = (folder / "MEMORY.md").read_text()
    assert f"{SECRET_PLAN} <!-- created=" in text and "scope=" not in text
    meta = (folder / ".MEMORY.md.meta").read_text()
    assert "scope=agent:coder" in meta and "scope=custom:team" in meta


def test_another_agent_never_sees_the_row(root: Path) -> None:
    seed(root)
    with as_agent(root, "reviewer") as m:
        texts = [e.text for e in m.entries()]
        assert SECRET_PLAN not in texts
        assert "The team deploys on Tuesdays" in texts and "Everyone uses UTC in logs" in texts
        assert m.search("refactor billing module").hits == ()
        tool = m.call_tool("memory_search", {"query": "billing refactor sprint"})
        assert SECRET_PLAN not in json.dumps(tool)
        [memory] = [t for t in m.insights().targets if t.target == "memory"]
        assert memory.active == 2 and SECRET_PLAN not in memory.latest
        # edits cannot reach it, even by naming its scope
        for args in (
            {"action": "remove", "target": "memory", "old_text": "billing", "scope": "agent:coder"},
            {"action": "add", "target": "memory", "content": "x y z", "scope": "agent:coder"},
        ):
            assert m.call_tool("memory", args)["status"] == "forbidden"
        batch = m.call_tool(
            "memory",
            {
                "operations": [
                    {
                        "action": "add",
                        "target": "memory",
                        "content": "ok here",
                        "scope": "agent:reviewer",
                    },
                    {
                        "action": "replace",
                        "target": "memory",
                        "old_text": "billing",
                        "content": "hijacked",
                        "scope": "agent:coder",
                    },
                ]
            },
        )
        assert [r["status"] for r in batch["results"]] == ["added", "forbidden"]
        # global rows: the plan's text is not found there, so it can be neither removed nor demoted
        assert m.remove("billing").status == "not_found"
        assert m.demote("billing").status == "not_found"
    with as_agent(root, "coder") as m:
        assert SECRET_PLAN in [e.text for e in m.entries(scope="agent:coder")]


def test_same_text_in_two_scopes_is_not_a_duplicate(root: Path) -> None:
    seed(root)
    with as_agent(root, "reviewer") as m:
        assert m.add(SECRET_PLAN, scope="agent:reviewer").status == "added"


def test_without_an_agent_only_the_global_layer(root: Path) -> None:
    seed(root)
    with as_agent(root, None) as m:
        assert [e.text for e in m.entries("memory")] == ["Everyone uses UTC in logs"]
        assert m.add("team note", scope="custom:team").status == "forbidden"


def test_user_scopes_live_in_user_md(root: Path) -> None:
    with as_agent(root, "reviewer") as m:
        assert m.add("Ann prefers tabs", target="user", scope="user:ann").status == "added"
        assert m.add("Ann prefers tabs", target="memory", scope="user:ann").status == "invalid"
    assert "scope=user:ann" in (root / "pi-hermes-memory" / ".USER.md.meta").read_text()
    with as_agent(root, "coder") as m:
        assert m.entries("user") == []


def test_invalid_agent_id_is_a_clear_error(root: Path) -> None:
    with pytest.raises(ValueError, match="agent_id"):
        as_agent(root, "bad id")
