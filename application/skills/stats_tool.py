"""The `memory_skill_stats` tool and `Memory.skill_stats`: per skill, how often discovery
offered it (loads, per UTC day), the real-use evidence, its governance record and whether it is
a promotion candidate (issue 11 §4). Read-only: it records nothing and changes no state.

A load means only that a skill was offered to a model; it never says that the skill was used
or that it worked. Every result says so (`LOAD_NOTE`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time
from typing import Any

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.errors import HermesMemoryError
from pi_hermes_memory.domain.memory.model import project_name_problem
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.promotion import (
    PromotionPolicy,
    PromotionVerdict,
    UsageEvidence,
)
from pi_hermes_memory.domain.skills.skill import SkillState, parse_skill_id
from pi_hermes_memory.domain.skills.skill_md import format_time
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import ArgumentError, InvalidArgument, InvalidSkillId
from pi_hermes_memory.ports.skills import GovernanceRecord, UsageRecord, since_day
from pi_hermes_memory.skills.service import SkillService
from pi_hermes_memory.tools.registry import (
    ToolDefinition,
    ToolResult,
    _check_keys,
    _json_type,
    _string,
    json_object,
    present,
)

__all__ = [
    "LOAD_NOTE",
    "MAX_SINCE_DAYS",
    "SKILL_STATS_TOOL",
    "SkillStats",
    "SkillStatsReport",
    "SkillUsageSummary",
    "check_stats_options",
    "parse_skill_stats_arguments",
    "run_skill_stats_tool",
    "skill_stats",
    "stats_json",
]

#: the longest window (100 years); omit since_days for all recorded days
MAX_SINCE_DAYS = 36_500

LOAD_NOTE = (
    "Loads count how often discovery offered a skill to a model (one per skill per discovery, "
    "counted per UTC day): a load means only that the skill was offered, never that it was "
    "used or that it worked. Usage counts real `skill` use calls."
)

SKILL_STATS_DESCRIPTION = (
    "Read-only skill statistics: per skill, loads (how often discovery offered it to a model; "
    "NOT evidence that it was used or that it worked), usage evidence from real `skill` use "
    "calls (count, sessions, projects, last use, per task domain), its governance state and "
    "whether it is a promotion candidate (project skills; every criterion with its numbers). "
    f"since_days: the last N UTC days including today (1-{MAX_SINCE_DAYS}; omit for all "
    "time). skill_id: one skill only. project: count only loads and uses in that project "
    "(default: every project). Records nothing."
)

SKILL_STATS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "since_days": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SINCE_DAYS,
            "description": "The last N UTC days, today included (omit: all time).",
        },
        "skill_id": {"type": "string", "description": "global:<slug> or project:<p>:<slug>"},
        "project": {
            "type": "string",
            "description": "Only loads and uses in this project (default: every project).",
        },
    },
    "additionalProperties": False,
}

SKILL_STATS_TOOL = ToolDefinition(
    name="memory_skill_stats",
    title="Skill statistics",
    description=SKILL_STATS_DESCRIPTION,
    parameters=SKILL_STATS_SCHEMA,
    read_only=True,
    idempotent=True,
)


@attrs.frozen(kw_only=True)
class SkillUsageSummary:
    """Real uses in the window: how many, in how many sessions and projects, the last one and
    the uses per task domain (`None`: recorded without one), most used first."""

    count: int = 0
    sessions: int = 0
    projects: int = 0
    last_used: datetime | None = None
    task_domains: tuple[tuple[str | None, int], ...] = ()


@attrs.frozen(kw_only=True)
class SkillStats:
    """One skill's figures. `exists` is False for a skill that has figures but no SKILL.md any
    more (deleted); `promotion` is None when promotion does not apply (`promotion_note` says
    why: a global skill, or a skill that does not exist)."""

    skill_id: str
    scope: SkillScope
    name: str | None
    exists: bool
    hidden: bool
    loads: int
    usage: SkillUsageSummary
    governance: GovernanceRecord | None
    promotion: PromotionVerdict | None
    promotion_note: str = ""


@attrs.frozen(kw_only=True)
class SkillStatsReport:
    """The answer of `Memory.skill_stats`. `first_day`..`last_day` are UTC days (`first_day`
    None: every recorded day); `project` None: loads and uses of every project."""

    success: bool
    status: Status
    message: str
    since_days: int | None
    first_day: date | None
    last_day: date
    project: str | None
    skills: tuple[SkillStats, ...]
    note: str = LOAD_NOTE
    warnings: tuple[str, ...] = ()


# -- argument checks ------------------------------------------------------------------------------


def check_stats_options(
    since_days: object, skill_id: object, project: object, current_project: str | None
) -> tuple[int | None, str | None, str | None]:
    """The options of `skill_stats`, or `InvalidArgument` with a precise message."""
    if since_days is not None:
        if isinstance(since_days, float) and since_days.is_integer():
            since_days = int(since_days)
        if isinstance(since_days, bool) or not isinstance(since_days, int):
            raise InvalidArgument(f"since_days must be an integer, got {_json_type(since_days)}")
        if not 1 <= since_days <= MAX_SINCE_DAYS:
            raise InvalidArgument(
                f"since_days must be from 1 to {MAX_SINCE_DAYS} (omit it for all time), "
                f"got {shown(since_days)}"
            )
    if skill_id is not None:
        if not isinstance(skill_id, str):
            raise InvalidArgument(f"skill_id must be a string, got {_json_type(skill_id)}")
        try:
            scope, owner, _slug = parse_skill_id(skill_id)
        except InvalidSkillId as exc:
            raise InvalidArgument(str(exc)) from None
        if scope is SkillScope.PROJECT and owner != current_project:
            raise InvalidArgument(
                f"{shown(skill_id)} belongs to another project; this session's project is "
                f"{current_project or '(none)'}"
            )
    if project is not None:
        if not isinstance(project, str):
            raise InvalidArgument(f"project must be a string, got {_json_type(project)}")
        problem = project_name_problem(project)
        if problem is not None:
            raise InvalidArgument(problem)
    return since_days, skill_id, project


def parse_skill_stats_arguments(arguments: Any) -> dict[str, Any]:
    """The tool's JSON arguments as keyword arguments of `skill_stats` (unchecked values are
    checked there); `ArgumentError` for unknown keys or a value of the wrong JSON type."""
    arguments = json_object(arguments)
    args = present(arguments)
    _check_keys(args, set(SKILL_STATS_SCHEMA["properties"]), "")
    return {
        "since_days": args.get("since_days"),
        "skill_id": _string(args, "skill_id", ""),
        "project": _string(args, "project", ""),
    }


def run_skill_stats_tool(
    report: Callable[..., SkillStatsReport], current_project: str | None, arguments: Any
) -> ToolResult:
    """Check the tool's arguments (`ArgumentError`: invalid_arguments), run `report` with
    them (`Memory.skill_stats`) and return the JSON result."""
    options = parse_skill_stats_arguments(arguments)
    try:
        check_stats_options(
            options["since_days"], options["skill_id"], options["project"], current_project
        )
    except InvalidArgument as exc:
        raise ArgumentError(str(exc)) from None
    return stats_json(report(**options))


# -- the report -----------------------------------------------------------------------------------


def _in_session(skill_id: str, project: str | None) -> bool:
    """Whether a skill id names a skill this session may see (global, or its project's)."""
    try:
        scope, owner, _slug = parse_skill_id(skill_id)
    except InvalidSkillId:
        return False
    return scope is SkillScope.GLOBAL or (owner is not None and owner == project)


def _usage(records: Sequence[UsageRecord]) -> SkillUsageSummary:
    if not records:
        return SkillUsageSummary()
    domains = Counter(r.task_domain for r in records)
    return SkillUsageSummary(
        count=len(records),
        sessions=len({r.session_id for r in records}),
        projects=len({r.project for r in records if r.project is not None}),
        last_used=max(r.at for r in records),
        task_domains=tuple(
            sorted(domains.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))
        ),
    )


