"""The skill statistics and governance storage port (issue 11 §4, §5).

`SkillTelemetry` is what the skill services need from `sessions.db`: load counts per UTC day,
real-use evidence, per-project visibility, governance state per skill and the project-level
curation lease. Adapters satisfy it structurally (`SqliteSkillTables`,
`InMemorySkillTables`); both pass `pi_hermes_memory.testing.SkillTelemetryContract`.

Skill ids are plain strings (`global:<slug>`, `project:<project>:<slug>`); the storage does not
parse them. Times are timezone-aware datetimes (any zone; stored as UTC); days are UTC dates.

Loads (`skill_load_daily`): one exposure per skill per `record_loads` call, counted per
(skill, project, UTC day). `skill_load_events` is read-only history (raw rows of the old
per-load table): it is counted but never written, except by the cleanup's deletes. A day that
has a daily row for a skill and project counts the daily row only; a day with history rows
and no daily row counts its raw rows (the daily table is the aggregate the history was
backfilled into, so a day present in both would otherwise count twice).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Protocol, TypeVar

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.skills.promotion import (
    Classification,
    PromotionPolicy,
    UsageEvidence,
)
from pi_hermes_memory.domain.skills.skill import SkillState
from pi_hermes_memory.errors import InvalidArgument

__all__ = [
    "ACTIVE_JOB_STATES",
    "CLEANUP_INTERVAL",
    "FINISHED_JOB_STATES",
    "STALE_REASON",
    "CleanupReport",
    "CurationJob",
    "CurationKind",
    "CurationLimits",
    "CurationRefusal",
    "CurationStatus",
    "GovernanceRecord",
    "JobLease",
    "JobState",
    "PolicyOverrides",
    "RefusalReason",
    "SkillClassifier",
    "SkillStatRow",
    "SkillTelemetry",
    "SkillVisibility",
    "UsageFields",
    "UsageRecord",
    "aware",
    "since_day",
]

#: the least time between two opportunistic cleanups of the load tables
CLEANUP_INTERVAL = timedelta(hours=24)
#: the reason code of a job that `begin_curation` found stale and closed as timed out
STALE_REASON = "stale"


class SkillVisibility(enum.StrEnum):
    HIDDEN = "hidden"
    SHOWN = "shown"


class CurationKind(enum.StrEnum):
    MANUAL = "manual"
    AUTO = "auto"


class JobState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed-out"


ACTIVE_JOB_STATES = frozenset({JobState.QUEUED, JobState.RUNNING})
FINISHED_JOB_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.TIMED_OUT})


class RefusalReason(enum.StrEnum):
    BUSY = "busy"
    COOLDOWN = "cooldown"
    FAILURE_COOLDOWN = "failure-cooldown"
    FAILURE_CAP = "failure-cap"


#: one real `skill` use, as stored in `skill_usage_events` (never cleaned): the domain's
#: usage evidence, which the promotion policy reads as it is
UsageRecord = UsageEvidence
UsageFields = UsageEvidence


@attrs.frozen(kw_only=True)
class CleanupReport:
    """What one `cleanup_loads` call did.

    `ran` is False when cleanup is disabled (retention 0: nothing written, not even the
    timestamp) or not due (the last one was under 24 h ago); then nothing was deleted.
    `more_daily` / `more_events`: rows older than the cutoff remain (the budget ran out); the
    next due run continues. `cutoff`: rows of days before it were deleted.
    """

    ran: bool
    reason: str  # "disabled", "not-due" or "ran"
    deleted_daily: int = 0
    deleted_events: int = 0
    more_daily: bool = False
    more_events: bool = False
    cutoff: date | None = None
    last_cleanup: datetime | None = None


@attrs.frozen(kw_only=True)
class SkillStatRow:
    """One skill's figures over a window: loads (discovery exposures, not quality), real
    uses, distinct sessions and distinct projects of those uses."""

    skill_id: str
    loads: int
    usages: int
    sessions: int
    projects: int


@attrs.frozen(kw_only=True)
class GovernanceRecord:
    """A skill's governance state (`state`: e.g. candidate, promoted, demoted, blocked,
    cleared; the storage keeps any non-empty word). `backup` is a serialized copy of the
    skill for `restore` (opaque to the storage)."""

    skill_id: str
    state: str
    updated_at: datetime
    task_domain: str | None = None
    reason: str | None = None
    promoted_to: str | None = None
    promoted_from: str | None = None
    backup: str | None = None


@attrs.frozen(kw_only=True)
class PolicyOverrides:
    """A project's curated promotion-policy words (task-domain terms and scope-policy words,
    set only through `skill_governance_curate`, ADR 0031). `data` is JSON, opaque to the
    storage; timing parameters are never part of it."""

    project: str
    data: str
    updated_at: datetime


@attrs.frozen(kw_only=True)
class CurationLimits:
    """The static timing rules of the curation lease (never from a curation result).

    stale_after: a queued or running job not updated for longer is closed as timed out.
    cooldown: an automatic run waits this long after the last success.
    failure_cooldown: an automatic run waits this long after any attempt ended.
    max_consecutive_failures: automatic runs stop after this many failures in a row (0: never).
    """

    stale_after: timedelta
    cooldown: timedelta = timedelta(0)
    failure_cooldown: timedelta = timedelta(0)
    max_consecutive_failures: int = 0


@attrs.frozen(kw_only=True)
class CurationJob:
    """A curation job. `finished_at`: when it ended (for a job closed as stale, its last
    sign of life, `updated_at`, not the time it was found stale)."""

    job_id: int
    project: str
    kind: CurationKind
    state: JobState
    reason: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None


@attrs.frozen(kw_only=True)
class JobLease:
    """The project's curation lease is held by job `job_id` until `finish_curation`."""

    job_id: int
    project: str
    kind: CurationKind
    state: JobState
    started_at: datetime
    cleared_stale: int = 0  # stale jobs closed before the lease was granted


