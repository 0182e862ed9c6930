"""The agent lifecycle (issue 12 §3): counters, triggers, flush, correction capture and the
background worker, on in-memory adapters with a fake completer."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.config.settings import LlmProvider
from pi_hermes_memory.domain.learning.llm_reply import SkillOperation
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.skills.rules import SkillAction
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure
from pi_hermes_memory.learning.llm import LlmOffReason, LlmStatus, OffCompleter
from pi_hermes_memory.learning.review import child_problem
from pi_hermes_memory.lifecycle.session import (
    AgentSession,
    LifecycleSettings,
    ReviewKind,
    ReviewWorker,
)

from tests.support.builders import service
from tests.support.fakes import SequentialIds, StepClock

Reply = str | BaseException | Callable[[str, str], str]


class FakeCompleter:
    """Scripted replies (the last one repeats); records every prompt."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies) or ["{}"]
        self.calls: list[tuple[str, str, float]] = []

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        self.calls.append((system, user, timeout))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            return reply(system, user)
        return reply


def make_memory(completer: Any = None) -> Memory:
    storage, clock, ids = InMemoryStorage(), StepClock(), SequentialIds()
    memory = Memory(
        service=service(storage, InMemoryMarkdown(), clock=clock, ids=ids),
        storage=storage,
        clock=clock,
        ids=ids,
    )
    if completer is not None:
        memory._attach_llm(completer, None)
    return memory


def ops(*items: dict[str, Any]) -> str:
    return json.dumps({"operations": list(items)})


def add(content: str, target: str = "project") -> dict[str, Any]:
    return {"action": "add", "target": target, "content": content}


def session(memory: Memory, **kw: Any) -> AgentSession:
    kw.setdefault("corrections", None)
    return AgentSession(
        memory, session_id="s1", settings=LifecycleSettings(**kw), worker=ReviewWorker()
    )


def texts(memory: Memory, target: Target = Target.PROJECT) -> list[str]:
    return [v.text for v in memory.entries(target)]


def test_review_every_nudge_interval_user_turns_applies_the_reply() -> None:
    llm = FakeCompleter(ops(add("Releases are cut with make release")))
    memory = make_memory(llm)
    s = session(memory, nudge_interval=3, timeout_s=7.0)
    s.user_message("how do I release?")
    s.assistant_message("run make release")
    s.user_message("ok")
    assert s.shutdown(timeout=5) and llm.calls == []  # 2 turns < 6 flush turns: no flush
    s = session(memory, nudge_interval=3, timeout_s=7.0)
    for text in ("one", "two", "three"):
        s.user_message(text)
    assert s.review_status().turns_since_review == 0
    assert s.shutdown(timeout=5)
    assert len(llm.calls) == 1
    system, user, timeout = llm.calls[0]
    assert timeout == 7.0 and '"operations"' in system
    assert "[user] three" in user and "Current memory" in user
    assert texts(memory) == ["Releases are cut with make release"]
    last = s.review_status().last
    assert last is not None
    assert (last.kind, last.result, last.applied, last.skipped) == (
        ReviewKind.REVIEW,
        Status.OK,
        1,
        0,
    )


def test_review_every_nudge_tool_calls_and_the_recent_window() -> None:
    llm = FakeCompleter("nothing to save")
    s = session(
        make_memory(llm), nudge_tool_calls=2, review_recent_messages=1, skill_review_tool_calls=0
    )
    s.user_message("first message")
    s.assistant_message("second message")
    s.tool_call("bash")
    assert s.review_status().tool_calls_since_review == 1
    s.tool_call("bash")
    assert s.shutdown(timeout=5)
    assert len(llm.calls) == 1
    user = llm.calls[0][1]
    assert "second message" in user and "first message" not in user
    last = s.review_status().last
    assert last is not None and last.result is Status.OK and last.applied == 0


def test_skill_review_takes_skill_operations_only_and_zero_turns_it_off() -> None:
    llm = FakeCompleter(ops(add("a memory item a skill review must not save")))
    memory = make_memory(llm)
    s = session(memory, skill_review_tool_calls=2)
    s.tool_call("a")
    s.tool_call("b")
    assert s.shutdown(timeout=5)
    assert len(llm.calls) == 1 and texts(memory) == []
    last = s.review_status().last
    assert last is not None and last.kind is ReviewKind.SKILL_REVIEW and last.dropped == 1
    off = session(make_memory(llm := FakeCompleter()), skill_review_tool_calls=0)
    for _ in range(5):
        off.tool_call("a")
    assert off.shutdown(timeout=5) and llm.calls == []


def test_review_disabled_fires_nothing() -> None:
    llm = FakeCompleter()
    s = session(make_memory(llm), review_enabled=False, nudge_interval=1, flush_on_shutdown=False)
    for _ in range(4):
        s.user_message("hello")
        s.tool_call("x")
    assert s.shutdown(timeout=5) and llm.calls == []