def _evidence(record: UsageRecord) -> UsageEvidence:
    return UsageEvidence(
        skill_id=record.skill_id,
        session_id=record.session_id,
        project=record.project,
        task_domain=record.task_domain,
        at=record.at,
        main_session=record.main_session,
    )


def skill_stats(
    service: SkillService,
    policy: PromotionPolicy,
    *,
    now: datetime,
    since_days: int | None = None,
    skill_id: str | None = None,
    project: str | None = None,
) -> SkillStatsReport:
    """Figures of this session's skills (the global ones and its project's: the live ones,
    and deleted ones that still have figures in the window), or of `skill_id` only.

    Loads and uses are counted from UTC day `today - since_days + 1` on (None: every day), in
    `project` only (None: every project). The promotion verdict weighs every recorded use of
    the skill, whatever the window (as governance does). Raises `InvalidArgument` for a bad
    option and `HermesMemoryError` when the store keeps no statistics.
    """
    telemetry = service.telemetry
    if telemetry is None:
        raise HermesMemoryError(
            "skill statistics are off: this store keeps no statistics (a custom storage "
            "without skill_telemetry, or a read-only store)"
        )
    since_days, skill_id, project = check_stats_options(
        since_days, skill_id, project, service.project
    )
    today = now.astimezone(UTC).date()
    first = since_day(since_days, today)
    start = None if first is None else datetime.combine(first, time(), UTC)
    warnings: list[str] = []
    live = {s.skill_id: s for s in service.skills(warnings)}
    loads = telemetry.load_counts(first, project)
    every_use = telemetry.usages()
    uses: dict[str, list[UsageRecord]] = {}
    for record in every_use:
        uses.setdefault(record.skill_id, []).append(record)
    in_window = {
        i: [
            r
            for r in records
            if (start is None or r.at >= start) and (project is None or r.project == project)
        ]
        for i, records in uses.items()
    }
    if skill_id is not None:
        ids = [skill_id]
    else:
        counted = {i for i, n in loads.items() if n} | {i for i, r in in_window.items() if r}
        ids = sorted(set(live) | {i for i in counted if _in_session(i, service.project)})
    hidden = service.hidden()
    global_slugs = frozenset(s.slug for s in live.values() if s.scope is SkillScope.GLOBAL)
    projects = frozenset(r.project for r in every_use if r.project is not None)
    if service.project is not None:
        projects |= {service.project}
    rows = tuple(
        _row(
            i,
            live.get(i),
            hidden=i in hidden,
            loads=loads.get(i, 0),
            window=in_window.get(i, []),
            evidence=uses.get(i, []),
            governance=telemetry.governance(i),
            policy=policy,
            global_slugs=global_slugs,
            projects=projects,
        )
        for i in ids
    )
    window = (
        "over every recorded day"
        if first is None
        else f"over the last {since_days} UTC day(s), {first.isoformat()} to {today.isoformat()}"
    )
    where = " in every project" if project is None else f" in project {project}"
    candidates = sum(1 for r in rows if r.promotion is not None and r.promotion.candidate)
    message = (
        f"{len(rows)} skill(s); loads and uses {window}{where}; {candidates} promotion "
        "candidate(s). A load means only that a skill was offered, never that it was used or "
        "that it worked (see note)."
    )
    return SkillStatsReport(
        success=True,
        status=Status.OK if rows else Status.NO_RESULTS,
        message=message,
        since_days=since_days,
        first_day=first,
        last_day=today,
        project=project,
        skills=rows,
        warnings=tuple(warnings),
    )


