"""`pi-hermes-memory get/update/delete/history/tools` as real processes (ADR 0028)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_cli import cli

SECRET = "ghp_" + "A1b2" * 9


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


def _add(root: Path, text: str) -> str:
    done = cli(root, "add", text, "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["entry_id"])


def test_get_update_history_delete(root: Path) -> None:
    """ADR 0074: add -> update ID -> update ID -> delete ID, all with the id `add` returned."""
    a = _add(root, "Node 20 is the runtime")
    listed = json.loads(cli(root, "list", "--json").stdout)
    assert [e["id"] for e in listed] == [a]

    got = cli(root, "get", a)
    assert got.returncode == 0 and a in got.stdout and "Node 20 is the runtime" in got.stdout
    assert json.loads(cli(root, "get", a, "--json").stdout)["id"] == a

    updated = cli(root, "update", a, "Node 22 is the runtime", "--json")
    assert updated.returncode == 0, updated.stderr
    first = json.loads(updated.stdout)
    assert first["entry_id"] == a and first["version"] == 2
    b = first["version_id"]  # the second version's own id
    assert b != a

    again = cli(root, "update", a, "Node 24 is the runtime", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["entry_id"] == a and json.loads(again.stdout)["version"] == 3
    current = json.loads(cli(root, "get", a, "--json").stdout)
    assert current["text"] == "Node 24 is the runtime" and current["id"] == a
    assert current["version"] == 3
    listed = json.loads(cli(root, "list", "--json").stdout)
    assert [(e["id"], e["version"]) for e in listed] == [(a, 3)]
    found = json.loads(cli(root, "search", "Node runtime", "--json").stdout)
    assert [(h["id"], h["version"]) for h in found["results"]] == [(a, 3)]

    history = cli(root, "history", a, "--json")
    assert history.returncode == 0
    rows = json.loads(history.stdout)
    assert [(e["id"], e["version"]) for e in rows] == [(a, 1), (a, 2), (a, 3)]
    assert rows[0]["version_id"] == a and rows[1]["version_id"] == b
    assert json.loads(cli(root, "history", b, "--json").stdout) == rows  # any version's id
    text = cli(root, "history", a).stdout.splitlines()
    assert text[0].startswith(f"{a}@1  [memory] Node 20") and text[2].startswith(f"{a}@3  ")
    v1 = json.loads(cli(root, "get", f"{a}@1", "--json").stdout)
    assert v1["text"] == "Node 20 is the runtime" and v1["superseded_by"] == b
    assert json.loads(cli(root, "get", b, "--json").stdout)["text"] == "Node 22 is the runtime"

    # naming an old version keeps optimistic concurrency: superseded, naming the memory's id
    stale = cli(root, "update", b, "Node 26 is the runtime")
    assert stale.returncode == 1 and a in stale.stdout
    pinned = json.loads(cli(root, "delete", f"{a}@2", "--json").stdout)
    assert pinned["status"] == "superseded" and pinned["entry_id"] == a

    deleted = cli(root, "delete", a)
    assert deleted.returncode == 0 and "Removed" in deleted.stdout, deleted.stdout
    gone = cli(root, "delete", a, "--json")
    assert gone.returncode == 1 and json.loads(gone.stdout)["status"] == "gone"


def test_unknown_ids_exit_1_and_usage_errors_exit_2(root: Path) -> None:
    _add(root, "anything")
    for args in (("get", "nope"), ("history", "nope"), ("delete", "nope"), ("update", "nope", "x")):
        done = cli(root, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    assert json.loads(cli(root, "get", "nope", "--json").stdout) is None
    assert json.loads(cli(root, "history", "nope", "--json").stdout) == []
    for args in (("get",), ("update", "only-an-id"), ("tools", "--format", "gemini")):
        done = cli(root, *args)
        assert done.returncode == 2, (args, done.stderr)


@pytest.mark.parametrize("fmt", ["openai", "openai-responses", "anthropic", "mcp"])
def test_tools_prints_loadable_json(root: Path, fmt: str) -> None:
    done = cli(root, "tools", "--format", fmt)
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    names = [t.get("function", t)["name"] for t in tools]
    assert names[:2] == ["memory", "memory_search"] and "session_search" in names
    strict = json.loads(cli(root, "tools", "--format", fmt, "--strict").stdout)
    assert strict != tools


def test_tools_defaults_to_openai(root: Path) -> None:
    done = json.loads(cli(root, "tools").stdout)
    assert done[0]["type"] == "function" and done[0]["function"]["name"] == "memory"


def test_cli_never_echoes_a_secret_or_a_huge_value(root: Path) -> None:
    refused = cli(root, "add", "x", "--target", SECRET)
    assert refused.returncode == 2
    assert SECRET not in refused.stderr and "github-pat" in refused.stderr
    big = "y" * 100_000
    clipped = cli(root, "add", "x", "--target", big)
    assert clipped.returncode == 2 and len(clipped.stderr) < 2_000
    tool = cli(root, "tool", "memory", json.dumps({"action": "add", "target": SECRET}))
    assert tool.returncode == 1 and SECRET not in tool.stdout + tool.stderr
