"""`pi-hermes-memory search` and the memory_search tool, run as a real process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
    )


def test_add_then_search(root: Path) -> None:
    assert cli(root, "add", "The test command is make test").returncode == 0
    added = cli(root, "add", "项目构建命令是 make build", "--target", "project", "--project", "web")
    assert added.returncode == 0, added.stderr
    found = cli(root, "search", "test command")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0] == '1 memory matches "test command" (best first):'
    # the score (0-1, two decimals) and the id that get/update/delete take (ADR 0078)
    assert re.match(r"\[1\] [01]\.\d\d \S+ \(memory, ", lines[1]) and lines[1].endswith(
        ") The test command is make test"
    )
    cjk = cli(root, "search", "构建命令", "--project", "web")
    assert "(project:web, " in cjk.stdout and "项目构建命令是 make build" in cjk.stdout
    isolated = cli(root, "search", "构建命令", "--project", "other")
    assert isolated.returncode == 0
    assert isolated.stdout.startswith('No memories match "构建命令"')


def test_json_history_and_options(root: Path) -> None:
    cli(root, "add", "Staging deploys need the VPN", "--target", "project", "--project", "web")
    replaced = cli(
        root,
        "tool",
        "memory",
        json.dumps(
            {
                "action": "replace",
                "target": "project",
                "old_text": "VPN",
                "content": "Staging deploys need the VPN and a token",
            }
        ),
        "--project",
        "web",
    )
    assert replaced.returncode == 0, replaced.stdout
    out = cli(root, "search", "staging", "--history", "--json", "--project", "web")
    assert out.returncode == 0
    data = json.loads(out.stdout)
    assert data["status"] == "ok" and len(data["results"]) == 2
    assert sum("superseded_by" in r for r in data["results"]) == 1
    assert "(superseded by " in data["message"]
    one = json.loads(cli(root, "search", "staging", "--json", "--project", "web").stdout)
    assert [r["text"] for r in one["results"]] == ["Staging deploys need the VPN and a token"]
    limited = cli(root, "search", "staging", "--history", "--limit", "1", "--project", "web")
    assert len(limited.stdout.splitlines()) == 2


def test_exit_statuses(root: Path) -> None:
    cli(
        root,
        "add",
        "pip failed on old setuptools",
        "--target",
        "failure",
        "--category",
        "tool-quirk",
    )
    assert cli(root, "search", "kubernetes").returncode == 0  # ran, found nothing
    quirk = cli(root, "search", "pip", "--category", "tool-quirk")
    assert quirk.returncode == 0 and "tool-quirk" in quirk.stdout
    invalid = cli(root, "search", "?!")
    assert invalid.returncode == 1 and "nothing to search for" in invalid.stderr
    invalid_json = cli(root, "search", "?!", "--json")
    assert invalid_json.returncode == 1
    assert json.loads(invalid_json.stdout)["status"] == "invalid_arguments"
    assert cli(root, "search", "pip", "--limit", "21").returncode == 2
    assert cli(root, "search", "pip", "--limit", "x").returncode == 2
    mismatch = cli(root, "search", "pip", "--target", "memory", "--category", "insight")
    assert mismatch.returncode == 2 and "--category" in mismatch.stderr


def test_tool_command_runs_memory_search(root: Path) -> None:
    cli(root, "add", "Prefers tabs over spaces", "--target", "user")
    result = cli(root, "tool", "memory_search", '{"query": "tabs", "target": "user"}')
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["status"] == "ok" and data["results"][0]["text"] == "Prefers tabs over spaces"
    hostile = cli(root, "tool", "memory_search", json.dumps({"query": "\"'; DROP TABLE memories"}))
    assert hostile.returncode == 0 and json.loads(hostile.stdout)["status"] in ("ok", "no_results")


def test_target_memory_returns_project_and_global_memory(root: Path) -> None:
    # the seed's target `memory` (ADR 0027): global rows with the current project's rows
    cli(root, "add", "Release notes live in docs/releases", "--target", "memory")
    cli(root, "add", "Release tags are signed", "--target", "project", "--project", "web")
    cli(root, "add", "Release builds use clang", "--target", "project", "--project", "api")
    arguments = '{"query": "release", "target": "memory"}'
    tool = cli(root, "tool", "memory_search", arguments, "--project", "web")
    assert tool.returncode == 0, tool.stderr
    data = json.loads(tool.stdout)
    assert sorted((r["target"], r["project"], r["text"]) for r in data["results"]) == [
        ("memory", None, "Release notes live in docs/releases"),
        ("project", "web", "Release tags are signed"),
    ]
    narrowed = cli(root, "search", "release", "--target", "project", "--project", "web", "--json")
    assert [r["text"] for r in json.loads(narrowed.stdout)["results"]] == [
        "Release tags are signed"
    ]
    plain = cli(root, "search", "release", "--target", "memory", "--project", "web")
    assert "(project:web, " in plain.stdout and "(memory, " in plain.stdout
    assert "clang" not in plain.stdout
    assert "project's memory only" in " ".join(cli(root, "search", "--help").stdout.split())
