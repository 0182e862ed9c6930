"""The `SkillTelemetry` port in memory (for tests and embedding): the same contract as the
SQLite tables (`SkillTelemetryContract`).

`legacy_loads` stands for the read-only `skill_load_events` history: (skill id, project, at)
rows that only a caller adds (to simulate history) and only the cleanup removes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta

import attrs
from pi_hermes_memory.ports.skills import (
    ACTIVE_JOB_STATES,
    CLEANUP_INTERVAL,
    FINISHED_JOB_STATES,
    STALE_REASON,
    CleanupReport,
    CurationJob,
    CurationKind,
    CurationLimits,
    CurationRefusal,
    CurationStatus,
    GovernanceRecord,
    JobLease,
    JobState,
    PolicyOverrides,
    SkillStatRow,
    SkillVisibility,
    UsageFields,
    UsageRecord,
    aware,
    checked_governance,
    checked_limits,
    checked_overrides,
    checked_usage,
    choice,
    count,
    finished_state,
    name,
    optional_name,
    since_day,
    utc_day,
)
from pi_hermes_memory.skills.curation_lease import facts_of, is_stale, refusal

__all__ = ["InMemorySkillTables", "LegacyLoad"]


@attrs.frozen(kw_only=True)
class LegacyLoad:
    skill_id: str
    project: str | None
    at: datetime


class InMemorySkillTables:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._daily: dict[tuple[str, str | None, date], int] = {}
        self.legacy_loads: list[LegacyLoad] = []
        self._uses: list[UsageRecord] = []
        self._visibility: dict[tuple[str, str], SkillVisibility] = {}
        self._governance: dict[str, GovernanceRecord] = {}
        self._overrides: dict[str, PolicyOverrides] = {}
        self._jobs: dict[int, CurationJob] = {}
        self._skips: dict[tuple[str, str], int] = {}
        self._last_cleanup: datetime | None = None

    def close(self) -> None:
        pass

    # -- loads ---------------------------------------------------------------------------------

    def record_loads(self, skill_ids: Sequence[str], project: str | None, day: date) -> None:
        ids = list(dict.fromkeys(name("skill_id", s) for s in skill_ids))
        project = optional_name("project", project)
        day = utc_day("day", day)
        with self._lock:
            for skill_id in ids:
                key = (skill_id, project, day)
                self._daily[key] = self._daily.get(key, 0) + 1

    def cleanup_loads(self, now: datetime, retention_days: int, budget: int) -> CleanupReport:
        now = aware("now", now)
        count("retention_days", retention_days)
        count("budget", budget)
        if retention_days == 0:
            return CleanupReport(ran=False, reason="disabled")
        with self._lock:
            last = self._last_cleanup
            if last is not None and timedelta(0) <= now - last < CLEANUP_INTERVAL:
                return CleanupReport(ran=False, reason="not-due", last_cleanup=last)
            cutoff = now.astimezone(UTC).date() - timedelta(days=retention_days)
            old_daily = sorted((k for k in self._daily if k[2] < cutoff), key=lambda k: k[2])
            for key in old_daily[:budget]:
                del self._daily[key]
            old_events = sorted(
                (i for i, e in enumerate(self.legacy_loads) if _day(e.at) < cutoff),
                key=lambda i: self.legacy_loads[i].at,
            )
            gone = set(old_events[:budget])
            self.legacy_loads = [e for i, e in enumerate(self.legacy_loads) if i not in gone]
            self._last_cleanup = now
            return CleanupReport(
                ran=True,
                reason="ran",
                deleted_daily=min(budget, len(old_daily)),
                deleted_events=len(gone),
                more_daily=len(old_daily) > budget,
                more_events=len(old_events) > budget,
                cutoff=cutoff,
                last_cleanup=now,
            )

    def load_counts(self, since_day: date | None, project: str | None = None) -> dict[str, int]:
        if since_day is not None:
            utc_day("since_day", since_day)
        project = optional_name("project", project)
        with self._lock:
            days: dict[tuple[str, str | None, date], int] = {}
            for event in self.legacy_loads:
                key = (event.skill_id, event.project, _day(event.at))
                days[key] = days.get(key, 0) + 1
            days.update(self._daily)  # a day with a daily row counts that row only
        counts: dict[str, int] = {}
        for (skill_id, where, day), n in days.items():
            if since_day is not None and day < since_day:
                continue
            if project is not None and where != project:
                continue
            counts[skill_id] = counts.get(skill_id, 0) + n
        return counts

    def stats(self, since_days: int | None, project: str | None, today: date) -> list[SkillStatRow]:
        first = since_day(since_days, today)
        loads = self.load_counts(first, project)
        start = None if first is None else datetime.combine(first, time(), UTC)
        with self._lock:
            uses = [
                u
                for u in self._uses
                if (start is None or u.at >= start) and (project is None or u.project == project)
            ]
        rows = []
        for skill_id in sorted(set(loads) | {u.skill_id for u in uses}):
            mine = [u for u in uses if u.skill_id == skill_id]
            rows.append(
                SkillStatRow(
                    skill_id=skill_id,
                    loads=loads.get(skill_id, 0),
                    usages=len(mine),
                    sessions=len({u.session_id for u in mine}),
                    projects=len({u.project for u in mine if u.project is not None}),
                )
            )
        return rows

    # -- usage evidence ------------------------------------------------------------------------

    def record_use(self, evidence: UsageFields) -> None:
        record = checked_usage(evidence)
        record = attrs.evolve(record, at=record.at.astimezone(UTC))
        with self._lock:
            self._uses.append(record)

    def usages(self, skill_id: str | None = None) -> list[UsageRecord]:
        skill_id = optional_name("skill_id", skill_id)
        with self._lock:
            found = [u for u in self._uses if skill_id is None or u.skill_id == skill_id]
        return sorted(found, key=lambda u: u.at)  # stable: equal times keep insertion order

    # -- visibility ----------------------------------------------------------------------------

    def set_visibility(self, project: str, skill_id: str, state: SkillVisibility | str) -> None:
        key = (name("project", project), name("skill_id", skill_id))
        value = choice(SkillVisibility, "state", state)
        with self._lock:
            self._visibility[key] = value

    def reset_visibility(self, project: str, skill_id: str) -> bool:
        key = (name("project", project), name("skill_id", skill_id))
        with self._lock:
            return self._visibility.pop(key, None) is not None

    def visibility(self, project: str) -> dict[str, SkillVisibility]:
        project = name("project", project)
        with self._lock:
            return {s: v for (p, s), v in sorted(self._visibility.items()) if p == project}

    # -- governance ----------------------------------------------------------------------------

    def governance(self, skill_id: str) -> GovernanceRecord | None:
        skill_id = name("skill_id", skill_id)
        with self._lock:
            return self._governance.get(skill_id)

    def governance_records(self) -> list[GovernanceRecord]:
        with self._lock:
            return [self._governance[k] for k in sorted(self._governance)]

    def set_governance(self, record: GovernanceRecord) -> None:
        record = checked_governance(record)
        record = attrs.evolve(record, updated_at=record.updated_at.astimezone(UTC))
        with self._lock:
            self._governance[record.skill_id] = record

    def clear_governance(self, skill_id: str) -> bool:
        skill_id = name("skill_id", skill_id)
        with self._lock:
            return self._governance.pop(skill_id, None) is not None

    def policy_overrides(self, project: str) -> PolicyOverrides | None:
        project = name("project", project)
        with self._lock:
            return self._overrides.get(project)

    def set_policy_overrides(self, record: PolicyOverrides) -> None:
        r = checked_overrides(record)
        with self._lock:
            self._overrides[r.project] = attrs.evolve(r, updated_at=r.updated_at.astimezone(UTC))

    # -- curation jobs -------------------------------------------------------------------------

    def begin_curation(
        self,
        project: str,
        kind: CurationKind | str,
        now: datetime,
        limits: CurationLimits,
        *,
        queued: bool = False,
    ) -> JobLease | CurationRefusal:
        project = name("project", project)
        job_kind = choice(CurationKind, "kind", kind)
        now = aware("now", now).astimezone(UTC)
        limits = checked_limits(limits)
        with self._lock:
            cleared = 0
            for job in self._project_jobs(project):
                if is_stale(job, now, limits):
                    self._jobs[job.job_id] = attrs.evolve(
                        job,
                        state=JobState.TIMED_OUT,
                        reason=STALE_REASON,
                        finished_at=job.updated_at,
                    )
                    cleared += 1
            refused = refusal(job_kind, now, limits, facts_of(self._project_jobs(project)))
            if refused is not None:
                reason, until = refused
                key = (project, reason.value)
                self._skips[key] = self._skips.get(key, 0) + 1
                return CurationRefusal(
                    project=project,
                    kind=job_kind,
                    reason=reason,
                    until=until,
                    cleared_stale=cleared,
                )
            job_id = max(self._jobs, default=0) + 1
            state = JobState.QUEUED if queued else JobState.RUNNING
            self._jobs[job_id] = CurationJob(
                job_id=job_id,
                project=project,
                kind=job_kind,
                state=state,
                reason=None,
                created_at=now,
                updated_at=now,
            )
            return JobLease(
                job_id=job_id,
                project=project,
                kind=job_kind,
                state=state,
                started_at=now,
                cleared_stale=cleared,
            )

    def start_curation(self, job_id: int, now: datetime) -> bool:
        count("job_id", job_id)
        now = aware("now", now).astimezone(UTC)
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state is not JobState.QUEUED:
                return False
            self._jobs[job_id] = attrs.evolve(job, state=JobState.RUNNING, updated_at=now)
            return True

    def finish_curation(
        self, job_id: int, state: JobState | str, reason_code: str | None, now: datetime
    ) -> bool:
        count("job_id", job_id)
        final = finished_state(state)
        reason_code = optional_name("reason_code", reason_code)
        now = aware("now", now).astimezone(UTC)
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state not in ACTIVE_JOB_STATES:
                return False
            self._jobs[job_id] = attrs.evolve(
                job, state=final, reason=reason_code, updated_at=now, finished_at=now
            )
            return True

    def curation_status(self, project: str) -> CurationStatus:
        project = name("project", project)
        with self._lock:
            jobs = self._project_jobs(project)
            skips = {r: n for (p, r), n in sorted(self._skips.items()) if p == project}
        facts = facts_of(jobs)
        active = [j for j in jobs if j.state in ACTIVE_JOB_STATES]
        finished = [j for j in jobs if j.state in FINISHED_JOB_STATES]
        return CurationStatus(
            project=project,
            active=active[-1] if active else None,
            last=finished[-1] if finished else None,
            skips=skips,
            consecutive_failures=facts.consecutive_failures,
            last_success_at=facts.last_success_at,
        )

    def _project_jobs(self, project: str) -> list[CurationJob]:
        return [j for _, j in sorted(self._jobs.items()) if j.project == project]


def _day(at: datetime) -> date:
    return at.astimezone(UTC).date()
