"""A custom completer that raises something other than `CompletionFailed` (ADR 0058): on a
real store opened with `pi_hermes_memory.open(completer=...)`, consolidate, learn-skill and a
session's review each report that the LLM failed, naming the error, and write nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.status import Status


class Exploding:
    """A custom LLM adapter with a bug: it lets its own exception escape."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        self.calls += 1
        raise RuntimeError("model exploded")


@pytest.fixture
def llm() -> Exploding:
    return Exploding()


@pytest.fixture
def memory(tmp_path: Path, llm: Exploding) -> Iterator[Memory]:
    cwd, agent = tmp_path / "web", tmp_path / "agent"
    cwd.mkdir()
    agent.mkdir()
    # a review after two user messages; no flush in between
    config = {"nudgeInterval": 2, "flushMinTurns": 100}
    (agent / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")
    with pi_hermes_memory.open(
        agent_root=agent, cwd=cwd, environ={"HOME": str(tmp_path)}, completer=llm
    ) as opened:
        assert opened.llm_off is None
        yield opened


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md")) if p.is_file()
    }


def test_consolidate_fails_naming_the_error_and_changes_nothing(
    memory: Memory, llm: Exploding, tmp_path: Path
) -> None:
    memory.add("The CI runs on Buildkite", target="memory")
    memory.add("The CI runs on Buildkite, not Jenkins", target="memory")
    before = [e.text for e in memory.entries(Target.MEMORY)]
    markdown = _files(tmp_path / "agent")
    (result,) = memory.consolidate("memory")
    assert llm.calls == 1
    assert not result.success and result.status is Status.FAILED
    assert "adapter" in result.message and "RuntimeError" in result.message
    assert "model exploded" in result.message
    assert [e.text for e in memory.entries(Target.MEMORY)] == before
    assert _files(tmp_path / "agent") == markdown


def test_learn_skill_fails_naming_the_error_and_writes_no_skill(
    memory: Memory, llm: Exploding
) -> None:
    out = memory.learn_skill("Release: run the tests, then make release.")
    assert llm.calls == 1
    assert not out["success"] and out["status"] == Status.FAILED
    assert "RuntimeError" in out["message"] and "model exploded" in out["message"]
    assert "nothing was written" in out["message"]
    assert memory.skills.skills() == []


def test_a_review_fails_naming_the_error_and_writes_nothing(memory: Memory, llm: Exploding) -> None:
    memory.add("The API listens on port 8443", target="project")
    session = memory.session("s-foreign")
    session.user_message("remember that deploys go through make release")
    session.assistant_message("noted")
    session.user_message("thanks")
    assert session.shutdown(timeout=30)
    last = session.review_status().last
    assert llm.calls >= 1
    assert last is not None and last.result is Status.FAILED
    assert "adapter" in last.reason and "RuntimeError" in last.reason
    assert "model exploded" in last.reason
    assert [e.text for e in memory.entries(Target.PROJECT)] == ["The API listens on port 8443"]
    assert [e.text for e in memory.entries(Target.USER)] == []
