"""The interview and learn-skill on the real store (SQLite, Markdown, skill folders), with a
scripted completer object and, once each, the real child-process fake LLM."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_hermes_memory.api import Memory
from pi_hermes_memory.bootstrap import open_memory
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, InvalidArgument
from pi_hermes_memory.learning.interview import INTERVIEW_QUESTIONS, MAX_SOURCE_CHARS

from tests.support.fake_llm import FAKE_LLM

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SKILL = {
    "name": "release-notes",
    "description": "Write the release notes from the merged pull requests",
    "when_to_use": "Before tagging a release",
    "procedure_steps": ["List the merged pull requests", "Group them by area"],
    "pitfalls": ["Do not list reverted changes"],
    "verification_steps": ["The notes name every merged pull request"],
}


class Scripted:
    def __init__(self, reply: str = "", fail: CompletionFailure | None = None) -> None:
        self.reply, self.fail = reply, fail
        self.calls: list[tuple[str, str, float]] = []

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        self.calls.append((system, user, timeout))
        if self.fail is not None:
            raise CompletionFailed(self.fail, "fake", "scripted")
        return self.reply


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Any]:
    memories: list[Memory] = []

    def opening(completer: Any = None, **config: Any) -> Memory:
        root = tmp_path / "agent"
        root.mkdir(exist_ok=True)
        (root / "hermes-memory-config.json").write_text(json.dumps(config))
        memory = open_memory(
            agent_root=root,
            project="web",
            completer=completer,
            environ={"HOME": str(tmp_path)},
            cwd=tmp_path,
        )
        memories.append(memory)
        return memory

    yield opening
    for memory in memories:
        memory.close()


def user_entries(memory: Memory) -> list[str]:
    return [e.text for e in memory.entries("user")]


# -- interview -----------------------------------------------------------------------------------


def test_without_answers_the_interview_lists_its_questions(opened: Any) -> None:
    out = opened().interview()
    assert out["success"] and [q["id"] for q in out["questions"]] == [
        q.id for q in INTERVIEW_QUESTIONS
    ]


def test_answers_become_user_entries_labelled_by_their_question(opened: Any) -> None:
    memory = opened()
    out = memory.interview(
        {"name": "Ada, backend developer", "language": "  English\n", "tools": "   "}
    )
    assert out["status"] == Status.OK and len(out["results"]) == 2
    assert user_entries(memory) == [
        "Name and role: Ada, backend developer",
        "Preferred language: English",
    ]
    again = memory.interview({"Preferred language": "English"})  # keyed by the label
    assert again["results"][0]["status"] != Status.ADDED, again  # the add path's duplicate rule
    assert user_entries(memory).count("Preferred language: English") == 1


def test_a_secret_in_an_answer_is_blocked_and_the_others_are_saved(opened: Any) -> None:
    memory = opened()
    out = memory.interview({"tools": f"token {SECRET}", "coding_style": "black, typed"})
    assert out["status"] == Status.PARTIAL
    assert user_entries(memory) == ["Coding style: black, typed"]


def test_an_unknown_question_is_refused_before_anything_is_saved(opened: Any) -> None:
    memory = opened()
    with pytest.raises(InvalidArgument, match="unknown question"):
        memory.interview({"name": "Ada", "favourite colour": "blue"})
    assert user_entries(memory) == []


# -- learn-skill ---------------------------------------------------------------------------------


def test_with_the_llm_off_learn_skill_writes_nothing_and_says_why(opened: Any) -> None:
    memory = opened()
    out = memory.learn_skill("some notes")
    assert not out["success"] and out["message"].startswith("the LLM is off: ")
    assert "llm.provider is off" in out["message"]
    assert memory.skills.skills() == []


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(SKILL),
        "Sure!\n```json\n" + json.dumps({"skill": SKILL}) + "\n```",
        "The skill: " + json.dumps({**SKILL, "scope": "global"}) + " enjoy",
    ],
)
def test_a_reply_becomes_a_project_skill(opened: Any, reply: str) -> None:
    llm = Scripted(reply)
    memory = opened(llm)
    out = memory.learn_skill("We tag releases after writing notes from merged PRs.")
    assert out["success"] and out["status"] == Status.CREATED, out
    assert out["skill_id"] == "project:web:release-notes"
    [(_, user, timeout)] = llm.calls
    assert "merged PRs" in user and timeout == memory.config.llm.timeout_ms / 1000


def test_the_given_name_wins_and_the_source_is_clipped(opened: Any) -> None:
    llm = Scripted(json.dumps(SKILL))
    out = opened(llm).learn_skill("x" * (MAX_SOURCE_CHARS * 2), name="notes")
    assert out["skill_id"] == "project:web:notes"
    assert len(llm.calls[0][1]) < MAX_SOURCE_CHARS + 200


@pytest.mark.parametrize(
    ("llm", "status", "said"),
    [
        (Scripted("nothing reusable here"), Status.NOOP, "no JSON object"),
        (Scripted('{"skill": null}'), Status.NOOP, "no reusable procedure"),
        (Scripted("{{{ garbage"), Status.NOOP, "no JSON object"),
        (Scripted(fail=CompletionFailure.TIMEOUT), Status.FAILED, "timeout"),
        (Scripted(fail=CompletionFailure.TOO_LARGE), Status.FAILED, "too-large"),
    ],
)
def test_an_unusable_reply_writes_nothing(
    opened: Any, llm: Scripted, status: Status, said: str
) -> None:
    memory = opened(llm)
    out = memory.learn_skill("notes")
    assert not out["success"] and out["status"] == status and said in out["message"]
    assert memory.skills.skills() == []


def test_a_secret_in_the_learned_skill_is_blocked_by_the_skill_tool(opened: Any) -> None:
    memory = opened(Scripted(json.dumps({**SKILL, "pitfalls": [f"use {SECRET}"]})))
    out = memory.learn_skill("notes")
    assert not out["success"] and memory.skills.skills() == []


def test_a_real_child_process_llm_creates_the_skill(opened: Any, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    command = [sys.executable, FAKE_LLM, "--record", str(record), "--reply", json.dumps(SKILL)]
    memory = opened(llm={"provider": "command", "command": command})
    assert memory.llm_off is None
    out = memory.learn_skill("Release notes come from merged pull requests.")
    assert out["status"] == Status.CREATED, out
    assert "merged pull requests" in json.loads(record.read_text())["stdin"]


def test_a_session_learns_a_skill_from_its_recent_context(tmp_path: Path) -> None:
    import json

    import pi_hermes_memory

    seen: list[str] = []

    class _Llm:
        def complete(self, system: str, user: str, *, timeout: float) -> str:
            seen.append(user)
            return json.dumps(
                {
                    "name": "rotate-logs",
                    "description": "Rotate the service logs",
                    "when_to_use": "When the disk fills with logs",
                    "procedure_steps": ["Stop the service", "Run logrotate -f", "Start it"],
                }
            )

    cwd = tmp_path / "demo"
    cwd.mkdir()
    with pi_hermes_memory.open(
        agent_root=tmp_path / "agent", cwd=cwd, environ={}, completer=_Llm()
    ) as memory:
        session = memory.session("s1")
        assert session.learn_skill()["status"] == "noop"  # nothing said yet: no LLM call
        assert seen == []
        session.user_message("the disk is full of logs again, how did we fix it")
        session.assistant_message("Stopped the service, ran logrotate -f, started it again.")
        result = session.learn_skill()
        session.shutdown(timeout=5)
        assert result["success"], result
        assert "logrotate -f" in seen[0] and "user: the disk is full" in seen[0]
        skill = memory.skills.get("project:demo:rotate-logs")
        assert skill is not None and "logrotate" in skill.body
