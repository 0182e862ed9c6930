"""The rules of the project-level curation lease, in one place for every adapter (style 28).

An adapter loads a project's jobs inside its write transaction, closes the stale ones
(`is_stale`), gathers `LeaseFacts` and asks `refusal` whether a new job may start.

Decisions recorded here (issue 11 §5):
- A job is stale when it is queued or running and was not updated (created or started) for
  longer than `stale_after`; it is closed as timed-out with reason `stale`, and its end is its
  last sign of life, so a long-dead job does not start a fresh failure cooldown.
- Cooldowns count from a job's end. An automatic success starts the success cooldown (the
  seed's `autoCurationCooldownMs`: "after a successful automatic curation"; a manual curation
  does not hold the next automatic one back, ADR 0077), any finished attempt the failure
  cooldown; failures and timeouts of either kind
  since the last success are the consecutive failures. Manual runs ignore all three rules and
  are refused only while the lease is held (`busy`).
"""

from __future__ import annotations

from datetime import datetime

import attrs
from pi_hermes_memory.ports.skills import (
    ACTIVE_JOB_STATES,
    CurationJob,
    CurationKind,
    CurationLimits,
    JobState,
    RefusalReason,
)

__all__ = ["LeaseFacts", "is_stale", "refusal"]


@attrs.frozen(kw_only=True)
class LeaseFacts:
    busy: bool  # a queued or running job remains after the stale ones were closed
    last_success_at: datetime | None
    #: the latest end of a succeeded automatic job: the success cooldown counts from it
    last_auto_success_at: datetime | None
    last_attempt_at: datetime | None  # the latest end of any finished job
    consecutive_failures: int


def is_stale(job: CurationJob, now: datetime, limits: CurationLimits) -> bool:
    return job.state in ACTIVE_JOB_STATES and now - job.updated_at > limits.stale_after


def refusal(
    kind: CurationKind, now: datetime, limits: CurationLimits, facts: LeaseFacts
) -> tuple[RefusalReason, datetime | None] | None:
    """Why no new job may start (and until when, for a cooldown), or None."""
    if facts.busy:
        return RefusalReason.BUSY, None
    if kind is CurationKind.MANUAL:
        return None
    cap = limits.max_consecutive_failures
    if cap > 0 and facts.consecutive_failures >= cap:
        return RefusalReason.FAILURE_CAP, None
    if facts.last_auto_success_at is not None:
        until = facts.last_auto_success_at + limits.cooldown
        if now < until:
            return RefusalReason.COOLDOWN, until
    if facts.last_attempt_at is not None:
        until = facts.last_attempt_at + limits.failure_cooldown
        if now < until:
            return RefusalReason.FAILURE_COOLDOWN, until
    return None


def facts_of(jobs: list[CurationJob]) -> LeaseFacts:
    """The facts of a project's whole job list (the in-memory adapter; SQLite asks SQL)."""
    finished = [j for j in jobs if j.finished_at is not None]
    successes = [j for j in finished if j.state is JobState.SUCCEEDED]
    last_success = max(successes, key=lambda j: j.job_id, default=None)
    after = last_success.job_id if last_success is not None else 0
    return LeaseFacts(
        busy=any(j.state in ACTIVE_JOB_STATES for j in jobs),
        last_success_at=max((j.finished_at for j in successes if j.finished_at), default=None),
        last_auto_success_at=max(
            (j.finished_at for j in successes if j.finished_at and j.kind is CurationKind.AUTO),
            default=None,
        ),
        last_attempt_at=max((j.finished_at for j in finished if j.finished_at), default=None),
        consecutive_failures=sum(
            1
            for j in finished
            if j.job_id > after and j.state in (JobState.FAILED, JobState.TIMED_OUT)
        ),
    )
