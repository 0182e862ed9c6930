"""No message echoes a secret (issue 26 §6): every string argument of every tool (and of the
typed `Memory` calls that take names) is given a GitHub token, alone or inside the shape the
argument expects (`custom:<token>`, `global:<token>`, `references/<token>.md`); no result,
warning or error message may contain the token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.errors import HermesMemoryError

TOKEN = "ghp_" + "R7kPq2ZxW9mLs4TbVn8YcJ3hFd6GaE1uKo5i"
#: the same token inside the shapes the arguments expect
SHAPES = (
    TOKEN,
    f"custom:{TOKEN}",
    f"agent:{TOKEN}",
    f"user:{TOKEN}",
    f"global:{TOKEN}",
    f"project:{TOKEN}:deploy",
    f"project:web:{TOKEN}",
    f"references/{TOKEN}.md",
    f"{TOKEN}/x",
)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Any]:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(json.dumps({"projectName": "web"}))
    with pi_hermes_memory.open(agent_root=root, cwd=tmp_path, environ={}) as opened:
        assert opened.add("Deploys run on Fridays").success
        made = opened.call_tool(
            "skill",
            {
                "action": "create",
                "scope": "global",
                "name": "deploy",
                "description": "Deploy the site",
                "when_to_use": "Before a release",
                "procedure_steps": ["Run the tests"],
            },
        )
        assert made["success"], made
        yield opened


def _string_fields(schema: dict[str, Any]) -> list[str]:
    return [k for k, v in schema.get("properties", {}).items() if v.get("type") == "string"]


def _actions(schema: dict[str, Any]) -> list[str | None]:
    action = schema.get("properties", {}).get("action")
    return list(action["enum"]) if action and "enum" in action else [None]


def _base(tool: str, action: str | None) -> dict[str, Any]:
    base: dict[str, Any] = {
        "memory": {"target": "memory", "content": "a fact", "old_text": "Deploys"},
        "memory_search": {"query": "deploys"},
        "session_search": {"query": "deploys"},
        "skill": {
            "skill_id": "global:deploy",
            "name": "other",
            "description": "d",
            "content": "c",
            "section": "Procedure",
            "path": "references/a.md",
            "visibility_action": "hide",
            "skill_ids": ["global:deploy"],
        },
        "memory_skill_stats": {},
    }[tool]
    return base | ({"action": action} if action is not None else {})


def _calls(memory: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    for definition in memory.tool_definitions():
        schema = definition.parameters
        for action in _actions(schema):
            for field in _string_fields(schema):
                for shape in SHAPES:
                    yield definition.name, _base(definition.name, action) | {field: shape}
            for field, spec in schema.get("properties", {}).items():
                if spec.get("type") == "array" and spec.get("items", {}).get("type") == "string":
                    for shape in SHAPES:
                        yield definition.name, _base(definition.name, action) | {field: [shape]}


def test_no_tool_message_echoes_a_secret_given_in_any_string_argument(memory: Any) -> None:
    leaks = []
    count = 0
    for name, arguments in _calls(memory):
        count += 1
        try:
            text = json.dumps(memory.call_tool(name, arguments), default=str, ensure_ascii=False)
        except HermesMemoryError as exc:
            text = str(exc)
        if TOKEN in text:
            leaks.append(f"{name} {json.dumps(arguments)[:160]} -> {text[:300]}")
    assert count > 500
    assert not leaks, "\n".join(leaks[:20]) + f"\n({len(leaks)} leaks)"


def _typed_calls(memory: Any) -> Iterator[tuple[str, Any]]:
    for shape in SHAPES:
        yield "add scope", lambda s=shape: memory.add("a fact", scope=s)
        yield "add target", lambda s=shape: memory.add("a fact", target=s)
        yield "add category", lambda s=shape: memory.add("x", target="failure", category=s)
        yield "add kind", lambda s=shape: memory.add("a fact", kind=s)
        yield "replace scope", lambda s=shape: memory.replace("Deploys", "b", scope=s)
        yield "replace old", lambda s=shape: memory.replace(s, "b")
        yield "remove", lambda s=shape: memory.remove(s)
        yield "remove scope", lambda s=shape: memory.remove("Deploys", scope=s)
        yield "restore", lambda s=shape: memory.restore(s)
        yield "purge", lambda s=shape: memory.purge(s, dry_run=True)
        yield "update", lambda s=shape: memory.update(s, "b")
        yield "delete", lambda s=shape: memory.delete(s)
        yield "promote", lambda s=shape: memory.promote(s)
        yield "entries", lambda s=shape: memory.entries(s)
        yield "search target", lambda s=shape: memory.search("x", target=s)
        yield "session_search project", lambda s=shape: memory.session_search("x", project=s)
        yield "session_search role", lambda s=shape: memory.session_search("x", role=s)
        yield "record_message", lambda s=shape: memory.record_message("s1", s, "hello")
        yield (
            "record project",
            lambda s=shape: memory.record_message("s1", "user", "hello", project=s),
        )
        yield "skill_stats", lambda s=shape: memory.skill_stats(skill_id=s)
        yield "tool_schemas", lambda s=shape: memory.tool_schemas(s)
        yield "batch", lambda s=shape: memory.batch([{"action": "add", "target": s}])


def test_no_typed_api_message_echoes_a_secret(memory: Any) -> None:
    leaks = []
    for label, call in _typed_calls(memory):
        try:
            text = repr(call())
        except (HermesMemoryError, ValueError, TypeError) as exc:
            text = str(exc)
        if TOKEN in text:
            leaks.append(f"{label} -> {text[:300]}")
    assert not leaks, "\n".join(leaks)
