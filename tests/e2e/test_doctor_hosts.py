"""The doctor's hosts section (issue 30 §4, ADR 0092): every host `setup` wired in, whether
its entry's command still starts, its last recorded call, the store's last review."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pi_hermes_memory


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CODEX_"))}
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"), PATH="/usr/bin:/bin")
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli", *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _doctor(home: Path) -> tuple[int, dict[str, Any]]:
    done = _run(home, "doctor", "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_the_doctor_checks_every_wired_host(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    (home / ".codex").mkdir()
    with pi_hermes_memory.open(agent_root=home / "agent", cwd=home) as memory:
        memory.add("The doctor looks at the hosts", target="memory")
        memory_dir = Path(memory.config.memory_dir)

    code, report = _doctor(home)
    assert code == 0, report["problems"]
    assert report["hosts"]["hosts"] == []
    assert report["hosts"]["not_set_up"] == ["codex", "cursor"]
    assert report["hosts"]["last_review"] is None
    assert "no host is set up" in _run(home, "doctor").stdout

    assert _run(home, "setup", "cursor").returncode == 0
    assert _run(home, "setup", "codex").returncode == 0
    code, report = _doctor(home)
    assert code == 0, report["problems"]
    wired = {h["host"]: h for h in report["hosts"]["hosts"]}
    assert set(wired) == {"codex", "cursor"}
    assert wired["cursor"]["where"] == str(home / ".cursor" / "mcp.json")
    assert wired["cursor"]["problems"] == [] and wired["cursor"]["last_call"] is None

    # a host integration that records its calls, and a review the store ran
    calls = home / "agent" / "hosts" / "cursor"
    calls.mkdir(parents=True)
    (calls / "last-call.json").write_text("{}")
    os.utime(calls / "last-call.json", (1_800_000_000, 1_800_000_000))
    (memory_dir / "review-status.json").write_text(
        json.dumps(
            {"kind": "review", "session_id": "s1", "at": "2026-12-01T10:00:00Z", "result": "ok"}
        )
    )
    # the command our Cursor entry starts is gone (a removed virtual environment)
    path = home / ".cursor" / "mcp.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["pi-hermes-memory"]["command"] = str(tmp_path / "gone" / "bin" / "x")
    path.write_text(json.dumps(data))
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}

    code, report = _doctor(home)
    assert code == 1
    wired = {h["host"]: h for h in report["hosts"]["hosts"]}
    assert wired["cursor"]["last_call"] == "2027-01-15T08:00:00+00:00"
    assert wired["codex"]["last_call"] is None and wired["codex"]["problems"] == []
    assert report["hosts"]["last_review"] == "2026-12-01T10:00:00Z"
    assert report["hosts"]["last_review_result"] == "ok"
    problems = report["problems"]
    assert len(problems) == 1, "\n".join(problems)
    [problem] = problems
    assert "cursor" in problem and "does not exist" in problem and "setup cursor" in problem
    text = _run(home, "doctor").stdout
    assert "cursor: " in text and "NOT WORKING" in text and "last call: 2027-01-15" in text
    assert "last review: 2026-12-01T10:00:00Z (ok)" in text
    # read-only: no file under HOME changed
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before


def test_the_doctor_shows_the_last_call_of_the_pi_bridge_and_the_claude_code_hooks(
    tmp_path: Path,
) -> None:
    """The hosts' own records: the Claude Code hooks' session state and the Pi bridge's
    per-turn mark, both under the memory directory's `hooks/<host>/`."""
    home = tmp_path / "home"
    home.mkdir()
    assert _run(home, "setup", "pi").returncode == 0
    assert _run(home, "setup", "claude-code").returncode == 0
    code, report = _doctor(home)
    assert code == 0, report["problems"]
    wired = {h["host"]: h for h in report["hosts"]["hosts"]}
    assert wired["pi"]["last_call"] is None and wired["claude-code"]["last_call"] is None

    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CODEX_"))}
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"), PATH="/usr/bin:/bin")
    payload = {
        "session_id": "s-doctor",
        "transcript_path": str(home / "t.jsonl"),
        "cwd": str(home),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    hook = [sys.executable, "-m", "pi_hermes_memory.adapters.cli", "hook", "SessionStart"]
    ran = subprocess.run(
        hook, input=json.dumps(payload), cwd=home, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    bridge = [sys.executable, "-m", "pi_hermes_memory.adapters.cli", "bridge"]
    lines = [
        {"id": 1, "method": "session_start", "params": {"cwd": str(home), "session_id": "p1"}},
        {"id": 2, "method": "before_agent_start", "params": {"prompt": "hello"}},
        {"id": 3, "method": "shutdown"},
    ]
    ran = subprocess.run(
        bridge,
        input="".join(json.dumps(line) + "\n" for line in lines),
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers = [json.loads(line) for line in ran.stdout.splitlines()]
    assert [a.get("error") for a in answers] == [None, None, None], answers

    code, report = _doctor(home)
    assert code == 0, report["problems"]
    wired = {h["host"]: h for h in report["hosts"]["hosts"]}
    assert wired["pi"]["last_call"] is not None
    assert wired["claude-code"]["last_call"] is not None
