"""A model cannot wipe memory (issue 26 §1, ADR 0062), on a real SQLite store opened with
`pi_hermes_memory.open(completer=...)` and a scripted completer, and through the CLI with a
real child-process LLM (tests/support/fake_llm.py):

- the "greek letters" plan (five unrelated entries removed, "merged: greek letters" added) is
  refused, manually and when `auto-consolidate` runs it on a capacity refusal;
- a plan that moves an entry to another target is applied whole (both orders), or not at
  all when any part fails, also when the storage fails between the two targets' appends;
- one plan deletes at most `consolidationMaxRemovedShare` of a target's entries;
- every outcome, a refusal with its reason, is in the review status (CLI and session);
- one review applies at most `reviewMaxAdds` model-proposed adds.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.cli.app import main
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.journal.pipeline import Batch
from pi_hermes_memory.learning.review import ReviewKind, ReviewRequest, run_review

from tests.support.fake_llm import FAKE_LLM

#: five unrelated entries, 177 characters in all
UNRELATED = (
    "Postgres 15 listens on port 5433 in dev",
    "The user prefers tabs in Go sources",
    "CI runs on GitHub Actions, 20 min timeout",
    "Release notes: docs/NEXT.md",
    "Ask before deleting shared branches",
)
GREEK = {
    "operations": [
        *({"action": "remove", "target": "memory", "old_text": t} for t in UNRELATED),
        {"action": "add", "target": "memory", "content": "merged: greek letters"},
    ]
}
POSTGRES = UNRELATED[0]


class Scripted:
    """A completer that answers with the given replies in turn (then an empty plan)."""

    def __init__(self, *replies: object) -> None:
        self.replies = [r if isinstance(r, str) else json.dumps(r) for r in replies]
        self.calls = 0

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        self.calls += 1
        return self.replies.pop(0) if self.replies else '{"operations": []}'


def _agent(tmp_path: Path, **config: object) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")
    return agent


def _open(tmp_path: Path, llm: Any, **config: object) -> Memory:
    cwd = tmp_path / "web"
    cwd.mkdir(exist_ok=True)
    return pi_hermes_memory.open(
        agent_root=_agent(tmp_path, **config),
        cwd=cwd,
        environ={"HOME": str(tmp_path)},
        completer=llm,
    )


def _texts(memory: Memory, target: str = "memory") -> list[str]:
    return sorted(e.text for e in memory.entries(target))


def _seed(memory: Memory, texts: Sequence[str] = UNRELATED) -> None:
    for text in texts:
        assert memory.add(text, force=True).success


def _events(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (count,) = conn.execute("select count(*) from events").fetchone()
    return int(count)


@pytest.fixture
def files(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "agent" / "pi-hermes-memory"


# -- the greek-letters wipe ----------------------------------------------------------------


def test_the_greek_letters_plan_is_refused_and_the_refusal_is_in_review_status(
    tmp_path: Path, files: Path
) -> None:
    assert sum(len(t) for t in UNRELATED) == 177
    llm = Scripted(GREEK)
    with _open(tmp_path, llm) as memory:
        _seed(memory)
        before = (files / "MEMORY.md").read_bytes()
        (result,) = memory.consolidate("memory")
        assert not result.success and result.status is Status.FAILED
        assert "drops the entry" in result.message and "nothing was changed" in result.message
        assert _texts(memory) == sorted(UNRELATED)
        status = memory.session("s1").review_status()
    assert (files / "MEMORY.md").read_bytes() == before
    assert status.consolidation is not None
    assert status.consolidation["status"] == "failed"
    assert status.consolidation["target"] == "memory"
    assert "drops the entry" in status.consolidation["message"]
    assert status.to_json()["consolidation"]["before"] == 177


def test_auto_consolidate_on_a_capacity_refusal_refuses_the_wipe_and_keeps_everything(
    tmp_path: Path,
) -> None:
    llm = Scripted(GREEK)
    with _open(tmp_path, llm, memoryCharLimit=190) as memory:
        _seed(memory)
        result = memory.add("Deploys go out on Tuesdays")
        assert result.status is Status.CAPACITY_EXCEEDED, result.message
        assert "auto-consolidation did not help" in result.message
        assert "drops the entry" in result.message
        assert llm.calls == 1
        assert _texts(memory) == sorted(UNRELATED)


def test_the_cli_consolidate_with_a_child_llm_refuses_the_wipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(
        tmp_path,
        consolidationTimeoutMs=20_000,
        llm={
            "provider": "command",
            "command": [sys.executable, FAKE_LLM, "--reply", json.dumps(GREEK)],
        },
    )
    with pi_hermes_memory.open(
        agent_root=agent, environ={"HOME": str(tmp_path), "PATH": ""}, cwd=tmp_path
    ) as memory:
        assert memory.llm_off is None
        _seed(memory)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.setenv("HOME", str(tmp_path))
    capsys.readouterr()
    code = main(["--cwd", str(tmp_path), "--json", "consolidate", "--target", "memory"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out[0]["status"] == "failed" and "drops the entry" in out[0]["message"]
    assert main(["--cwd", str(tmp_path), "--json", "review-status"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["consolidation"]["status"] == "failed"
    assert "drops the entry" in status["consolidation"]["message"]
    assert main(["--cwd", str(tmp_path), "review-status"]) == 0
    text = capsys.readouterr().out
    assert "Last consolidation: memory" in text and "drops the entry" in text
    with pi_hermes_memory.open(
        agent_root=agent, environ={"HOME": str(tmp_path), "PATH": ""}, cwd=tmp_path
    ) as memory:
        assert _texts(memory) == sorted(UNRELATED)


# -- a plan over two targets: whole or nothing ----------------------------------------------

_MOVE = (
    {"action": "remove", "target": "memory", "old_text": "port 5433"},
    {"action": "add", "target": "user", "content": POSTGRES},
)


@pytest.mark.parametrize("order", [_MOVE, _MOVE[::-1]], ids=["remove-first", "add-first"])
def test_a_plan_that_moves_an_entry_to_another_target_is_applied_whole(
    tmp_path: Path, files: Path, order: tuple[dict[str, str], ...]
) -> None:
    llm = Scripted({"operations": list(order)})
    with _open(tmp_path, llm) as memory:
        _seed(memory)
        (result,) = memory.consolidate("memory")
        assert result.success, result.message
        assert POSTGRES not in _texts(memory)
        assert _texts(memory, "user") == [POSTGRES]
        assert len(_texts(memory)) == len(UNRELATED) - 1
    assert POSTGRES in (files / "USER.md").read_text(encoding="utf-8")
    assert POSTGRES not in (files / "MEMORY.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("order", [_MOVE, _MOVE[::-1]], ids=["remove-first", "add-first"])
def test_when_one_part_of_a_two_target_plan_fails_nothing_is_applied(
    tmp_path: Path, files: Path, order: tuple[dict[str, str], ...]
) -> None:
    llm = Scripted({"operations": list(order)})
    # the user target cannot take the entry: the add fails, so the remove must not happen
    with _open(tmp_path, llm, userCharLimit=20) as memory:
        _seed(memory)
        before = (files / "MEMORY.md").read_bytes()
        (result,) = memory.consolidate("memory")
        assert not result.success and "nothing was changed" in result.message, result.message
        assert _texts(memory) == sorted(UNRELATED)
        assert _texts(memory, "user") == []
    assert (files / "MEMORY.md").read_bytes() == before


def test_a_storage_failure_between_the_two_targets_leaves_nothing_half_applied(
    tmp_path: Path, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = Scripted({"operations": list(_MOVE)})
    with _open(tmp_path, llm) as memory:
        _seed(memory)
        db = memory.config.db_path
        events = _events(db)
        appended: list[str] = []
        real = Batch.append

        def failing(self: Batch[Any], stream: str, events: Sequence[Any]) -> Any:
            if events and appended:  # the second target's events: the disk goes away
                raise OSError("disk gone between the two appends")
            if events:
                appended.append(stream)
            return real(self, stream, events)

        monkeypatch.setattr(Batch, "append", failing)
        with pytest.raises(OSError, match="disk gone"):
            memory.consolidate("memory")
        monkeypatch.setattr(Batch, "append", real)
        assert appended  # the first target's events were appended, then rolled back
        assert _events(db) == events
    with _open(tmp_path, Scripted()) as memory:
        assert _texts(memory) == sorted(UNRELATED)
        assert _texts(memory, "user") == []
    assert POSTGRES in (files / "MEMORY.md").read_text(encoding="utf-8")


def test_a_reply_with_an_operation_the_parser_drops_is_not_applied_in_part(
    tmp_path: Path,
) -> None:
    llm = Scripted(
        {
            "operations": [
                {"action": "remove", "target": "memory", "old_text": "port 5433"},
                {"action": "add", "target": "userz", "content": POSTGRES},
            ]
        }
    )
    with _open(tmp_path, llm) as memory:
        _seed(memory)
        (result,) = memory.consolidate("memory")
        assert not result.success and "whole or not at all" in result.message
        assert "unknown-target" in result.message
        assert _texts(memory) == sorted(UNRELATED)


# -- the share of a target one plan may delete ----------------------------------------------

_NOTES = tuple(f"release {n} ships the parser fix number {n}" for n in range(10))
_FOUR = {
    "operations": [
        *({"action": "remove", "target": "memory", "old_text": t} for t in _NOTES[:4]),
        {"action": "add", "target": "memory", "content": "releases 0 1 2 3 ship parser fixes"},
    ]
}


def test_one_plan_deletes_at_most_the_configured_share_of_a_target(tmp_path: Path) -> None:
    with _open(tmp_path, Scripted(_FOUR)) as memory:  # default 0.3: 3 of 10
        _seed(memory, _NOTES)
        (result,) = memory.consolidate("memory")
        assert not result.success, result.message
        assert "deletes 4 of the target's 10 entries" in result.message
        assert "at most 3" in result.message
        assert _texts(memory) == sorted(_NOTES)


def test_a_larger_configured_share_lets_the_same_covered_plan_through(tmp_path: Path) -> None:
    llm = Scripted(_FOUR)
    with _open(tmp_path, llm, consolidationMaxRemovedShare=0.5) as memory:
        _seed(memory, _NOTES)
        (result,) = memory.consolidate("memory")
        assert result.success, result.message
        assert len(_texts(memory)) == 7
        assert "releases 0 1 2 3 ship parser fixes" in _texts(memory)


# -- reviews: a cap on adds -----------------------------------------------------------------


def _adds(n: int) -> dict[str, object]:
    return {
        "operations": [
            {"action": "add", "target": "memory", "content": f"fact number {i} about tool {i}"}
            for i in range(n)
        ]
    }


def test_one_review_applies_at_most_ten_adds_by_default(tmp_path: Path) -> None:
    with _open(tmp_path, Scripted(_adds(50))) as memory:
        request = ReviewRequest(
            kind=ReviewKind.FLUSH,
            session_id="s1",
            messages=(("user", "remember things"),),
            timeout_s=5.0,
            skills=False,
        )
        summary = run_review(memory, request, now=lambda: datetime(2026, 1, 1, tzinfo=UTC))
        assert (summary.applied, summary.skipped) == (10, 40)
        assert summary.result is Status.PARTIAL
        assert "40 add(s) over the cap" in summary.reason and "reviewMaxAdds" in summary.reason
        assert len(memory.entries("memory")) == 10


def test_review_max_adds_from_the_config_caps_a_sessions_flush(tmp_path: Path) -> None:
    llm = Scripted(_adds(8))
    with _open(tmp_path, llm, reviewMaxAdds=3, flushMinTurns=1, nudgeInterval=100) as memory:
        session = memory.session("s1")
        session.user_message("please remember the facts")
        assert session.shutdown(timeout=20.0)
        status = session.review_status()
        assert status.last is not None and status.last.kind is ReviewKind.FLUSH
        assert (status.last.applied, status.last.skipped) == (3, 5)
        assert any("reviewMaxAdds" in n for n in status.last.notes)
        assert len(memory.entries(Target.MEMORY)) == 3
