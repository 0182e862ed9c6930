"""The lifecycle against a real store and a real child-process LLM (tests/support/fake_llm.py),
and the CLI's `review-status` reading what the session left."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.cli import app as cli
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.lifecycle.session import STATUS_FILE, ReviewKind, read_last_summary

from tests.support.consistency import open_memory
from tests.support.fake_llm import FAKE_LLM

REPLY = json.dumps(
    {
        "operations": [
            {"action": "add", "target": "project", "content": "Releases are cut with make release"},
            {"action": "add", "target": "user", "content": "Prefers short answers"},
            {"tool": "skill", "action": "create", "scope": "global", "name": "sneaky"},
            {"tool": "skill", "action": "use", "skill_id": "project:alpha:release"},
            {
                "tool": "skill",
                "action": "create",
                "scope": "project",
                "name": "Release",
                "description": "How to cut a release",
                "when_to_use": "Before tagging a version",
                "procedure_steps": ["Run the tests", "Run make release"],
            },
        ]
    }
)


def _config(root: Path, *llm_args: str, **llm: object) -> None:
    config = {
        "nudgeInterval": 2,
        "flushMinTurns": 100,
        "llm": {"provider": "command", "command": [sys.executable, FAKE_LLM, *llm_args], **llm},
    }
    (root / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")


def test_review_through_a_child_process_then_review_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(tmp_path, "--reply", REPLY)
    with open_memory(tmp_path, "alpha") as memory:
        assert memory.llm_off is None
        memory.add("The API listens on port 8443", target="project")
        session = memory.session("s-int")
        session.user_message("how do we release?")
        session.assistant_message("make release")
        session.user_message("thanks")
        assert session.shutdown(timeout=30)
        last = session.review_status().last
        assert last is not None
        assert (last.kind, last.result) == (ReviewKind.REVIEW, Status.OK), last.notes
        # the global skill and the use are dropped: a background session may not take them
        assert (last.applied, last.skipped, last.dropped) == (3, 0, 2), last.notes
        skill = memory.skills.get("project:alpha:release")
        assert skill is not None
        assert memory.skills.get("global:sneaky") is None
        projects = sorted(v.text for v in memory.entries(Target.PROJECT))
        assert projects == ["Releases are cut with make release", "The API listens on port 8443"]
    persisted = read_last_summary(tmp_path / "pi-hermes-memory")
    assert persisted == last
    assert not [p for p in (tmp_path / "pi-hermes-memory").iterdir() if p.name.endswith(".tmp")]

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["review-status", "--project", "alpha", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["last"]["applied"] == 3 and shown["last"]["session_id"] == "s-int"
    assert cli.main(["review-status", "--project", "alpha"]) == 0
    out = capsys.readouterr().out
    assert "Last review: review" in out and "applied 3, skipped 0, dropped 2" in out


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--exit", "3", "--stderr", "model exploded"), "exit"),
        (("--reply", '{"operations": [{"action": "add", '), "could not be read"),
        (("--huge", str(3 << 20)), "too-large"),
        (("--sleep", "30"), "timeout"),
    ],
)
def test_a_failing_child_loses_nothing_and_says_why(
    tmp_path: Path, args: tuple[str, ...], reason: str
) -> None:
    _config(tmp_path, *args, timeoutMs=1000)
    with open_memory(tmp_path, "alpha") as memory:
        memory.add("The API listens on port 8443", target="project")
        session = memory.session()
        session.user_message("one")
        session.user_message("two")
        assert session.shutdown(timeout=30)
        last = session.review_status().last
        assert last is not None and last.result is Status.FAILED and reason in last.reason
        assert [v.text for v in memory.entries(Target.PROJECT)] == ["The API listens on port 8443"]


def test_llm_off_in_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["review-status", "--project", "alpha"]) == 0
    out = capsys.readouterr().out
    assert "LLM: the LLM is off" in out and "No background review" in out
    assert not (tmp_path / "pi-hermes-memory" / STATUS_FILE).exists()


def test_the_caller_writes_while_a_review_writes(tmp_path: Path) -> None:
    reply = json.dumps(
        {
            "operations": [
                {"action": "add", "target": "memory", "content": f"Fact {i} from review"}
                for i in range(5)
            ]
        }
    )
    _config(tmp_path, "--sleep", "0.3", "--reply", reply)
    with open_memory(tmp_path, "alpha") as memory:
        session = memory.session()
        session.user_message("one")
        session.user_message("two")  # the review starts; its child sleeps, then it writes
        for i in range(20):
            memory.add(f"Caller entry {i} about topic {i * 7919}", target="project")
        assert session.shutdown(timeout=30)
        last = session.review_status().last
        assert last is not None and last.applied == 5, last
        assert len(memory.entries(Target.PROJECT)) == 20
        assert len(memory.entries(Target.MEMORY)) == 5
    with open_memory(tmp_path, "alpha") as again:  # what is on disk agrees
        assert len(again.entries(Target.PROJECT)) == 20
        assert len(again.entries(Target.MEMORY)) == 5


def test_a_review_is_followed_by_an_automatic_curation_within_its_cooldown(
    tmp_path: Path,
) -> None:
    import json

    import pi_hermes_memory

    class _Quiet:
        def complete(self, system: str, user: str, *, timeout: float) -> str:
            return json.dumps({"operations": []})

    cwd = tmp_path / "demo"
    cwd.mkdir()
    with pi_hermes_memory.open(
        agent_root=tmp_path / "agent", cwd=cwd, environ={}, completer=_Quiet()
    ) as memory:
        session = memory.session("s1")
        for i in range(20):  # up to two reviews; a later curation falls in the 24 h cooldown
            session.user_message(f"message {i} about the build")
        assert session.shutdown(timeout=20)
        jobs = memory.skill_governance.status().to_json()["curation_jobs"]
        assert jobs["last"]["kind"] == "auto" and jobs["last"]["state"] == "succeeded"
        assert jobs["last"]["job_id"] == 1  # one run at most within the cooldown
