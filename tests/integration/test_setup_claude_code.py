"""`setup claude-code` on real files in a temporary HOME (issue 30 §2, ADR 0090): install,
idempotent, foreign entries kept value for value, uninstall removes only ours, unreadable
files refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pi_hermes_memory.adapters.hosts.base import BACKUP_SUFFIX
from pi_hermes_memory.adapters.hosts.claude_code import EVENTS, is_our_hook

FOREIGN_SERVER = {"command": "npx", "args": ["-y", "@acme/mcp"], "env": {"TOKEN_ENV": "X"}}
FOREIGN_HOOK = {"type": "command", "command": "echo hello", "timeout": 3}
FOREIGN_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(make test)"]},
    "hooks": {
        "PostToolUse": [{"matcher": "Write|Edit", "hooks": [FOREIGN_HOOK]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}


@pytest.fixture
def where(tmp_path: Path) -> dict[str, Path]:
    paths = {"home": tmp_path / "home", "agent": tmp_path / "agent", "project": tmp_path / "p"}
    for path in paths.values():
        path.mkdir()
    return paths


def setup(where: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(where["home"]), "PI_CODING_AGENT_DIR": str(where["agent"])}
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli", "setup", "claude-code", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=where["project"],
        timeout=120,
    )


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _ours(settings: dict[str, Any]) -> dict[str, int]:
    return {
        event: sum(is_our_hook(h) for g in groups for h in g.get("hooks", []))
        for event, groups in settings.get("hooks", {}).items()
    }


def test_user_install_is_idempotent_and_keeps_foreign_entries(where: dict[str, Path]) -> None:
    claude_json = where["home"] / ".claude.json"
    settings_json = where["home"] / ".claude" / "settings.json"
    claude_json.write_text(
        json.dumps({"numStartups": 7, "mcpServers": {"acme": FOREIGN_SERVER}}), encoding="utf-8"
    )
    settings_json.parent.mkdir()
    settings_json.write_text(json.dumps(FOREIGN_SETTINGS), encoding="utf-8")

    done = setup(where)
    assert done.returncode == 0, done.stderr
    claude = _json(claude_json)
    assert claude["numStartups"] == 7 and claude["mcpServers"]["acme"] == FOREIGN_SERVER
    ours = claude["mcpServers"]["pi-hermes-memory"]
    assert ours["args"][-1] == "mcp" and Path(ours["command"]).is_absolute()
    assert ours["env"] == {"PI_CODING_AGENT_DIR": str(where["agent"])}
    settings = _json(settings_json)
    assert (
        settings["model"] == "opus" and settings["permissions"] == FOREIGN_SETTINGS["permissions"]
    )
    assert settings["hooks"]["PostToolUse"][0] == FOREIGN_SETTINGS["hooks"]["PostToolUse"][0]
    assert settings["hooks"]["Notification"] == FOREIGN_SETTINGS["hooks"]["Notification"]
    assert _ours(settings) == {**dict.fromkeys(EVENTS, 1), "Notification": 0}
    # backups of what we replaced
    assert _json(settings_json.with_name("settings.json" + BACKUP_SUFFIX)) == FOREIGN_SETTINGS
    # the LLM preset, since there was no llm section
    assert _json(where["agent"] / "hermes-memory-config.json") == {"llm": {"provider": "claude"}}

    before = (claude_json.read_bytes(), settings_json.read_bytes())
    again = setup(where)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert (claude_json.read_bytes(), settings_json.read_bytes()) == before

    # uninstall: only ours goes; the rest is what it was, value for value
    gone = setup(where, "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert _json(claude_json) == {"numStartups": 7, "mcpServers": {"acme": FOREIGN_SERVER}}
    assert _json(settings_json) == FOREIGN_SETTINGS
    assert not (where["agent"] / "hermes-memory-config.json").exists()
    assert "nothing changed" in setup(where, "--uninstall").stdout


def test_a_moved_install_replaces_our_hooks_in_place(where: dict[str, Path]) -> None:
    settings_json = where["home"] / ".claude" / "settings.json"
    settings_json.parent.mkdir()
    old = {"type": "command", "command": "/old/venv/bin/pi-hermes-memory hook Stop", "timeout": 1}
    settings_json.write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [FOREIGN_HOOK, old, dict(old)]}]}}),
        encoding="utf-8",
    )
    assert setup(where).returncode == 0
    stop = _json(settings_json)["hooks"]["Stop"]
    assert len(stop) == 1 and stop[0]["hooks"][0] == FOREIGN_HOOK  # same group, same place
    assert len(stop[0]["hooks"]) == 2 and "/old/" not in stop[0]["hooks"][1]["command"]


def test_project_scope_writes_the_project_files(where: dict[str, Path]) -> None:
    done = setup(where, "--project")
    assert done.returncode == 0, done.stderr
    assert "pi-hermes-memory" in _json(where["project"] / ".mcp.json")["mcpServers"]
    assert _ours(_json(where["project"] / ".claude" / "settings.json")) == dict.fromkeys(EVENTS, 1)
    assert not (where["home"] / ".claude.json").exists()
    gone = setup(where, "--project", "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert not (where["project"] / ".mcp.json").exists()  # only ours was there
    assert not (where["project"] / ".claude" / "settings.json").exists()


def test_an_llm_section_the_person_wrote_is_kept(where: dict[str, Path]) -> None:
    config = where["agent"] / "hermes-memory-config.json"
    mine = {"llm": {"provider": "pi"}, "nudgeInterval": 4}
    config.write_text(json.dumps(mine), encoding="utf-8")
    assert setup(where).returncode == 0
    assert setup(where, "--uninstall").returncode == 0
    assert _json(config) == mine


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        (".claude.json", b"{not json"),
        (".claude/settings.json", b'{"hooks": [1]}'),
        (".claude/settings.json", b"[]"),
    ],
)
def test_an_unreadable_file_is_refused_and_nothing_changes(
    where: dict[str, Path], name: str, raw: bytes
) -> None:
    path = where["home"] / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(raw)
    done = setup(where)
    assert done.returncode == 1
    assert name.split("/")[-1] in done.stderr and "Traceback" not in done.stderr
    assert path.read_bytes() == raw
    assert sorted(p.name for p in where["home"].rglob("*") if p.is_file()) == [path.name]
    assert not (where["agent"] / "hermes-memory-config.json").exists()


def test_dry_run_prints_the_diff_and_writes_nothing(where: dict[str, Path]) -> None:
    done = setup(where, "--dry-run")
    assert (
        done.returncode == 0
        and "+++ " in done.stdout
        and "hook_client UserPromptSubmit" in done.stdout
    )
    assert not list(where["home"].iterdir()) and not list(where["agent"].iterdir())


def test_the_hooks_run_the_thin_client_and_it_answers(where: dict[str, Path]) -> None:
    """Setup writes the stdlib-only hook client (ADR 0096), and the line runs as Claude Code
    runs it (through a shell): the first call answers in-process."""
    assert setup(where).returncode == 0
    settings = _json(where["home"] / ".claude" / "settings.json")
    (start,) = [h for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    words = start["command"].split()
    assert words[0] == f"PI_CODING_AGENT_DIR={where['agent']}"
    assert words[1:] == [
        sys.executable,
        "-m",
        "pi_hermes_memory.adapters.hosts.hook_client",
        "SessionStart",
    ]
    runtime = where["home"] / "run"
    runtime.mkdir(mode=0o700)
    payload = {"session_id": "s", "cwd": str(where["project"]), "hook_event_name": "SessionStart"}
    env = {
        **os.environ,
        "HOME": str(where["home"]),
        "XDG_RUNTIME_DIR": str(runtime),
        "PI_HERMES_MEMORY_HOOK_IDLE_S": "1",  # the server it starts leaves soon
    }
    env.pop("PI_CODING_AGENT_DIR", None)
    done = subprocess.run(
        ["/bin/sh", "-c", start["command"]],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart" and "memory" in answer["additionalContext"]
