"""`pi-hermes-memory interview` and `learn-skill` as real processes, and curation through the
LLM classifier, with the LLM off and with the child-process fake LLM configured in `llm`.

Exit status: 0 done, 1 failed (the LLM is off, nothing learned), 2 usage."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import cli
from tests.support.fake_llm import FAKE_LLM

SKILL = {
    "name": "release-notes",
    "description": "Write the release notes from the merged pull requests",
    "when_to_use": "Before tagging a release",
    "procedure_steps": ["List the merged pull requests", "Group them by area"],
    "pitfalls": ["Do not list reverted changes"],
    "verification_steps": ["The notes name every merged pull request"],
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    root.mkdir()
    configure(root)
    return root


def configure(root: Path, *fake_args: str) -> None:
    config: dict[str, Any] = {"projectName": "web"}
    if fake_args:
        config["llm"] = {"provider": "command", "command": [sys.executable, FAKE_LLM, *fake_args]}
    (root / "hermes-memory-config.json").write_text(json.dumps(config))


def test_interview_lists_its_questions_then_saves_an_answers_file(root: Path) -> None:
    listed = cli(root, "interview", stdin="")
    assert listed.returncode == 0 and "coding_style: " in listed.stdout
    answers = root.parent / "answers.json"
    answers.write_text(json.dumps({"name": "Ada, backend developer", "language": "English"}))
    done = cli(root, "interview", "--answers", str(answers), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "ok" and [r["question"] for r in out["results"]] == [
        "name",
        "language",
    ]
    shown = cli(root, "list", "--target", "user")
    assert "Name and role: Ada, backend developer" in shown.stdout


def test_interview_refuses_a_malformed_answers_file(root: Path) -> None:
    answers = root.parent / "answers.json"
    answers.write_text("[1, 2]")
    done = cli(root, "interview", "--answers", str(answers))
    assert done.returncode == 2 and "JSON object" in done.stderr


def test_learn_skill_with_the_llm_off_says_so_and_writes_nothing(root: Path) -> None:
    done = cli(root, "learn-skill", "--text", "We tag releases after the notes.")
    assert done.returncode == 1
    assert done.stdout.startswith("the LLM is off: ") and "nothing was written" in done.stdout
    assert "release" not in cli(root, "skills", "list").stdout


def test_learn_skill_from_a_file_with_the_fake_llm_creates_a_project_skill(root: Path) -> None:
    record = root.parent / "record.json"
    configure(root, "--record", str(record), "--reply", "```json\n" + json.dumps(SKILL) + "\n```")
    source = root.parent / "notes.md"
    source.write_text("Release notes come from the merged pull requests.")
    done = cli(root, "learn-skill", "--file", str(source), "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["skill_id"] == "project:web:release-notes"
    assert "merged pull requests" in json.loads(record.read_text())["stdin"]
    assert "project:web:release-notes" in cli(root, "skills", "list").stdout


def test_learn_skill_with_a_failing_llm_writes_nothing(root: Path) -> None:
    configure(root, "--stderr", "boom", "--exit", "3")
    done = cli(root, "learn-skill", "--text", "notes", "--name", "notes")
    assert done.returncode == 1 and "nothing was written" in done.stdout
    assert "project:web:notes" not in cli(root, "skills", "list").stdout


def test_curate_asks_the_configured_llm_and_records_its_verdict(root: Path) -> None:
    made = cli(root, "tool", "skill", json.dumps({"action": "create", "scope": "project", **SKILL}))
    assert json.loads(made.stdout)["success"], made.stdout
    skill_id = "project:web:release-notes"
    assert cli(root, "skill-governance", "curate").returncode == 0  # the LLM off: the rules
    assert f"{skill_id}: state global-safe" in cli(root, "skill-governance", "status").stdout
    reply = {
        "classifications": [
            {
                "skill_id": skill_id,
                "task_domain": "documentation",
                "scope_verdict": "project-only",
                "reasons": ["fake LLM: tied to this repository"],
            }
        ]
    }
    configure(root, "--reply", json.dumps(reply))
    done = cli(root, "skill-governance", "curate", "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["classified"] == 1
    status = cli(root, "skill-governance", "status").stdout
    assert f"{skill_id}: state project-only" in status
    configure(root, "--reply", "no JSON at all")
    failed = cli(root, "skill-governance", "curate", "--json")
    assert failed.returncode == 1 and json.loads(failed.stdout)["reason_code"] == "classifier-error"
