"""The shipped classifiers, the Markdown format, the clocks and the id factories pass their
contracts (`SkillClassifier`, `DocumentFormat`, `Clock`, `IdFactory`); a broken one of each
fails them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.system import SystemClock, UlidFactory
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.skills.promotion import Classification, PromotionPolicy
from pi_hermes_memory.domain.skills.skill import SkillState
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure
from pi_hermes_memory.skills.classifier import RuleBasedClassifier
from pi_hermes_memory.skills.classifier_llm import LlmClassifier
from pi_hermes_memory.testing import (
    ClockContract,
    DocumentFormatContract,
    IdFactoryContract,
    SkillClassifierContract,
)
from pi_hermes_memory.testing.classifier_contracts import CONTRACT_SKILLS

from tests.support.fakes import SequentialIds, StepClock


class Scripted:
    """A completer answering for `CONTRACT_SKILLS`, or failing with `fail`."""

    def __init__(self, fail: CompletionFailure | None = None) -> None:
        self.fail = fail

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        if self.fail is not None:
            raise CompletionFailed(self.fail, "fake", "scripted failure")
        return json.dumps(
            {
                "classifications": [
                    {
                        "skill_id": s.skill_id,
                        "task_domain": "deployment",  # unknown to a policy without it
                        "scope_verdict": "project-only",
                        "reasons": ["names the project's scripts"],
                    }
                    for s in CONTRACT_SKILLS
                ]
            }
        )


class TestRuleBasedClassifier(SkillClassifierContract):
    @pytest.fixture
    def skill_classifier(self) -> RuleBasedClassifier:
        return RuleBasedClassifier()


class TestLlmClassifier(SkillClassifierContract):
    @pytest.fixture
    def skill_classifier(self) -> LlmClassifier:
        return LlmClassifier(Scripted())


class TestLlmClassifierWithTheLlmOff(SkillClassifierContract):
    @pytest.fixture
    def skill_classifier(self) -> LlmClassifier:
        return LlmClassifier(Scripted(fail=CompletionFailure.OFF))


def test_the_classifier_contract_catches_a_made_up_task_domain() -> None:
    class Inventive(RuleBasedClassifier):
        def classify(
            self,
            skills: Sequence[SkillState],
            policy: PromotionPolicy,
            project: str | None,
            *,
            timeout: float,
            project_names: frozenset[str] = frozenset(),
        ) -> list[Classification]:
            found = super().classify(
                skills, policy, project, timeout=timeout, project_names=project_names
            )
            return [attrs.evolve(c, task_domain="astrology") for c in found]

    with pytest.raises(AssertionError, match="astrology"):
        TestRuleBasedClassifier().test_task_domains_come_from_the_policy(Inventive())


def test_the_classifier_contract_catches_another_error_for_a_short_deadline() -> None:
    class Impatient(RuleBasedClassifier):
        def classify(self, *args: Any, timeout: float, **kw: Any) -> list[Classification]:
            if timeout < 1:
                raise TimeoutError("too short")
            return super().classify(*args, timeout=timeout, **kw)

    with pytest.raises(TimeoutError):
        TestRuleBasedClassifier().test_a_short_deadline_only_ever_times_out(Impatient())


class TestMarkdownFormat(DocumentFormatContract):
    @pytest.fixture
    def document_format(self) -> MarkdownFormat:
        return MarkdownFormat()


def test_the_format_contract_catches_a_stale_cached_render() -> None:
    class Stale(MarkdownFormat):
        """Returns its last render of a target whenever the row count did not change."""

        def __init__(self) -> None:
            super().__init__()
            self._memo: dict[tuple[Target, int], str] = {}

        def render(
            self,
            entries: Sequence[MemoryEntry],
            target: Target,
            *,
            stamp: VersionLine | None = None,
        ) -> str:
            key = (target, len(entries))
            if key not in self._memo:
                self._memo[key] = super().render(entries, target, stamp=stamp)
            return self._memo[key]

    with pytest.raises(AssertionError):
        TestMarkdownFormat().test_a_render_depends_only_on_its_arguments(Stale())


class TestSystemClock(ClockContract):
    @pytest.fixture
    def clock(self) -> SystemClock:
        return SystemClock()


class TestStepClock(ClockContract):
    @pytest.fixture
    def clock(self) -> StepClock:
        return StepClock()


def test_the_clock_contract_catches_a_naive_clock() -> None:
    class Naive:
        def now(self) -> datetime:
            return datetime(2026, 7, 29, 12, 0)

    with pytest.raises(AssertionError):
        TestSystemClock().test_now_is_aware_utc(Naive())


def test_the_clock_contract_catches_a_clock_going_back() -> None:
    with pytest.raises(AssertionError):
        TestStepClock().test_now_never_goes_back(StepClock(step=timedelta(seconds=-1)))


def test_the_clock_contract_catches_another_zone() -> None:
    class Paris:
        def now(self) -> datetime:
            return datetime.now(UTC).astimezone(timezone(timedelta(hours=2)))

    with pytest.raises(AssertionError):
        TestSystemClock().test_now_is_aware_utc(Paris())


class TestUlidFactory(IdFactoryContract):
    @pytest.fixture
    def id_factory(self) -> UlidFactory:
        return UlidFactory()


class TestSequentialIds(IdFactoryContract):
    @pytest.fixture
    def id_factory(self) -> SequentialIds:
        return SequentialIds()


def test_the_id_contract_catches_repeated_ids() -> None:
    class Repeating(SequentialIds):
        def new_id(self) -> str:
            return super().new_id()[:-1]  # e000010 .. e000019 all become e00001

    with pytest.raises(AssertionError):
        TestSequentialIds().test_ids_are_unique_strings(Repeating())


def test_the_id_contract_catches_ids_that_do_not_follow_time() -> None:
    class Descending(SequentialIds):
        def new_id(self) -> str:
            self.n -= 1
            return f"{self.prefix}{self.n + 1_000_000:07d}"

    with pytest.raises(AssertionError):
        TestSequentialIds().test_a_later_id_sorts_after(Descending())


def test_ids_random_within_a_millisecond_fail_the_contract() -> None:
    class RandomWithinMs:  # the ULID factory before it was monotonic
        def new_id(self) -> str:
            value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
            return f"{value:032x}"

    with pytest.raises(AssertionError):
        TestUlidFactory().test_each_id_sorts_after_the_one_before(RandomWithinMs())


def test_ulids_keep_increasing_when_the_clock_steps_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    factory = UlidFactory()
    now = [1_700_000_000.5]
    monkeypatch.setattr("pi_hermes_memory.adapters.system.time.time", lambda: now[0])
    first = factory.new_id()
    now[0] -= 5.0  # NTP stepped the clock back
    second = factory.new_id()
    now[0] += 10.0
    third = factory.new_id()
    assert first < second < third
    assert len({first, second, third}) == 3
