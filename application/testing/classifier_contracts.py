"""The `SkillClassifier` contract suite (skill curation, ADR 0031).

Provide a ``skill_classifier`` fixture. The suite classifies `CONTRACT_SKILLS` (two project
skills of project "web"), so a classifier that asks an LLM can be given a scripted completer
that answers for those ids. It checks what the curation job relies on: `Classification`
values whose task domain is one of the policy's (or None) and whose reasons are text, and
that the only error a short deadline may cause is `CurationTimedOut`.
"""

from __future__ import annotations

from typing import Any, Final

from pi_hermes_memory.domain.skills.promotion import (
    Classification,
    PromotionPolicy,
    ScopeVerdict,
    TaskDomain,
)
from pi_hermes_memory.domain.skills.skill import SkillScope, SkillState
from pi_hermes_memory.errors import CurationTimedOut

__all__ = ["CONTRACT_SKILLS", "SkillClassifierContract"]

CONTRACT_SKILLS: Final = (
    SkillState(
        stream="skill:project:web:deploy",
        skill_id="project:web:deploy",
        scope=SkillScope.PROJECT,
        project="web",
        slug="deploy",
        description="Deploy the web app",
        body="Run ./scripts/deploy.sh on /srv/web, then check https://10.0.0.7/health.\n",
    ),
    SkillState(
        stream="skill:project:web:review",
        skill_id="project:web:review",
        scope=SkillScope.PROJECT,
        project="web",
        slug="review",
        description="Review a pull request",
        body="Read the diff, run the tests, comment on what is unclear.\n",
    ),
)

#: a policy of one task domain: no classification may name another
ONE_DOMAIN: Final = PromotionPolicy(
    task_domains=(TaskDomain(id="shipping", description="deploys", terms=("deploy",)),)
)


def _checked(found: Any, policy: PromotionPolicy) -> list[Classification]:
    assert isinstance(found, list), f"classify returns a list; got {type(found).__name__}"
    known = {d.id for d in policy.domains}
    for item in found:
        assert isinstance(item, Classification)
        assert isinstance(item.skill_id, str) and item.skill_id
        assert isinstance(item.scope_verdict, ScopeVerdict)
        assert item.task_domain is None or item.task_domain in known, (
            f"{item.task_domain!r} is not a task domain of the policy"
        )
        assert isinstance(item.reasons, tuple)
        assert all(isinstance(r, str) for r in item.reasons)
    return found


class SkillClassifierContract:
    """Every `SkillClassifier` passes these tests (the rules, the LLM one, or your own)."""

    def test_classifications_are_checked_values(self, skill_classifier: Any) -> None:
        policy = PromotionPolicy()
        found = _checked(
            skill_classifier.classify(list(CONTRACT_SKILLS), policy, "web", timeout=30.0), policy
        )
        assert found, "a classifier judges at least one of two plain skills"

    def test_task_domains_come_from_the_policy(self, skill_classifier: Any) -> None:
        found = skill_classifier.classify(
            list(CONTRACT_SKILLS),
            ONE_DOMAIN,
            "web",
            timeout=30.0,
            project_names=frozenset({"web", "shop"}),
        )
        _checked(found, ONE_DOMAIN)

    def test_a_short_deadline_only_ever_times_out(self, skill_classifier: Any) -> None:
        policy = PromotionPolicy()
        try:
            found = skill_classifier.classify(list(CONTRACT_SKILLS), policy, "web", timeout=1e-9)
        except CurationTimedOut:
            return
        _checked(found, policy)
