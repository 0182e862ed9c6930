"""The LLM-backed skill classifier in the curation job path, with a scripted completer:
valid, fenced, garbage, refused, oversized and timed-out replies, and the LLM off."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.skill_folders import InMemorySkillFolders
from pi_hermes_memory.adapters.inmemory.skill_tables import InMemorySkillTables
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.domain.skills.promotion import PromotionPolicy
from pi_hermes_memory.domain.skills.skill import SkillScope, SkillState
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, HermesMemoryError
from pi_hermes_memory.skills.classifier_llm import (
    MAX_PROMPT_CHARS,
    LlmClassifier,
    classifier_prompt,
)

from tests.support.skill_world import World

P = "project:web:deploy"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Scripted:
    """A completer that answers with one scripted reply or raises one failure."""

    def __init__(self, reply: str | None = None, fail: CompletionFailure | None = None) -> None:
        self.reply, self.fail = reply, fail
        self.calls: list[tuple[str, str, float]] = []

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        self.calls.append((system, user, timeout))
        if self.fail is not None:
            raise CompletionFailed(self.fail, "fake", "scripted failure")
        assert self.reply is not None
        return self.reply


@pytest.fixture
def world() -> World:
    lock = threading.RLock()
    w = World(
        storage=InMemoryStorage(),
        folders=InMemorySkillFolders(),
        telemetry=InMemorySkillTables(),
        lock=lambda timeout: lock,
    )
    skill_id = w.create()
    w.use(skill_id, 3)
    return w


def verdict(**item: Any) -> str:
    base = {
        "skill_id": P,
        "task_domain": "deployment",
        "scope_verdict": "global-safe",
        "reasons": ["works in any repository"],
    }
    return json.dumps({"classifications": [{**base, **item}]})


def curate(world: World, completer: Scripted) -> Any:
    _, gov = world.session(classifier=LlmClassifier(completer))
    return gov.curate()


def test_a_valid_reply_is_recorded_with_the_llm_reasons_and_the_curation_timeout(
    world: World,
) -> None:
    llm = Scripted("Here you go:\n```json\n" + verdict() + "\n```\nDone.")
    result = curate(world, llm)
    assert result.success and result.reason_code == "ok" and result.classified == 1
    record = world.telemetry.governance(P)
    assert record.state == "candidate" and record.task_domain == "deployment"
    assert record.reason.startswith("llm: works in any repository")
    [(system, user, timeout)] = llm.calls
    assert timeout == world.settings.curation_timeout_ms / 1000
    assert P in user and '"deployment"' in user and "global-safe" in system


def test_text_around_the_object_is_read_from_the_first_to_the_last_brace(world: World) -> None:
    llm = Scripted("My verdict: " + verdict(scope_verdict="project-only") + " -- end")
    assert curate(world, llm).success
    assert world.telemetry.governance(P).state == "project-only"


def test_an_unknown_task_domain_keeps_the_verdict_without_the_domain(world: World) -> None:
    assert curate(world, Scripted(verdict(task_domain="astrology"))).success
    assert world.telemetry.governance(P).task_domain is None


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("nothing to classify, sorry", "no JSON object"),
        ("{{{ not json ]]]", "no JSON object"),
        (json.dumps({"classifications": "all good"}), "must be an array"),
        (verdict(scope_verdict="maybe"), "scope_verdict"),
        (json.dumps({"classifications": [], "curationTimeoutMs": 1}), "timing parameters"),
        (verdict(reasons=[f"token {SECRET}"]), "Refused"),
    ],
)
def test_an_unusable_or_refused_reply_fails_the_job_and_records_nothing(
    world: World, reply: str, said: str
) -> None:
    result = curate(world, Scripted(reply))
    assert not result.success and result.state == "failed"
    assert result.reason_code == "classifier-error" and said in result.message
    assert world.telemetry.governance(P) is None
    _, gov = world.session()
    assert gov.curate().success  # the lease was released


def test_a_completion_timeout_ends_the_job_timed_out(world: World) -> None:
    result = curate(world, Scripted(fail=CompletionFailure.TIMEOUT))
    assert result.state == "timed-out" and result.reason_code == "timeout"
    assert world.telemetry.governance(P) is None


def test_an_oversized_reply_fails_the_job_with_the_reason(world: World) -> None:
    result = curate(world, Scripted(fail=CompletionFailure.TOO_LARGE))
    assert result.state == "failed" and "too-large" in result.message


def test_with_the_llm_off_the_rules_classify_and_the_reasons_say_so(world: World) -> None:
    result = curate(world, Scripted(fail=CompletionFailure.OFF))
    assert result.success and result.classified == 1
    assert world.telemetry.governance(P).reason.startswith(
        "llm: the LLM is off: scripted failure; classified by the rules; "
    )


def test_the_prompt_is_bounded_whatever_the_skills() -> None:
    skills = [
        SkillState(
            stream=f"skill:project:web:s{i}",
            skill_id=f"project:web:s{i}",
            scope=SkillScope.PROJECT,
            project="web",
            slug=f"s{i}",
            description="d" * 5000,
            body="b" * 50_000,
        )
        for i in range(200)
    ]
    prompt = classifier_prompt(skills, PromotionPolicy(), "web")
    assert len(prompt) < MAX_PROMPT_CHARS + 5_000
    assert "more skill(s) left out" in prompt and "project:web:s0" in prompt


SKILL = SkillState(
    stream="skill:" + P, skill_id=P, scope=SkillScope.PROJECT, project="web", slug="deploy"
)


@given(st.one_of(st.text(max_size=300), st.builds(verdict, reasons=st.lists(st.text()))))
def test_any_reply_gives_checked_classifications_or_one_library_error(reply: str) -> None:
    classifier = LlmClassifier(Scripted(reply))
    try:
        found = classifier.classify([SKILL], PromotionPolicy(), "web", timeout=1.0)
    except HermesMemoryError:
        return
    known = {d.id for d in PromotionPolicy().domains}
    assert all(c.task_domain is None or c.task_domain in known for c in found)
