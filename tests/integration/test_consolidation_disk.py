"""Consolidation on disk with the real child-process fake LLM (tests/support/fake_llm.py):
a capacity refusal consolidates the target through the child, then the add is saved; the
CLI `consolidate` runs the same path; a child that fails loses no memory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.cli.app import main
from pi_hermes_memory.domain.status import Status

from tests.support.fake_llm import FAKE_LLM

#: 20 characters whose facts "tox" keeps (a compression the coverage rule accepts)
WORDY = "use tox; that is all"
PLAN = json.dumps(
    {
        "operations": [
            {"action": "replace", "target": "memory", "old_text": "use tox", "content": "tox"}
        ]
    }
)


def _root(tmp_path: Path, *options: str) -> Path:
    root = tmp_path / "agent"
    root.mkdir(exist_ok=True)
    config = {
        "memoryCharLimit": 30,
        "consolidationTimeoutMs": 10_000,
        "llm": {"provider": "command", "command": [sys.executable, FAKE_LLM, *options]},
    }
    (root / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")
    return root


def _open(tmp_path: Path, root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(tmp_path), "PATH": ""}, cwd=tmp_path
    )


def test_a_capacity_refusal_runs_the_child_and_then_saves_the_add(tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    root = _root(tmp_path, "--record", str(record), "--reply", PLAN)
    with _open(tmp_path, root) as memory:
        assert memory.llm_off is None
        memory.add(WORDY)
        result = memory.add("b" * 20)
        assert result.status is Status.ADDED, result.message
        assert sorted(e.text for e in memory.entries("memory")) == ["b" * 20, "tox"]
    assert WORDY in json.loads(record.read_text(encoding="utf-8"))["stdin"]
    text = (root / "pi-hermes-memory" / "MEMORY.md").read_text(encoding="utf-8")
    assert "b" * 20 in text and WORDY not in text


def test_a_failing_child_loses_nothing_and_the_cli_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _root(tmp_path, "--exit", "3")
    with _open(tmp_path, root) as memory:
        memory.add("a" * 20)
        refused = memory.add("b" * 20)
        assert refused.status is Status.CAPACITY_EXCEEDED and "exit" in refused.message
    capsys.readouterr()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(root))
    monkeypatch.setenv("HOME", str(tmp_path))
    code = main(["--cwd", str(tmp_path), "--json", "consolidate", "--target", "memory"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out[0]["status"] == "failed" and "exit" in out[0]["message"]
    with _open(tmp_path, root) as memory:
        assert [e.text for e in memory.entries("memory")] == ["a" * 20]
