"""The real Claude Code (`@anthropic-ai/claude-code`, pinned in .ci/run) against a local fake
Messages API, with the hooks `setup claude-code` installed (issue 30 §2, ADR 0090).

`claude -p` runs offline here: ANTHROPIC_BASE_URL points at tests/support/fake_anthropic.py,
which logs every request body. The test reads what the model would have been sent: the
policy block (SessionStart) and a remembered fact (UserPromptSubmit's auto-recall); a
preference stated in one session is captured at Stop and recalled in the next.

The binary is `$CLAUDE_CODE_BIN`, else `claude` on PATH. Under `make test` (which installs it:
PI_HERMES_MEMORY_REQUIRE_CLAUDE=1) or CI its absence is a failure; a bare `pytest` elsewhere
skips it with the reason (it needs the npm package).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FAKE = Path(__file__).parents[1] / "support" / "fake_anthropic.py"
REPLY = "Noted."


def _claude() -> str:
    found = os.environ.get("CLAUDE_CODE_BIN") or shutil.which("claude")
    if found:
        return found
    if os.environ.get("CI") == "true" or os.environ.get("PI_HERMES_MEMORY_REQUIRE_CLAUDE"):
        pytest.fail("CLAUDE_CODE_BIN is not set and claude is not on PATH (.ci/run installs it)")
    pytest.skip("the claude binary is not installed (npm i @anthropic-ai/claude-code)")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port_file, log = tmp_path / "port", tmp_path / "requests.jsonl"
    proc = subprocess.Popen([sys.executable, str(FAKE), str(port_file), str(log), REPLY])
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text():
            assert time.monotonic() < deadline, "the fake Messages API did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}", log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _env(tmp_path: Path, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.pop("PI_HERMES_MEMORY_CHILD", None)
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-a-local-server",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    )
    return env


def _requests(log: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["path"].startswith("/v1/messages") and "count" not in r["path"]]


def test_claude_code_gets_the_policy_and_recalled_memories(
    tmp_path: Path, server: tuple[str, Path]
) -> None:
    claude = _claude()
    base_url, log = server
    project = tmp_path / "proj"
    for folder in (tmp_path / "home", tmp_path / "agent", project):
        folder.mkdir()
    (tmp_path / "agent" / "hermes-memory-config.json").write_text(
        json.dumps({"llm": {"provider": "off"}}), encoding="utf-8"
    )
    env = _env(tmp_path, base_url)
    cli = [sys.executable, "-m", "pi_hermes_memory.adapters.cli"]

    def run(*args: str, program: list[str] = cli) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*program, *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=project,
            stdin=subprocess.DEVNULL,
            timeout=180,
        )

    assert run("setup", "claude-code").returncode == 0
    assert run("add", "The deploy script is scripts/deploy.sh and needs STAGE=1").returncode == 0

    first = run("-p", "Where is the deploy script and what does it need?", program=[claude])
    assert first.returncode == 0, first.stderr
    assert REPLY in first.stdout
    sent = json.dumps(_requests(log)[-1]["body"])
    assert "<memory-policy>" in sent  # SessionStart
    assert "<relevant-memories>" in sent and "scripts/deploy.sh" in sent  # UserPromptSubmit

    # a preference stated in one session is captured at Stop, and recalled in the next
    second = run("-p", "I prefer tabs over spaces in every Python file", program=[claude])
    assert second.returncode == 0, second.stderr
    listed = run("list", "--json")
    assert "I prefer tabs over spaces in every Python file" in listed.stdout, listed.stderr
    third = run("-p", "Should this Python file use tabs or spaces?", program=[claude])
    assert third.returncode == 0, third.stderr
    assert "I prefer tabs over spaces" in json.dumps(_requests(log)[-1]["body"])

    sessions = tmp_path / "agent" / "pi-hermes-memory" / "hooks" / "claude-code" / "sessions"
    states = [json.loads(p.read_text("utf-8")) for p in sessions.glob("*.json")]
    assert len(states) == 3 and all(s["user_turns"] == 1 for s in states)
    assert not any("last_prompt" in s for s in states)  # every Stop hook ran
