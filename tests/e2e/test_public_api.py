"""The public API end to end on a real agent root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


def open_memory(root: Path, **kw: Any) -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(root.parent)}, cwd=root.parent, **kw
    )


def test_round_trip_through_reopen(root: Path) -> None:
    with open_memory(root, project="app") as m:
        assert m.add("Staging runs on Fly.io", target="project").status == "added"
        assert m.add("Prefers terse commit messages", target="user").status == "added"
        assert m.add(
            "pip install -e failed: old setuptools", target="failure", category="tool-quirk"
        ).success
    with open_memory(root, project="app") as m:
        assert [e.text for e in m.entries("project")] == ["Staging runs on Fly.io"]
        failure = m.entries("failure")[0]
        assert failure.category == "tool-quirk" and failure.project == "app"
    with open_memory(root, project="other") as m:
        assert m.entries("project") == []
        assert [e.text for e in m.entries("user")] == ["Prefers terse commit messages"]


def test_tool_definitions_are_json_schemas(root: Path) -> None:
    with open_memory(root) as m:
        tool = next(t for t in m.tool_definitions() if t.name == "memory")
    assert tool.name == "memory"
    schema = tool.parameters
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "action",
        "target",
        "content",
        "old_text",
        "id",
        "category",
        "force",
        "scope",
        "operations",
    }
    assert tool.as_openai()["function"]["name"] == "memory"


BAD_ARGUMENTS: list[tuple[Any, str]] = [
    ({"action": "promote", "target": "memory", "old_text": "x"}, "promote takes no target"),
    ({"action": "demote"}, "old_text (or id) is required for demote"),
    ({"action": "promote", "old_text": "x", "content": "y"}, "content is not used by promote"),
    (None, "JSON object"),
    ([], "JSON object"),
    ({}, "action is required"),
    ({"action": "add"}, "target is required"),
    ({"action": "add", "target": "memory"}, "content is required"),
    ({"action": "add", "target": "memory", "content": "   "}, "content is required"),
    ({"action": "add", "target": "nowhere", "content": "x"}, "target must be one of"),
    ({"action": "fly", "target": "memory", "content": "x"}, "action must be one of"),
    ({"action": "add", "target": "memory", "content": 5}, "content must be a string"),
    (
        {"action": "add", "target": "memory", "content": "x", "force": "yes"},
        "force must be a boolean",
    ),
    (
        {"action": "add", "target": "memory", "content": "x", "category": "insight"},
        "only to target 'failure'",
    ),
    (
        {"action": "add", "target": "failure", "content": "x", "category": "bogus"},
        "category must be one of",
    ),
    ({"action": "replace", "target": "memory", "content": "x"}, "old_text (or id) is required"),
    (
        {"action": "remove", "target": "memory", "old_text": "x", "force": True},
        "force applies only",
    ),
    (
        {"action": "add", "target": "memory", "content": "x", "extra": 1},
        "unknown argument(s): extra",
    ),
    ({"operations": []}, "non-empty array"),
    ({"operations": "x"}, "non-empty array"),
    (
        {"operations": [{"action": "add", "target": "memory", "content": "a"}], "action": "add"},
        "cannot be combined",
    ),
    (
        {
            "operations": [
                {"action": "add", "target": "project", "content": "a"},
                {"action": "add", "target": "user", "content": "b"},
            ]
        },
        "cannot mix project",
    ),
]


@pytest.mark.parametrize(("arguments", "message"), BAD_ARGUMENTS)
def test_bad_tool_arguments_give_precise_errors(root: Path, arguments: Any, message: str) -> None:
    with open_memory(root) as m:
        result = m.call_tool("memory", arguments)
        assert result["success"] is False and result["status"] == "invalid_arguments"
        assert message in result["message"]
        assert m.entries() == []


def test_unknown_tool(root: Path) -> None:
    with open_memory(root) as m:
        result = m.call_tool("remember_everything", {})
        assert result["success"] is False and result["status"] == "unknown_tool"
        assert result["message"].startswith("Unknown tool 'remember_everything'; tools: memory")


def test_batch_reports_per_operation_results(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Use pytest for tests")
        reply = m.call_tool(
            "memory",
            {
                "operations": [
                    {"action": "add", "target": "memory", "content": "Docs are built with mkdocs"},
                    {"action": "add", "target": "memory", "content": "use pytest for all tests"},
                    {"action": "promote", "target": "memory", "old_text": "x"},
                    {"action": "add", "target": "user", "content": "Likes dark mode"},
                ]
            },
        )
        assert reply["status"] == "partial" and reply["success"] is False
        assert [r["status"] for r in reply["results"]] == [
            "added",
            "near_duplicate",
            "invalid_arguments",
            "added",
        ]
        assert "call it on its own" in reply["results"][2]["message"]
        assert reply["results"][1]["candidates"][0]["text"] == "Use pytest for tests"
        assert [e.text for e in m.entries("memory")] == [
            "Use pytest for tests",
            "Docs are built with mkdocs",
        ]


def test_secret_is_refused_and_never_echoed(root: Path) -> None:
    key = "sk-ant-api03-" + "Ab1_" * 23 + "x" + "AA"
    with open_memory(root) as m:
        result = m.call_tool(
            "memory", {"action": "add", "target": "memory", "content": f"the key is {key}"}
        )
        assert result["status"] == "blocked"
        assert key not in str(result) and key[14:30] not in str(result)
        assert m.entries() == []


def test_hand_edited_markdown_is_imported_on_open(root: Path) -> None:
    with open_memory(root) as m:
        m.add("First fact from the agent")
    path = root / "pi-hermes-memory" / "MEMORY.md"
    path.write_text(
        path.read_text() + "§\nWritten by a person <!-- created=garbage -->\n", encoding="utf-8"
    )
    with open_memory(root) as m:
        texts = [e.text for e in m.entries("memory")]
        assert texts == [
            "First fact from the agent",
            "Written by a person <!-- created=garbage -->",
        ]
        assert any("not entry metadata" in w for w in m.warnings)
        assert m.add("A third fact").success
    assert "Written by a person <!-- created=garbage --> <!-- created=" in path.read_text()


def test_promote_and_demote_through_the_tool(root: Path) -> None:
    with open_memory(root, project="shop") as m:
        m.add("Prices are stored in cents as integers", target="project")
        up = m.call_tool("memory", {"action": "promote", "old_text": "in cents"})
        assert up["success"] is True and up["status"] == "promoted"
        assert [e.text for e in m.entries("memory")] == ["Prices are stored in cents as integers"]
        down = m.call_tool("memory", {"action": "demote", "old_text": "in cents"})
        assert down["status"] == "demoted"
    text = (root / "projects-memory" / "MEMORY.md").read_text()
    assert "Prices are stored in cents as integers <!-- created=" in text
    assert "project64=c2hvcA -->" in text  # the TypeScript extension's key (ADR 0077)
    assert "cents" not in (root / "pi-hermes-memory" / "MEMORY.md").read_text()


def test_unattributed_project_entries_are_kept_and_reported(root: Path) -> None:
    flat = root / "projects-memory" / "MEMORY.md"
    flat.parent.mkdir(parents=True)
    flat.write_text("A legacy line nobody attributed\n", encoding="utf-8")
    with open_memory(root, project="shop") as m:
        assert any("without a project= attribution" in w for w in m.warnings)
        assert m.entries("project") == []  # never visible as a project row
        assert m.project_overview().unattributed_project_entries == 1
        assert m.add("Shop uses Stripe webhooks", target="project").success
    text = flat.read_text()  # no version line: it is in the sidecar (ADR 0077)
    assert text.startswith("A legacy line nobody attributed")
    assert "project64=c2hvcA -->" in text


def test_call_tool_answers_any_tool_name_without_raising(root: Path) -> None:
    with open_memory(root, project="shop") as m:
        for name in (["memory"], None, 3, {"a": 1}, "x" * 100_000):
            result = m.call_tool(name, {})  # type: ignore[arg-type]
            assert result["status"] == "unknown_tool"
            assert len(result["message"]) < 400  # a huge name is never echoed whole
