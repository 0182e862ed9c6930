"""The session summary as a host runs it (issue 28 §2, ADR 0077; the second seed's `/new`):
one process holds a session and ends it; the next session start summarises it through the
configured LLM (a real child process), or by concatenation when the LLM fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pi_hermes_memory

from tests.support.fake_llm import FAKE_LLM

REPLY = "Planned the move to Postgres 16: dump, restore, switch traffic. The switch is open."
FIRST_SESSION = """
import sys, pi_hermes_memory
with pi_hermes_memory.open(agent_root=sys.argv[1], project="web", cwd=sys.argv[2],
                           environ={"HOME": sys.argv[2]}) as m:
    s = m.session("first")
    s.user_message("Let us plan the migration to Postgres 16")
    s.assistant_message("Plan: dump, restore, switch traffic")
    s.user_message("ok, the switch waits for Friday")
    assert s.shutdown(timeout=30)
    assert m.entries("project") == [], m.entries("project")
"""


def configure(root: Path, llm: list[str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "sessionSummary": True,
        "llm": {"provider": "command", "command": llm},
        # only the summary calls the LLM here
        "reviewEnabled": False,
        "flushOnShutdown": False,
        "correctionDetection": False,
    }
    (root / "hermes-memory-config.json").write_text(json.dumps(config))


def run_first_session(root: Path, home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_SESSION, str(root), str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def start_next_session(root: Path, home: Path) -> list[Any]:
    with pi_hermes_memory.open(
        agent_root=root, project="web", cwd=home, environ={"HOME": str(home)}
    ) as m:
        s = m.session("second")
        assert s.shutdown(timeout=60)
        return m.entries("project")


def test_the_next_session_start_saves_the_llm_summary_of_the_previous(tmp_path: Path) -> None:
    root, record = tmp_path / "agent", tmp_path / "llm.json"
    configure(root, [sys.executable, FAKE_LLM, "--record", str(record), "--reply", REPLY])
    run_first_session(root, tmp_path)
    assert not record.exists()  # nothing asked of the LLM at shutdown
    (view,) = start_next_session(root, tmp_path)
    assert view.text.startswith("Session first on ") and view.text.endswith(REPLY)
    assert (view.kind, view.importance) == ("fact", 0.5)
    prompt = json.loads(record.read_text())["stdin"]
    assert "user: Let us plan the migration to Postgres 16" in prompt
    assert "assistant: Plan: dump, restore, switch traffic" in prompt
    # summarised once: the next start finds nothing pending
    assert [v.text for v in start_next_session(root, tmp_path)] == [view.text]
    status = json.loads((root / "pi-hermes-memory" / "review-status.json").read_text())
    assert status.get("session_summary_pending") == []


def test_a_failing_llm_falls_back_to_the_messages(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    configure(root, [sys.executable, FAKE_LLM, "--stderr", "model down", "--exit", "3"])
    run_first_session(root, tmp_path)
    (view,) = start_next_session(root, tmp_path)
    assert view.text.startswith("Session first on ")
    assert "user: Let us plan the migration to Postgres 16;" in view.text
    assert "user: ok, the switch waits for Friday;" in view.text
