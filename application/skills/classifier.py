"""The classifier port of skill curation (ADR 0031) and the rule-based classifier it ships
with; the LLM-backed one arrives with the next issue."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pi_hermes_memory.domain.skills.promotion import Classification, PromotionPolicy, classify_skill
from pi_hermes_memory.domain.skills.skill import SkillState
from pi_hermes_memory.errors import CurationTimedOut
from pi_hermes_memory.ports.skills import SkillClassifier

__all__ = ["CurationTimedOut", "RuleBasedClassifier", "SkillClassifier"]


class RuleBasedClassifier:
    """The deterministic classifier: the domain's global-safe rules (`classify_skill`)."""

    #: the prefix of the governance records' reasons
    source = "rules"

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic

    def classify(
        self,
        skills: Sequence[SkillState],
        policy: PromotionPolicy,
        project: str | None,
        *,
        timeout: float,
        project_names: frozenset[str] = frozenset(),
    ) -> list[Classification]:
        start = self._monotonic()
        names = project_names | ({project} if project else frozenset())
        out: list[Classification] = []
        for skill in skills:
            if self._monotonic() - start > timeout:
                raise CurationTimedOut(
                    f"classified {len(out)} of {len(skills)} skills in {timeout:g} s"
                )
            out.append(classify_skill(skill, policy, project_names=names))
        return out
