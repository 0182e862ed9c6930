"""Skill statistics around `resources_discover` (issue 11 §4).

After a discovery the loads are counted and the opportunistic TTL cleanup runs when due. Both
are bookkeeping: any failure becomes a warning and never changes the discovery result. This is
never called on the extension's start path.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pi_hermes_memory.config.settings import SkillGovernanceConfig
from pi_hermes_memory.domain.skills.promotion import ConflictStrategy, PromotionPolicy, TaskDomain
from pi_hermes_memory.ports.skills import CurationLimits, SkillTelemetry, aware

__all__ = ["STALE_TIMEOUTS", "after_discovery", "curation_limits", "promotion_policy"]

#: a queued or running curation job older than this many curation timeouts is stale: the child
#: is killed at one timeout, so a job still open at two belongs to a process that died
STALE_TIMEOUTS = 2
_DETAIL_CHARS = 300


def after_discovery(
    telemetry: SkillTelemetry,
    skill_ids: Sequence[str],
    project: str | None,
    now: datetime,
    config: SkillGovernanceConfig,
    *,
    logger: Any = None,
) -> list[str]:
    """Count one load of each discovered skill today (UTC), then clean expired load rows
    when due (`loadEventRetentionDays`, `loadEventCleanupBudget`). Returns warnings; never
    raises for a storage or adapter failure."""
    aware("now", now)
    warnings: list[str] = []
    try:
        telemetry.record_loads(skill_ids, project, now.astimezone(UTC).date())
    except Exception as exc:  # any adapter failure: statistics never break discovery
        warnings.append(f"skill load statistics were not recorded: {_describe(exc)}")
    try:
        telemetry.cleanup_loads(
            now, config.load_event_retention_days, config.load_event_cleanup_budget
        )
    except Exception as exc:  # isolated as the spec asks: warn and carry on
        warnings.append(f"skill load cleanup failed (retried next time): {_describe(exc)}")
    if logger is not None:
        for warning in warnings:
            logger.warning("skills.stats.warning", detail=warning)
    return warnings


def curation_limits(config: SkillGovernanceConfig) -> CurationLimits:
    """The lease rules from the static configuration (never from a curation result)."""
    return CurationLimits(
        stale_after=timedelta(milliseconds=config.curation_timeout_ms * STALE_TIMEOUTS),
        cooldown=timedelta(milliseconds=config.auto_curation_cooldown_ms),
        failure_cooldown=timedelta(milliseconds=config.auto_curation_failure_cooldown_ms),
        max_consecutive_failures=config.curation_max_consecutive_failures,
    )


def promotion_policy(config: SkillGovernanceConfig) -> PromotionPolicy:
    """The domain's promotion policy from the `skillGovernance` configuration (no configured
    task domains: the built-in ones)."""
    return PromotionPolicy(
        min_same_domain_usages=config.promotion_min_same_domain_usages,
        min_sessions=config.promotion_min_sessions,
        min_projects=config.promotion_min_projects,
        task_domains=tuple(
            TaskDomain(id=d.id, description=d.description or "", terms=d.terms)
            for d in config.promotion_task_domains or ()
        ),
        domain_terms=config.promotion_domain_terms,
        require_global_safe=config.promotion_require_global_safe,
        conflict_strategy=ConflictStrategy(config.promotion_conflict_strategy.value),
        enabled=config.promotion_enabled,
    )


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"
