"""`pi-hermes-memory preview-context` and `learn` as real processes (ADR 0037)."""

from __future__ import annotations

import json
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.domain.prompt.blocks import estimate_tokens

from tests.e2e.test_cli import cli


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"projectName": "web", "memoryMode": "legacy-inject"})
    )
    return root


def test_preview_context_json_is_what_the_prompt_gets(root: Path) -> None:
    assert cli(root, "add", "--target", "project", "Web uses pnpm").returncode == 0
    (root / "pi-hermes-memory" / "STANDING.md").write_text("- Never push to main\n")
    done = cli(root, "preview-context", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["mode"] == "legacy-inject" and out["style"] == "full"
    assert out["blocks"] == ["memory-policy", "memory-context", "standing-instructions"]
    assert out["characters"] == len(out["text"])
    assert out["estimated_tokens"] == estimate_tokens(out["text"])
    assert "- Web uses pnpm" in out["text"] and "- Never push to main" in out["text"]
    with pi_hermes_memory.open(agent_root=root, cwd=root, environ={}) as memory:
        assert memory.system_prompt() == out["text"]


def test_preview_context_text_and_standing_warnings(root: Path) -> None:
    (root / "pi-hermes-memory").mkdir()
    (root / "pi-hermes-memory" / "STANDING.md").write_text("just a line\n")
    done = cli(root, "preview-context")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("mode legacy-inject, style full: ")
    assert "tokens" in done.stdout.splitlines()[0]
    assert "<standing-instructions>" in done.stdout and "- just a line" in done.stdout
    assert "warning:" in done.stderr and "not a list item" in done.stderr


def test_learn_covers_every_tool_and_every_action(root: Path) -> None:
    with pi_hermes_memory.open(agent_root=root, cwd=root, environ={}) as memory:
        definitions = memory.tool_definitions()
    done = cli(root, "learn", "--json")
    assert done.returncode == 0, done.stderr
    guide = json.loads(done.stdout)
    tools = {t["name"]: t for t in guide["tools"]}
    assert list(tools) == [d.name for d in definitions]
    text = cli(root, "learn").stdout
    for definition in definitions:
        props = definition.parameters.get("properties", {})
        actions = props.get("action", {}).get("enum", [])
        assert set(actions) <= set(tools[definition.name]["actions"])
        assert {p["name"] for p in tools[definition.name]["parameters"]} >= set(props)
        assert f"## {definition.name} (" in text
        for action in actions:
            assert action in text
    problems = " ".join(t["problem"] for t in guide["troubleshooting"])
    for topic in ("busy", "read-only", "hand edits", "embeddings off", "scanner"):
        assert topic in problems


def test_learn_one_topic_and_an_unknown_one(root: Path) -> None:
    one = cli(root, "learn", "--topic", "skill", "--json")
    assert one.returncode == 0, one.stderr
    assert [t["name"] for t in json.loads(one.stdout)["tools"]] == ["skill"]
    bad = cli(root, "learn", "--topic", "nope")
    assert bad.returncode == 2 and "no tool named 'nope'" in bad.stderr