def test_flush_before_compaction_and_at_shutdown_only_after_min_turns() -> None:
    llm = FakeCompleter(ops(add("Uses uv, not pip", "memory")))
    memory = make_memory(llm)
    s = session(memory, flush_min_turns=2, flush_recent_messages=0)
    s.user_message("we use uv")
    assert s.before_compact() is False
    s.user_message("not pip")
    assert s.before_compact() is True
    assert s.shutdown(timeout=5)  # 0 turns since the flush: nothing more
    assert len(llm.calls) == 1
    assert texts(memory, Target.MEMORY) == ["Uses uv, not pip"]
    last = s.review_status().last
    assert last is not None and last.kind is ReviewKind.FLUSH
    s2 = session(memory, flush_min_turns=1, flush_on_compact=False)
    s2.user_message("bye")
    assert s2.before_compact() is False
    assert s2.shutdown(timeout=5) and len(llm.calls) == 2


def test_llm_off_is_a_result_with_the_reason() -> None:
    status = LlmStatus(
        provider=LlmProvider.OFF,
        off_reason=LlmOffReason.PROVIDER_OFF,
        message="the LLM is off: llm.provider is off",
    )
    memory = make_memory()
    memory._attach_llm(OffCompleter(status), status)
    s = session(memory, nudge_interval=1)
    s.user_message("hi")
    assert s.shutdown(timeout=5)
    st_ = s.review_status()
    assert st_.last is not None and st_.last.result is Status.OFF
    assert "llm.provider is off" in st_.last.reason and "llm.provider is off" in st_.llm_off


@pytest.mark.parametrize(
    ("reply", "result"),
    [
        (CompletionFailed(CompletionFailure.TIMEOUT, "fake", "30 s"), Status.FAILED),
        (RuntimeError("boom"), Status.FAILED),
        ("{ not json at all }", Status.FAILED),
        ("x" * (2 << 20), Status.FAILED),
    ],
)
def test_failures_of_the_llm_end_as_results(reply: Reply, result: Status) -> None:
    memory = make_memory(FakeCompleter(reply))
    memory.add("Keep me", target="project")
    s = session(memory, nudge_interval=1)
    s.user_message("hi")
    assert s.shutdown(timeout=5)
    last = s.review_status().last
    assert last is not None and last.result is result and last.reason
    assert texts(memory) == ["Keep me"]


def test_operations_commit_one_by_one() -> None:
    memory = make_memory()
    memory.add("The API listens on port 8080", target="project")
    reply = ops(
        add("Deploys run from the main branch"),
        add("The API listens on port 8080"),  # exact duplicate: a no-op or a refusal
        {"action": "remove", "target": "project", "old_text": "no such entry"},
        {"action": "explode", "target": "project"},
    )
    memory._attach_llm(FakeCompleter(reply), None)
    s = session(memory, nudge_interval=1)
    s.user_message("hi")
    assert s.shutdown(timeout=5)
    last = s.review_status().last
    assert last is not None and last.result is Status.PARTIAL
    assert last.dropped == 1 and last.applied + last.skipped == 3 and last.skipped >= 1
    assert "Deploys run from the main branch" in texts(memory)
    assert "The API listens on port 8080" in texts(memory)


def test_correction_is_stored_at_once_then_the_llm_is_asked() -> None:
    llm = FakeCompleter(ops(add("Package manager: pnpm")))
    memory = make_memory(llm)
    s = AgentSession(memory, session_id="c", settings=LifecycleSettings(), worker=ReviewWorker())
    s.user_message("No, use pnpm instead of npm.")
    failures = memory.entries(Target.FAILURE)
    assert [(v.text, v.category) for v in failures] == [("Use pnpm instead of npm.", "correction")]
    assert s.shutdown(timeout=5)
    assert len(llm.calls) == 1 and "Use pnpm instead of npm." in llm.calls[0][1]
    last = s.review_status().last
    assert last is not None and last.kind is ReviewKind.CORRECTION and last.applied == 2


def test_at_most_one_capture_per_three_turns() -> None:
    memory = make_memory(FakeCompleter("nothing"))
    s = AgentSession(
        memory, settings=LifecycleSettings(flush_on_shutdown=False), worker=ReviewWorker()
    )
    messages = ["No, use pnpm.", "No, use yarn.", "No, use bun.", "No, use deno.", "fine"]
    for text in messages:
        s.user_message(text)
    assert s.shutdown(timeout=5)
    assert sorted(v.text for v in memory.entries(Target.FAILURE)) == ["Use deno.", "Use pnpm."]


def test_correction_detection_off() -> None:
    memory = make_memory(FakeCompleter())
    s = session(memory, corrections=None, flush_on_shutdown=False)
    s.user_message("No, use pnpm instead of npm.")
    assert s.shutdown(timeout=5) and memory.entries(Target.FAILURE) == []


