"""The `skill_governance_curate` tool (ADR 0031): how a curation child session submits its
structured skill classifications. Registered only in child sessions.

A submission may change the project's task-domain terms and scope-policy words, and classify
the project's skills; nothing else. Any key that names a timing parameter (a timeout, a
cooldown, an interval, a failure cap: ``curationTimeoutMs``, ``autoCurationCooldownMs``,
``autoCurationFailureCooldownMs``, ...), anywhere in the arguments, refuses the whole
submission: those come only from the static configuration, so a curation child cannot lift
its own rate limits. Every text is scanned for secrets and prompt injection first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
from pi_hermes_memory.domain.scanning.scanner import scan
from pi_hermes_memory.domain.skills.promotion import (
    Classification,
    ScopeVerdict,
    TaskDomain,
    task_domain_problem,
)
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.skills.governance.service import SkillGovernance
from pi_hermes_memory.tools.registry import (
    ToolDefinition,
    ToolResult,
    _check_keys,
    _json_type,
    _name,
    _string,
    json_object,
    present,
)

__all__ = [
    "CURATE_TOOL",
    "MAX_CLASSIFICATIONS",
    "MAX_TASK_DOMAINS",
    "MAX_WORDS",
    "Submission",
    "check_submission",
    "run_curate_tool",
    "timing_key",
]

MAX_CLASSIFICATIONS = 200
MAX_REASONS = 20
MAX_REASON_CHARS = 500
MAX_TASK_DOMAINS = 50
MAX_TERMS = 100
MAX_WORDS = 200
MAX_WORD_CHARS = 64

#: words that mark a key as a timing parameter (compared without case, digits or separators)
_TIMING_WORDS = (
    "timeout",
    "cooldown",
    "interval",
    "delay",
    "deadline",
    "backoff",
    "throttle",
    "ratelimit",
    "maxconsecutivefailures",
    "retention",
    "cleanupbudget",
    "staleafter",
)
_MAX_DEPTH = 16

_STRINGS = {"type": "array", "items": {"type": "string"}}
CURATE_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "classifications": {
            "type": "array",
            "maxItems": MAX_CLASSIFICATIONS,
            "description": "One entry per project skill you judged",
            "items": {
                "type": "object",
                "properties": {
                    "skill_id": {"type": "string", "description": "project:<project>:<slug>"},
                    "task_domain": {
                        "type": "string",
                        "description": "the id of the skill's task domain, if any",
                    },
                    "scope_verdict": {
                        "type": "string",
                        "enum": [v.value for v in ScopeVerdict],
                    },
                    "reasons": {**_STRINGS, "description": "short reasons for the verdict"},
                },
                "required": ["skill_id", "scope_verdict", "reasons"],
                "additionalProperties": False,
            },
        },
        "task_domains": {
            "type": "array",
            "maxItems": MAX_TASK_DOMAINS,
            "description": "Task domains whose terms to set (replaces the terms of that id)",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "a lower-case slug"},
                    "description": {"type": "string"},
                    "terms": {**_STRINGS, "description": "words that mark the domain"},
                },
                "required": ["id", "terms"],
                "additionalProperties": False,
            },
        },
        "scope_policy_words": {
            **_STRINGS,
            "description": "General, transferable words (not project names); replaces the "
            "curated list",
        },
    },
    "required": ["classifications"],
    "additionalProperties": False,
}

CURATE_TOOL = ToolDefinition(
    name="skill_governance_curate",
    title="Submit skill governance classifications",
    description=(
        "For a background curation session: submit your classification of this project's "
        "skills (task_domain, scope_verdict global-safe or project-only, reasons), and "
        "optionally the task-domain terms and scope-policy words to use. It records "
        "classifications only: it never promotes, demotes or hides a skill, and it cannot "
        "change timeouts, cooldowns or any other timing parameter."
    ),
    parameters=CURATE_TOOL_SCHEMA,
)


def timing_key(key: str) -> bool:
    """`key` names a timing parameter (a timeout, cooldown, interval, failure cap, ...)."""
    norm = re.sub(r"[^a-z]", "", key.lower())
    return any(word in norm for word in _TIMING_WORDS)


def _timing_keys(value: Any, depth: int = 0) -> list[str]:
    if depth > _MAX_DEPTH:
        return []
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and timing_key(key):
                found.append(key)
            found.extend(_timing_keys(item, depth + 1))
    elif isinstance(value, list):
        for item in value:
            found.extend(_timing_keys(item, depth + 1))
    return found


def _strings(value: Any, where: str, *, limit: int, chars: int) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgumentError(f"{where} must be an array of strings, got {_json_type(value)}")
    if len(value) > limit:
        raise ArgumentError(f"{where} holds {len(value)} items; at most {limit}")
    out = []
    for i, text in enumerate(value):
        text = text.strip()
        if not text:
            raise ArgumentError(f"{where}[{i}] is empty")
        if len(text) > chars:
            raise ArgumentError(f"{where}[{i}] is longer than {chars} characters")
        out.append(text)
    return tuple(out)


def _object(value: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ArgumentError(f"{where} must be an object, got {_json_type(value)}")
    args = present(value)
    _check_keys(args, allowed, f"{where}: ")
    return args


def _classification(value: Any, where: str) -> Classification:
    item_schema = CURATE_TOOL_SCHEMA["properties"]["classifications"]["items"]
    args = _object(value, where, set(item_schema["properties"]))
    skill_id = _string(args, "skill_id", f"{where}.")
    if not skill_id or not skill_id.strip():
        raise ArgumentError(f"{where}.skill_id is required")
    verdict = _string(args, "scope_verdict", f"{where}.")
    if verdict not in [v.value for v in ScopeVerdict]:
        raise ArgumentError(
            f"{where}.scope_verdict must be global-safe or project-only, got {_name(str(verdict))}"
        )
    if "reasons" not in args:
        raise ArgumentError(f"{where}.reasons is required (an array of short reasons)")
    reasons = _strings(
        args["reasons"], f"{where}.reasons", limit=MAX_REASONS, chars=MAX_REASON_CHARS
    )
    domain = _string(args, "task_domain", f"{where}.")
    return Classification(
        skill_id=skill_id.strip(),
        task_domain=domain.strip() if domain and domain.strip() else None,
        scope_verdict=ScopeVerdict(verdict),
        reasons=reasons,
    )


def _task_domain(value: Any, where: str) -> TaskDomain:
    item_schema = CURATE_TOOL_SCHEMA["properties"]["task_domains"]["items"]
    args = _object(value, where, set(item_schema["properties"]))
    domain_id = _string(args, "id", f"{where}.") or ""
    if "terms" not in args:
        raise ArgumentError(f"{where}.terms is required")
    terms = _strings(args["terms"], f"{where}.terms", limit=MAX_TERMS, chars=MAX_WORD_CHARS)
    problem = task_domain_problem(domain_id, terms)
    if problem:
        raise ArgumentError(f"{where}: {problem}")
    description = (_string(args, "description", f"{where}.") or "").strip()
    return TaskDomain(id=domain_id, description=description, terms=terms)


def _array(args: Mapping[str, Any], key: str, limit: int) -> list[Any] | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ArgumentError(f"{key} must be an array, got {_json_type(value)}")
    if len(value) > limit:
        raise ArgumentError(f"{key} holds {len(value)} items; at most {limit}")
    return value


def _blocked(texts: list[tuple[str, str]]) -> ToolResult | None:
    for where, text in texts:
        result = scan(text)
        if result.blocked:
            return {
                "success": False,
                "status": Status.BLOCKED,
                "message": f"Refused: {where} {result.message()}; nothing was stored.",
            }
    return None


@attrs.frozen(kw_only=True)
class Submission:
    """A checked `skill_governance_curate` submission (`check_submission`)."""

    classifications: tuple[Classification, ...]
    task_domains: tuple[TaskDomain, ...] | None
    scope_policy_words: tuple[str, ...] | None


def check_submission(arguments: Any) -> Submission | ToolResult:
    """Check a curate submission as the tool does: timing keys refused, every field checked
    (`ArgumentError` with a precise message), secrets and injections blocked by the scanner.
    Returns the submission, or the refusal as a tool result."""
    arguments = json_object(arguments)
    timing = list(dict.fromkeys(_timing_keys(arguments)))
    if timing:
        names = ", ".join(_name(k) for k in timing[:5])
        return {
            "success": False,
            "status": Status.FORBIDDEN,
            "message": f"Refused: skill_governance_curate cannot change timing parameters "
            f"({names}). Timeouts, cooldowns and failure caps (skillGovernance."
            "curationTimeoutMs, autoCurationCooldownMs, autoCurationFailureCooldownMs, "
            "curationMaxConsecutiveFailures) come only from the static configuration; "
            "nothing was stored.",
            "refused_keys": timing,
        }
    args = present(arguments)
    _check_keys(args, set(CURATE_TOOL_SCHEMA["properties"]), "")
    raw = _array(args, "classifications", MAX_CLASSIFICATIONS)
    if raw is None:
        raise ArgumentError("classifications is required (an array; it may be empty)")
    classifications = [_classification(v, f"classifications[{i}]") for i, v in enumerate(raw)]
    raw_domains = _array(args, "task_domains", MAX_TASK_DOMAINS)
    domains = (
        None
        if raw_domains is None
        else [_task_domain(v, f"task_domains[{i}]") for i, v in enumerate(raw_domains)]
    )
    words = None
    if "scope_policy_words" in args:
        words = _strings(
            args["scope_policy_words"], "scope_policy_words", limit=MAX_WORDS, chars=MAX_WORD_CHARS
        )
    texts = [
        (f"classifications[{i}].reasons", "\n".join(c.reasons))
        for i, c in enumerate(classifications)
    ]
    texts += [
        (f"task_domains[{i}]", "\n".join([d.description, *d.terms]))
        for i, d in enumerate(domains or ())
    ]
    texts += [("scope_policy_words", "\n".join(words or ()))]
    blocked = _blocked([t for t in texts if t[1]])
    if blocked is not None:
        return blocked
    return Submission(
        classifications=tuple(classifications),
        task_domains=None if domains is None else tuple(domains),
        scope_policy_words=words,
    )


def run_curate_tool(governance: SkillGovernance, arguments: Any) -> ToolResult:
    """Check `arguments` and store the submission (`SkillGovernance.record_submission`)."""
    checked = check_submission(arguments)
    if not isinstance(checked, Submission):
        return checked
    classifications, domains = checked.classifications, checked.task_domains
    words = checked.scope_policy_words
    outcome = governance.record_submission(classifications, domains, words)
    if outcome.refused and not outcome.recorded:
        status = Status.FAILED
    elif outcome.refused:
        status = Status.PARTIAL
    else:
        status = Status.OK
    message = f"Recorded {len(outcome.recorded)} classification(s)"
    if outcome.refused:
        message += f"; refused {len(outcome.refused)}"
    if domains is not None or words is not None:
        message += "; updated the curated task domains / scope-policy words"
    out: ToolResult = {
        "success": status is not Status.FAILED,
        "status": status,
        "message": message + ".",
        "recorded": list(outcome.recorded),
        "refused": [{"skill_id": s, "message": m} for s, m in outcome.refused],
        "task_domains": [{"id": d.id, "terms": list(d.terms)} for d in outcome.words.task_domains],
        "scope_policy_words": list(outcome.words.scope_policy_words),
    }
    if outcome.warnings:
        out["warnings"] = list(outcome.warnings)
    return out
