"""Every `--json` command prints JSON on stdout, errors included (issue 28 §4, ADR 0078).

The commands are enumerated from the parser itself, so a new command is swept too: each runs
once with a bogus option (a usage error) and once as a newcomer would on an empty store.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.cli import app

#: commands that serve until stopped: their JSON is not a one-shot answer
_SERVERS = {("serve",), ("mcp",)}

#: positional arguments that let a command get past argparse (the run may still fail: then
#: the failure must be JSON too)
_ARGS: dict[tuple[str, ...], list[str]] = {
    ("tool",): ["memory", '{"action": "add", "target": "user", "content": "Prefers tabs"}'],
    ("add",): ["The test command is make test"],
    ("get",): ["01NOSUCHID"],
    ("history",): ["01NOSUCHID"],
    ("delete",): ["01NOSUCHID"],
    ("update",): ["01NOSUCHID", "new text"],
    ("restore",): ["nothing like this"],
    ("purge",): ["nothing like this"],
    ("promote",): ["nothing like this"],
    ("demote",): ["nothing like this"],
    ("search",): ["test command"],
    ("session-search",): ["test command"],
    ("import",): ["/nonexistent/export.jsonl"],
    ("migrate",): ["/nonexistent/export.json"],
    ("learn-skill",): ["--text", "Run make test before pushing."],
    ("knowledge", "search"): ["deploy"],
    ("skills", "view"): ["global:no-such-skill"],
    ("delete-bulk",): ["--scope", "custom:nothing"],
    ("skill-visibility",): ["hide", "global:no-such-skill", "--for-project", "p1"],
    ("interview",): ["--answers", "/nonexistent/answers.json"],
    ("skill-governance",): ["status"],
}


def json_commands() -> list[tuple[str, ...]]:
    """Every command path (`knowledge stats` is ("knowledge", "stats")) that takes --json."""
    found: list[tuple[str, ...]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        takes_json = any("--json" in a.option_strings for a in parser._actions)
        if path and takes_json and not any(s.required for s in subs):
            found.append(path)
        for action in subs:
            for name, child in action.choices.items():
                walk(child, (*path, name))

    walk(app._parser(), ())
    return found


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    env.pop("PI_MEMORY_KNOWLEDGE_PATHS", None)
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_the_sweep_sees_the_commands() -> None:
    commands = json_commands()
    assert ("add",) in commands
    assert ("knowledge", "stats") in commands
    assert ("skills", "view") in commands
    assert len(commands) >= 40


@pytest.mark.parametrize("command", json_commands(), ids=" ".join)
def test_a_usage_error_is_json(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code = app.main([*command, *_ARGS.get(command, []), "--json", "--no-such-option"])
    out = json.loads(capsys.readouterr().out)
    assert code == app.EXIT_USAGE
    assert out["success"] is False
    assert out["status"] == "invalid_arguments"
    assert "--no-such-option" in out["message"]


def test_every_json_command_prints_json(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    not_json: dict[str, str] = {}
    for command in json_commands():
        if command in _SERVERS:
            continue
        run = cli(root, *command, *_ARGS.get(command, []), "--json")
        if command == ("export",):  # JSON Lines: one JSON value per line
            lines = run.stdout.splitlines()
            try:
                [json.loads(line) for line in lines]
            except json.JSONDecodeError:
                not_json[" ".join(command)] = run.stdout[:200]
            continue
        try:
            json.loads(run.stdout)
        except json.JSONDecodeError:
            not_json[" ".join(command)] = (
                f"exit {run.returncode}: {run.stdout[:200]!r} {run.stderr[-300:]!r}"
            )
    assert not_json == {}