def test_the_caller_is_never_blocked_and_triggers_coalesce() -> None:
    gate = threading.Event()

    def slow(system: str, user: str) -> str:
        gate.wait(10)
        return "{}"

    llm = FakeCompleter(slow)
    worker = ReviewWorker(max_pending=2)
    s = AgentSession(
        make_memory(llm),
        settings=LifecycleSettings(nudge_interval=1, corrections=None, flush_on_shutdown=False),
        worker=worker,
    )
    started = time.monotonic()
    for i in range(20):
        s.user_message(f"message {i}")
        s.tool_call("t")
    assert time.monotonic() - started < 2.0
    status = s.review_status()
    assert status.running or status.pending
    assert status.pending <= 2 and status.coalesced >= 15
    assert s.shutdown(timeout=0.2) is False  # bounded: the review is still waiting
    gate.set()
    assert s.shutdown(timeout=5) is True
    assert 1 <= len(llm.calls) <= 3


def test_a_background_session_never_takes_global_or_forbidden_skill_actions() -> None:
    def op(action: SkillAction, **args: Any) -> SkillOperation:
        return SkillOperation(index=0, action=action, arguments={"action": action.value, **args})

    assert child_problem(op(SkillAction.CREATE, scope="global", name="x")) is not None
    assert child_problem(op(SkillAction.CREATE, name="x")) is not None
    assert child_problem(op(SkillAction.PATCH, skill_id="global:deploy")) is not None
    assert child_problem(op(SkillAction.USE, skill_id="project:app:deploy")) is not None
    assert child_problem(op(SkillAction.DELETE, skill_id="project:app:deploy")) is not None
    assert child_problem(op(SkillAction.PATCH, skill_id="nonsense")) is not None
    assert child_problem(op(SkillAction.CREATE, scope="project", name="x")) is None
    assert child_problem(op(SkillAction.PATCH, skill_id="project:app:deploy")) is None


def test_lifecycle_calls_survive_odd_input() -> None:
    s = session(make_memory(), nudge_interval=1)  # no LLM attached at all
    s.user_message(None)  # type: ignore[arg-type]
    s.assistant_message(12)  # type: ignore[arg-type]
    s.tool_call(None)  # type: ignore[arg-type]
    assert s.before_compact() is False
    assert s.shutdown(timeout=5) and s.shutdown(timeout=1)
    last = s.review_status().last
    assert last is not None and last.result is Status.OFF


_REPLIES = st.one_of(
    st.text(max_size=200),
    st.just("x" * (1 << 21)),
    st.sampled_from(
        [
            CompletionFailed(CompletionFailure.TIMEOUT, "fake", "slow"),
            CompletionFailed(CompletionFailure.EXIT, "fake", "1"),
            ValueError("bug"),
        ]
    ),
    st.lists(
        st.fixed_dictionaries(
            {
                "action": st.sampled_from(["add", "replace", "remove", "purge", "nope"]),
                "target": st.sampled_from(["memory", "user", "project", "failure", "x"]),
            },
            optional={
                "content": st.text(max_size=60),
                "old_text": st.sampled_from(["Keep", "alpha", "port", ""]),
                "category": st.sampled_from(["correction", "bogus"]),
                "tool": st.sampled_from(["skill", "memory"]),
            },
        ),
        max_size=5,
    ).map(lambda items: json.dumps({"operations": items})),
)
_CALLS = st.lists(
    st.sampled_from(["user", "correction", "assistant", "tool", "compact"]), max_size=12
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(_REPLIES, min_size=1, max_size=4), calls=_CALLS)
def test_no_exception_and_no_memory_lost_whatever_the_llm_does(
    replies: list[Reply], calls: list[str]
) -> None:
    memory = make_memory(FakeCompleter(*replies))
    kept = [
        memory.add("Keep alpha: the API port is 8080", target="project"),
        memory.add("Keep beta: the user prefers short answers", target="user"),
    ]
    ids = [r.entry_id for r in kept]
    s = AgentSession(
        memory,
        settings=LifecycleSettings(nudge_interval=2, nudge_tool_calls=2, flush_min_turns=1),
        worker=ReviewWorker(),
    )
    for call in calls:
        if call == "user":
            s.user_message("please continue")
        elif call == "correction":
            s.user_message("No, use pnpm instead.")
        elif call == "assistant":
            s.assistant_message("done")
        elif call == "tool":
            s.tool_call("bash")
        else:
            s.before_compact()
    assert s.shutdown(timeout=10)
    removed = {v.id for t in (Target.PROJECT, Target.USER) for v in memory.removed(t)}
    for entry_id in ids:
        assert entry_id is not None
        assert memory.get(entry_id) is not None or entry_id in removed


def test_close_waits_for_queued_background_work(tmp_path: Path) -> None:
    import threading

    import pi_hermes_memory

    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    class _Slow:
        def complete(self, system: str, user: str, *, timeout: float) -> str:
            started.set()
            release.wait(5)
            done.append("reply")
            return '{"operations": []}'

    cwd = tmp_path / "p"
    cwd.mkdir()
    memory = pi_hermes_memory.open(
        agent_root=tmp_path / "a", cwd=cwd, environ={}, completer=_Slow()
    )
    session = memory.session("s")
    for i in range(10):
        session.user_message(f"message number {i} here")
    assert started.wait(5)
    threading.Timer(0.2, release.set).start()
    memory.close()  # waits for the review instead of closing the store under it
    assert done == ["reply"]