def _row(
    skill_id: str,
    state: SkillState | None,
    *,
    hidden: bool,
    loads: int,
    window: Sequence[UsageRecord],
    evidence: Sequence[UsageRecord],
    governance: GovernanceRecord | None,
    policy: PromotionPolicy,
    global_slugs: frozenset[str],
    projects: frozenset[str],
) -> SkillStats:
    scope = parse_skill_id(skill_id)[0]
    verdict: PromotionVerdict | None = None
    note = ""
    if state is None:
        note = "the skill does not exist (deleted, or never created): nothing to promote"
    elif scope is SkillScope.GLOBAL:
        note = "a global skill: promotion applies to project skills"
    else:
        verdict = policy.evaluate(state, [_evidence(r) for r in evidence], global_slugs, projects)
    return SkillStats(
        skill_id=skill_id,
        scope=scope,
        name=None if state is None else state.name,
        exists=state is not None,
        hidden=hidden,
        loads=loads,
        usage=_usage(window),
        governance=governance,
        promotion=verdict,
        promotion_note=note,
    )


# -- JSON -----------------------------------------------------------------------------------------


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else format_time(moment)


def _promotion_json(row: SkillStats) -> dict[str, Any]:
    verdict = row.promotion
    if verdict is None:
        return {"status": "not_applicable", "reason": row.promotion_note}
    return {
        "status": "candidate" if verdict.candidate else "not_candidate",
        "reason": (
            "every criterion holds"
            if verdict.candidate
            else f"failed: {', '.join(verdict.reasons)}"
        ),
        "task_domain": verdict.task_domain,
        "overwrite": verdict.overwrite,
        "criteria": [
            {
                "name": c.name,
                "required": c.required,
                "actual": c.actual,
                "passed": c.passed,
                "detail": c.detail,
            }
            for c in verdict.criteria
        ],
    }


def _governance_json(record: GovernanceRecord | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {
        "state": record.state,
        "updated": _time(record.updated_at),
        "task_domain": record.task_domain,
        "reason": record.reason,
        "promoted_to": record.promoted_to,
        "promoted_from": record.promoted_from,
    }


def skill_stats_row_json(row: SkillStats) -> dict[str, Any]:
    return {
        "id": row.skill_id,
        "scope": row.scope.value,
        "name": row.name,
        "exists": row.exists,
        "hidden": row.hidden,
        "loads": row.loads,
        "usage": {
            "count": row.usage.count,
            "sessions": row.usage.sessions,
            "projects": row.usage.projects,
            "last_used": _time(row.usage.last_used),
            "task_domains": [
                {"task_domain": domain, "count": n} for domain, n in row.usage.task_domains
            ],
        },
        "governance": _governance_json(row.governance),
        "promotion": _promotion_json(row),
    }


def stats_json(report: SkillStatsReport) -> ToolResult:
    out: ToolResult = {
        "success": report.success,
        "status": report.status,
        "message": report.message,
        "note": report.note,
        "window": {
            "since_days": report.since_days,
            "first_day": None if report.first_day is None else report.first_day.isoformat(),
            "last_day": report.last_day.isoformat(),
            "project": report.project,
        },
        "skills": [skill_stats_row_json(r) for r in report.skills],
    }
    if report.warnings:
        out["warnings"] = list(report.warnings)
    return out
