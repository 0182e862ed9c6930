"""Typed results of the skill governance actions (ADR 0031); each has `to_json()`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.ports.skills import CurationJob, CurationStatus, GovernanceRecord

__all__ = [
    "CurationResult",
    "Explanation",
    "GovernanceResult",
    "GovernanceStatus",
    "ReloadResult",
    "SkillGovernanceRow",
    "record_json",
]


def _time(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def record_json(record: GovernanceRecord | None) -> dict[str, Any] | None:
    """A governance record without its backup (which can be large): `restorable` says
    whether one is kept."""
    if record is None:
        return None
    return {
        "skill_id": record.skill_id,
        "state": record.state,
        "task_domain": record.task_domain,
        "reason": record.reason,
        "updated_at": _time(record.updated_at),
        "moved_from": record.promoted_from,
        "moved_to": record.promoted_to,
        "restorable": record.backup is not None,
    }


def _job_json(job: CurationJob | None) -> dict[str, Any] | None:
    if job is None:
        return None
    return {
        "job_id": job.job_id,
        "kind": job.kind.value,
        "state": job.state.value,
        "reason": job.reason,
        "created_at": _time(job.created_at),
        "updated_at": _time(job.updated_at),
        "finished_at": _time(job.finished_at),
    }


def curation_json(status: CurationStatus | None) -> dict[str, Any] | None:
    if status is None:
        return None
    return {
        "project": status.project,
        "active": _job_json(status.active),
        "last": _job_json(status.last),
        "skips": dict(sorted(status.skips.items())),
        "consecutive_failures": status.consecutive_failures,
        "last_success_at": _time(status.last_success_at),
    }


@attrs.frozen(kw_only=True)
class GovernanceResult:
    """The outcome of promote, demote, restore and clear."""

    success: bool
    status: Status
    message: str
    action: str
    skill_id: str | None = None
    #: where the skill is now (promote, demote, restore)
    moved_to: str | None = None
    #: for a refused promote: the criteria, one line each
    criteria: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "success": self.success,
            "status": self.status.value,
            "message": self.message,
            "action": self.action,
            "skill_id": self.skill_id,
        }
        if self.moved_to is not None:
            out["moved_to"] = self.moved_to
        if self.criteria:
            out["criteria"] = list(self.criteria)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


@attrs.frozen(kw_only=True)
class SkillGovernanceRow:
    """One skill in `status`: its recorded governance state and whether it is a promotion
    candidate now (evaluated on the current evidence and policy)."""

    skill_id: str
    scope: str
    state: str  # the record's state, or "none"
    candidate: bool
    task_domain: str | None
    #: the failed criteria (empty for a candidate)
    failed: tuple[str, ...]
    record: GovernanceRecord | None = None
    #: False for a row kept only by its record (a promoted-away or deleted skill)
    exists: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "skill_id": self.skill_id,
            "exists": self.exists,
            "scope": self.scope,
            "state": self.state,
            "candidate": self.candidate,
            "task_domain": self.task_domain,
            "failed": list(self.failed),
            "record": record_json(self.record),
        }


@attrs.frozen(kw_only=True)
class GovernanceStatus:
    success: bool
    status: Status
    message: str
    project: str | None
    skills: tuple[SkillGovernanceRow, ...]
    #: the Curation Jobs section (None without a project or a statistics store)
    curation: CurationStatus | None
    task_domains: tuple[str, ...] = ()
    scope_policy_words: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "status": self.status.value,
            "message": self.message,
            "project": self.project,
            "skills": [row.to_json() for row in self.skills],
            "curation_jobs": curation_json(self.curation),
            "task_domains": list(self.task_domains),
            "scope_policy_words": list(self.scope_policy_words),
            "warnings": list(self.warnings),
        }

    def lines(self) -> list[str]:
        out = [f"Project: {self.project or '(none)'}"]
        if not self.skills:
            out.append("  (no project skills)")
        for row in self.skills:
            if not row.exists or row.scope != "project":
                what = "global skill" if row.exists else "no such skill now"
                out.append(f"  {row.skill_id}: state {row.state} ({what})")
            else:
                mark = "candidate" if row.candidate else "not a candidate"
                why = f" ({', '.join(row.failed)})" if row.failed else ""
                domain = f", task domain {row.task_domain}" if row.task_domain else ""
                out.append(f"  {row.skill_id}: state {row.state}; {mark}{why}{domain}")
            if row.record is not None and row.record.promoted_from and row.record.backup:
                out.append(f"    moved from {row.record.promoted_from} (restore undoes it)")
        out.append("Curation Jobs:")
        c = self.curation
        if c is None:
            out.append("  (no curation: needs a project and the statistics store)")
            return out
        if c.active is None:
            out.append("  active: none")
        else:
            out.append(
                f"  active: job {c.active.job_id} ({c.active.kind.value}, {c.active.state.value} "
                f"since {_time(c.active.updated_at)})"
            )
        if c.last is None:
            out.append("  last: none")
        else:
            out.append(
                f"  last: job {c.last.job_id} ({c.last.kind.value}) {c.last.state.value}, "
                f"reason {c.last.reason or '-'}, at {_time(c.last.finished_at)}"
            )
        skips = ", ".join(f"{k} {v}" for k, v in sorted(c.skips.items())) or "none"
        out.append(f"  skips: {skips}")
        out.append(f"  consecutive failures: {c.consecutive_failures}")
        return out


@attrs.frozen(kw_only=True)
class Explanation:
    success: bool
    status: Status
    message: str
    skill_id: str
    candidate: bool = False
    task_domain: str | None = None
    #: the verdict line, then one line per criterion with its numbers
    lines: tuple[str, ...] = ()
    record: GovernanceRecord | None = None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "status": self.status.value,
            "message": self.message,
            "skill_id": self.skill_id,
            "candidate": self.candidate,
            "task_domain": self.task_domain,
            "lines": list(self.lines),
            "record": record_json(self.record),
            "warnings": list(self.warnings),
        }


@attrs.frozen(kw_only=True)
class CurationResult:
    """A curation run, or why none ran (`refusal`: busy, cooldown, failure-cooldown,
    failure-cap, or a condition such as no-project)."""

    success: bool
    status: Status
    message: str
    kind: str
    job_id: int | None = None
    #: the job's final state (succeeded, failed, timed-out); None when no job ran
    state: str | None = None
    reason_code: str | None = None
    classified: int = 0
    refusal: str | None = None
    until: datetime | None = None
    cleared_stale: int = 0
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "status": self.status.value,
            "message": self.message,
            "kind": self.kind,
            "job_id": self.job_id,
            "state": self.state,
            "reason_code": self.reason_code,
            "classified": self.classified,
            "refusal": self.refusal,
            "until": _time(self.until),
            "cleared_stale": self.cleared_stale,
            "warnings": list(self.warnings),
        }


@attrs.frozen(kw_only=True)
class ReloadResult:
    success: bool
    status: Status
    message: str
    #: the skills a discovery would offer now (global minus hidden, plus the project's)
    visible: tuple[str, ...] = ()
    total: int = 0
    #: events appended by importing hand edits of the folders
    imported: int = 0
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "status": self.status.value,
            "message": self.message,
            "visible": list(self.visible),
            "total": self.total,
            "imported": self.imported,
            "warnings": list(self.warnings),
        }