@attrs.frozen(kw_only=True)
class CurationRefusal:
    """No lease: `reason` says why; `until` is when a cooldown ends (None: busy or capped)."""

    project: str
    kind: CurationKind
    reason: RefusalReason
    until: datetime | None = None
    cleared_stale: int = 0


@attrs.frozen(kw_only=True)
class CurationStatus:
    """The Curation Jobs section of `/memory-skill-governance status`."""

    project: str
    active: CurationJob | None
    last: CurationJob | None  # the most recently finished job
    skips: dict[str, int]  # refusals per reason code
    consecutive_failures: int
    last_success_at: datetime | None


class SkillTelemetry(Protocol):
    """Skill statistics, visibility, usage evidence, governance state and curation jobs.

    Every method raises `InvalidArgument` for a malformed argument and a `StorageFailed`
    subclass (never a driver exception) when the store cannot be read or written.
    """

    # -- loads ---------------------------------------------------------------------------------

    def record_loads(self, skill_ids: Sequence[str], project: str | None, day: date) -> None:
        """Count one exposure of each distinct skill on UTC `day` (upsert count + 1)."""
        ...

    def cleanup_loads(self, now: datetime, retention_days: int, budget: int) -> CleanupReport:
        """The opportunistic TTL cleanup of `skill_load_daily` and `skill_load_events`.

        retention_days 0: disabled, nothing written. Otherwise runs only when the last
        cleanup was at least 24 h ago (or never ran): deletes up to `budget` rows per table
        whose UTC day is before `now`'s UTC day minus `retention_days`, oldest first, and
        records `now` as the cleanup time even when rows remain. `skill_usage_events` is
        never touched.
        """
        ...

    def load_counts(self, since_day: date | None, project: str | None = None) -> dict[str, int]:
        """Loads per skill from UTC day `since_day` on (None: all days), in `project` (None:
        every project), daily rows plus history days without a daily row."""
        ...

    def stats(self, since_days: int | None, project: str | None, today: date) -> list[SkillStatRow]:
        """Per skill (sorted by id): loads, uses, sessions and projects over the last
        `since_days` UTC days (1: today only; 7: today and the 6 days before; None: all),
        in `project` (None: every project). Skills with neither loads nor uses are left out."""
        ...

    # -- usage evidence ------------------------------------------------------------------------

    def record_use(self, evidence: UsageFields) -> None:
        """Store one real use (`skill_usage_events`)."""
        ...

    def usages(self, skill_id: str | None = None) -> list[UsageRecord]:
        """Stored uses of one skill (None: all), oldest first."""
        ...

    # -- visibility ----------------------------------------------------------------------------

    def set_visibility(self, project: str, skill_id: str, state: SkillVisibility | str) -> None:
        """Hide or show a skill in a project (replaces the project's previous choice)."""
        ...

    def reset_visibility(self, project: str, skill_id: str) -> bool:
        """Forget the project's choice for the skill; True when there was one."""
        ...

    def visibility(self, project: str) -> dict[str, SkillVisibility]:
        """The project's explicit choices by skill id."""
        ...

    # -- governance ----------------------------------------------------------------------------

    def governance(self, skill_id: str) -> GovernanceRecord | None: ...

    def governance_records(self) -> list[GovernanceRecord]:
        """Every stored record, sorted by skill id."""
        ...

    def set_governance(self, record: GovernanceRecord) -> None:
        """Store the skill's record, replacing the previous one."""
        ...

    def clear_governance(self, skill_id: str) -> bool:
        """Delete the skill's record; True when there was one."""
        ...

    def policy_overrides(self, project: str) -> PolicyOverrides | None:
        """The project's curated policy words, or None."""
        ...

    def set_policy_overrides(self, record: PolicyOverrides) -> None:
        """Store the project's curated policy words, replacing the previous ones."""
        ...

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
        """Take the project's one curation lease (shared by manual and automatic runs).

        Stale queued/running jobs are closed first (timed-out, reason `stale`). Refused
        `busy` while a job is queued or running. An automatic run is also refused
        `failure-cap` (limit reached), `cooldown` (after the last success) or
        `failure-cooldown` (after the last attempt), checked in that order. Every refusal
        counts one skip for its reason. The new job is running (queued with `queued`).
        """
        ...

    def start_curation(self, job_id: int, now: datetime) -> bool:
        """A queued job starts running; False when it is not queued (finished, stale)."""
        ...

    def finish_curation(
        self, job_id: int, state: JobState | str, reason_code: str | None, now: datetime
    ) -> bool:
        """End an active job (succeeded, failed or timed-out) and release the lease; False
        when the job is not active (unknown, already finished or closed as stale)."""
        ...

    def curation_status(self, project: str) -> CurationStatus: ...


