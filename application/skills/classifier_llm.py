"""The LLM-backed skill classifier (issue 12 §5): the classifier port of curation jobs.

It plugs into the existing curation job path (`SkillGovernance.curate()`), so the job's lease,
cooldowns, failure cap and ``curationTimeoutMs`` apply unchanged: the timeout is passed to the
LLM as the completion's hard limit.

The prompt holds the project's skills (each clipped, the whole bounded by `MAX_PROMPT_CHARS`)
and the policy's task domains. The reply is read leniently, as `parse_reply` reads one (the
JSON as is, a fenced block, first `{` to last `}`), and must have the `skill_governance_curate`
tool's shape; it is checked by that tool's own validation (`check_submission`: timing keys
refused, every field checked, secrets blocked). A refused or unreadable reply fails the job
(reason ``classifier-error``, counted by the failure cap); a completion timeout ends it as
``timeout``. Classifications naming a task domain the policy does not know keep their verdict
without the domain. The reply's `task_domains` / `scope_policy_words` are checked but not
applied here: curated words are recorded only through the curate tool, by a person's or a
curation child's explicit submission.

LLM off: the classifier falls back to the rule-based one (`RuleBasedClassifier`) and says so
first in every classification's reasons ("the LLM is off: <why>; classified by the rules"), so a
curation still runs and the governance record shows who judged it. Bootstrap selects this
classifier only when the LLM is on; the fallback covers a completer that reports `off` later.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs
from pi_hermes_memory.domain.learning.llm_reply import locate_json
from pi_hermes_memory.domain.skills.promotion import Classification, PromotionPolicy
from pi_hermes_memory.domain.skills.skill import SkillState
from pi_hermes_memory.errors import (
    ArgumentError,
    CompletionFailed,
    CompletionFailure,
    CurationTimedOut,
    HermesMemoryError,
)
from pi_hermes_memory.learning.llm import guarded_complete
from pi_hermes_memory.ports.llm import Completer
from pi_hermes_memory.skills.classifier import RuleBasedClassifier
from pi_hermes_memory.skills.governance.tool import Submission, check_submission

__all__ = ["MAX_PROMPT_CHARS", "LlmClassifier", "classifier_prompt"]

#: characters of skill text in one prompt (all skills together)
MAX_PROMPT_CHARS: Final = 60_000
#: characters of one skill's body in the prompt
MAX_SKILL_CHARS: Final = 2_000

SYSTEM_PROMPT: Final = (
    "You classify procedural skills of one software project for governance. For each skill "
    "decide its task domain (one of the given domain ids, or null) and its scope verdict: "
    '"global-safe" when the procedure works in any repository, "project-only" when it '
    "depends on this project's paths, scripts, architecture, names or release. Give short "
    "reasons. Answer with one JSON object only, in this shape: "
    '{"classifications": [{"skill_id": "...", "task_domain": "... or null", '
    '"scope_verdict": "global-safe|project-only", "reasons": ["..."]}]}. '
    "Never include timing parameters, secrets or credentials."
)


def classifier_prompt(
    skills: Sequence[SkillState], policy: PromotionPolicy, project: str | None
) -> str:
    """The user prompt: the project, its task domains and its skills, bounded in size."""
    domains = [
        {"id": d.id, "description": d.description, "terms": list(d.terms)} for d in policy.domains
    ]
    listed: list[dict[str, Any]] = []
    used = 0
    left_out = 0
    for skill in skills:
        item = {
            "skill_id": skill.skill_id,
            "name": skill.display_name or skill.slug,
            "description": skill.description[:500],
            "body": skill.body[:MAX_SKILL_CHARS],
        }
        size = len(json.dumps(item, ensure_ascii=False))
        if used + size > MAX_PROMPT_CHARS:
            left_out += 1
            continue
        used += size
        listed.append(item)
    payload: dict[str, Any] = {"project": project, "task_domains": domains, "skills": listed}
    if left_out:
        payload["note"] = f"{left_out} more skill(s) left out to bound the prompt"
    return json.dumps(payload, ensure_ascii=False, indent=1)


@attrs.define
class LlmClassifier:
    """Classifies skills by asking the LLM (`Completer`); see the module docstring."""

    completer: Completer
    monotonic: Callable[[], float] = time.monotonic
    #: the prefix of the governance records' reasons (the rules' fallback notes itself)
    source: str = "llm"

    def classify(
        self,
        skills: Sequence[SkillState],
        policy: PromotionPolicy,
        project: str | None,
        *,
        timeout: float,
        project_names: frozenset[str] = frozenset(),
    ) -> list[Classification]:
        try:
            reply = guarded_complete(
                self.completer,
                SYSTEM_PROMPT,
                classifier_prompt(skills, policy, project),
                timeout=timeout,
            )
        except CompletionFailed as exc:
            if exc.reason is CompletionFailure.TIMEOUT:
                raise CurationTimedOut(f"the LLM gave no reply within {timeout:g} s") from exc
            if exc.reason is not CompletionFailure.OFF:
                raise
            return self._rules(skills, policy, project, timeout, project_names, exc.detail)
        submission = _submission(reply)
        known = {d.id for d in policy.domains}
        return [
            c if c.task_domain in known else attrs.evolve(c, task_domain=None)
            for c in submission.classifications
        ]

    def _rules(
        self,
        skills: Sequence[SkillState],
        policy: PromotionPolicy,
        project: str | None,
        timeout: float,
        project_names: frozenset[str],
        why: str,
    ) -> list[Classification]:
        found = RuleBasedClassifier(self.monotonic).classify(
            skills, policy, project, timeout=timeout, project_names=project_names
        )
        why = (why or "not configured").removeprefix("the LLM is off: ")  # no stutter
        note = f"the LLM is off: {why[:160]}; classified by the rules"
        return [attrs.evolve(c, reasons=(note, *c.reasons)) for c in found]


def _submission(reply: str) -> Submission:
    shape, value = locate_json(reply)
    if not isinstance(value, dict):
        raise HermesMemoryError(
            f"the LLM's curation reply holds no JSON object ({shape.value}); nothing was recorded"
        )
    try:
        checked = check_submission(value)
    except ArgumentError as exc:
        raise HermesMemoryError(f"the LLM's curation reply was refused: {exc}") from exc
    if not isinstance(checked, Submission):
        raise HermesMemoryError(f"the LLM's curation reply was refused: {checked['message']}")
    return checked
