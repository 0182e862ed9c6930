"""The skill telemetry contract, properties and the discovery bookkeeping service on the
in-memory adapter."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest
import structlog
from pi_hermes_memory.adapters.inmemory.skill_tables import InMemorySkillTables, LegacyLoad
from pi_hermes_memory.config.settings import SkillGovernanceConfig, SkillScopesConfig
from pi_hermes_memory.errors import InvalidArgument, StorageFull
from pi_hermes_memory.ports.skills import CleanupReport, CurationLimits
from pi_hermes_memory.skills.stats import after_discovery, curation_limits
from pi_hermes_memory.testing import SkillTelemetryContract
from structlog.testing import capture_logs

from tests.support.skill_properties import SkillLoadProperties

NOW = datetime(2026, 7, 29, 23, 30, tzinfo=UTC)


class TestInMemorySkillTables(SkillTelemetryContract, SkillLoadProperties):
    def make(self) -> InMemorySkillTables:
        return InMemorySkillTables()

    def add_history(
        self, telemetry: InMemorySkillTables, skill_id: str, project: str | None, at: datetime
    ) -> None:
        telemetry.legacy_loads.append(LegacyLoad(skill_id=skill_id, project=project, at=at))


def config(**overrides: int) -> SkillGovernanceConfig:
    scopes = SkillScopesConfig(global_skills_dir=Path("/nonexistent/skills"))
    return SkillGovernanceConfig(scopes=scopes, **overrides)  # type: ignore[arg-type]


class FailingCleanup(InMemorySkillTables):
    """A real in-memory adapter whose cleanup (or load count) fails like a full disk."""

    def __init__(self, *, loads_fail: bool = False, error: Exception | None = None) -> None:
        super().__init__()
        self.loads_fail = loads_fail
        self.error = error or StorageFull("the disk holding sessions.db is full", path=None)

    def cleanup_loads(self, now: datetime, retention_days: int, budget: int) -> CleanupReport:
        raise self.error

    def record_loads(self, skill_ids: Sequence[str], project: str | None, day: date) -> None:
        if self.loads_fail:
            raise self.error
        super().record_loads(skill_ids, project, day)


def test_after_discovery_counts_today_in_utc_and_cleans_when_due() -> None:
    telemetry = InMemorySkillTables()
    telemetry.record_loads(["global:a"], "web", date(2025, 1, 1))
    east = NOW.astimezone(timezone(timedelta(hours=8)))  # the 30th there
    warnings = after_discovery(telemetry, ["global:a", "global:b"], "web", east, config())
    assert warnings == []
    assert telemetry.load_counts(date(2026, 7, 29)) == {"global:a": 1, "global:b": 1}
    assert telemetry.load_counts(date(2026, 7, 30)) == {}
    assert telemetry.load_counts(None) == {"global:a": 1, "global:b": 1}  # 2025 row expired
    # the cleanup time was recorded: an hour later nothing is due
    assert not telemetry.cleanup_loads(NOW + timedelta(hours=1), 180, 500).ran


def test_after_discovery_passes_the_configured_retention_and_budget() -> None:
    telemetry = InMemorySkillTables()
    for n in range(5):
        telemetry.record_loads(["global:a"], "web", date(2026, 1, 1) - timedelta(days=n))
    assert after_discovery(telemetry, [], "web", NOW, config(load_event_cleanup_budget=2)) == []
    assert telemetry.load_counts(None) == {"global:a": 3}
    telemetry = InMemorySkillTables()
    telemetry.record_loads(["global:a"], "web", date(2020, 1, 1))
    assert after_discovery(telemetry, [], "web", NOW, config(load_event_retention_days=0)) == []
    assert telemetry.load_counts(None) == {"global:a": 1}


def test_a_failing_cleanup_is_only_a_warning_and_the_loads_are_kept() -> None:
    telemetry = FailingCleanup()
    with capture_logs() as logs:
        warnings = after_discovery(
            telemetry, ["global:a"], None, NOW, config(), logger=structlog.get_logger()
        )
    assert len(warnings) == 1 and "cleanup failed" in warnings[0] and "full" in warnings[0]
    assert [entry["event"] for entry in logs] == ["skills.stats.warning"]
    assert telemetry.load_counts(None) == {"global:a": 1}


def test_a_failing_load_count_is_a_warning_and_cleanup_still_runs() -> None:
    telemetry = FailingCleanup(loads_fail=True, error=RuntimeError("x" * 5000))
    warnings = after_discovery(telemetry, ["global:a"], None, NOW, config())
    assert len(warnings) == 2 and all(len(w) < 400 for w in warnings)
    assert warnings[0].startswith("skill load statistics were not recorded")


def test_after_discovery_refuses_a_naive_time() -> None:
    with pytest.raises(InvalidArgument):
        after_discovery(InMemorySkillTables(), [], None, NOW.replace(tzinfo=None), config())


def test_curation_limits_come_from_the_static_configuration() -> None:
    limits = curation_limits(
        config(
            curation_timeout_ms=90_000,
            auto_curation_cooldown_ms=5_000,
            auto_curation_failure_cooldown_ms=7_000,
            curation_max_consecutive_failures=3,
        )
    )
    assert limits == CurationLimits(
        stale_after=timedelta(seconds=180),
        cooldown=timedelta(seconds=5),
        failure_cooldown=timedelta(seconds=7),
        max_consecutive_failures=3,
    )