# -- shared argument rules (both adapters use these) ---------------------------------------------


def aware(name: str, value: object) -> datetime:
    """`value` if it is a timezone-aware datetime, else InvalidArgument."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise InvalidArgument(f"{name} must be a timezone-aware datetime, got {shown(value)}")
    return value


def utc_day(name: str, value: object) -> date:
    """`value` if it is a date (not a datetime), else InvalidArgument."""
    if not isinstance(value, date) or isinstance(value, datetime):
        raise InvalidArgument(f"{name} must be a date, got {shown(value)}")
    return value


def name(kind: str, value: object) -> str:
    """`value` if it is a non-empty string, else InvalidArgument."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{kind} must be a non-empty string, got {shown(value)}")
    return value


def optional_name(kind: str, value: object) -> str | None:
    return None if value is None else name(kind, value)


def count(kind: str, value: object, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(f"{kind} must be an integer >= {minimum}, got {shown(value)}")
    return value


_E = TypeVar("_E", bound=enum.StrEnum)


def choice(kind: type[_E], label: str, value: object) -> _E:
    for member in kind:
        if isinstance(value, str) and member.value == value:
            return member
    choices = ", ".join(repr(m.value) for m in kind)
    raise InvalidArgument(f"{label} must be one of {choices}, got {shown(value)}")


def finished_state(value: object) -> JobState:
    """`value` as a final job state (succeeded, failed, timed-out), else InvalidArgument."""
    final = choice(JobState, "state", value)
    if final not in FINISHED_JOB_STATES:
        choices = ", ".join(repr(s.value) for s in JobState if s in FINISHED_JOB_STATES)
        raise InvalidArgument(f"state must be one of {choices}, got {final.value!r}")
    return final


def since_day(since_days: int | None, today: date) -> date | None:
    """The first UTC day of a window of `since_days` days ending today (None: no bound)."""
    if since_days is None:
        return None
    count("since_days", since_days, minimum=1)
    utc_day("today", today)
    return today - timedelta(days=since_days - 1)


def checked_limits(limits: object) -> CurationLimits:
    if not isinstance(limits, CurationLimits):
        raise InvalidArgument(f"limits must be CurationLimits, got {shown(limits)}")
    for label in ("stale_after", "cooldown", "failure_cooldown"):
        if getattr(limits, label) < timedelta(0):
            raise InvalidArgument(f"limits.{label} must not be negative")
    count("limits.max_consecutive_failures", limits.max_consecutive_failures)
    return limits


def checked_usage(evidence: UsageFields) -> UsageRecord:
    return UsageRecord(
        skill_id=name("skill_id", evidence.skill_id),
        session_id=name("session_id", evidence.session_id),
        project=optional_name("project", evidence.project),
        task_domain=optional_name("task_domain", evidence.task_domain),
        at=aware("at", evidence.at),
        main_session=bool(evidence.main_session),
    )


def checked_overrides(record: object) -> PolicyOverrides:
    if not isinstance(record, PolicyOverrides):
        raise InvalidArgument(f"record must be PolicyOverrides, got {shown(record)}")
    name("project", record.project)
    if not isinstance(record.data, str):
        raise InvalidArgument(f"data must be a string, got {shown(record.data)}")
    aware("updated_at", record.updated_at)
    return record


def checked_governance(record: object) -> GovernanceRecord:
    if not isinstance(record, GovernanceRecord):
        raise InvalidArgument(f"record must be a GovernanceRecord, got {shown(record)}")
    name("skill_id", record.skill_id)
    name("state", record.state)
    aware("updated_at", record.updated_at)
    for label in ("task_domain", "reason", "promoted_to", "promoted_from", "backup"):
        value = getattr(record, label)
        if value is not None and not isinstance(value, str):
            raise InvalidArgument(f"{label} must be a string or None, got {shown(value)}")
    return record


class SkillClassifier(Protocol):
    """Classifies skills for curation: task domain and scope verdict, with reasons.

    Returns one `Classification` per skill it could judge (skills it leaves out are not
    recorded). Raises `CurationTimedOut` when it cannot finish within `timeout` seconds; any
    other exception fails the job (reason ``classifier-error``)."""

    def classify(
        self,
        skills: Sequence[SkillState],
        policy: PromotionPolicy,
        project: str | None,
        *,
        timeout: float,
        project_names: frozenset[str] = frozenset(),
    ) -> list[Classification]: ...
