"""The `SkillTelemetry` contract suite (see `pi_hermes_memory.testing`).

Subclass `SkillTelemetryContract` and implement two hooks:

- ``make(self)``: a fresh, empty telemetry adapter (called once or more per test);
- ``add_history(self, telemetry, skill_id, project, at)``: insert one row into the read-only
  ``skill_load_events`` history the way an older release left it (the adapter itself never
  writes that table).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.skills import (
    STALE_REASON,
    CurationLimits,
    CurationRefusal,
    GovernanceRecord,
    JobLease,
    JobState,
    PolicyOverrides,
    RefusalReason,
    SkillStatRow,
    SkillVisibility,
    UsageRecord,
)

TODAY = date(2026, 7, 29)
NOW = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
G_A, G_B, P_C = "global:alpha", "global:beta", "project:web:gamma"
HOUR = timedelta(hours=1)
LIMITS = CurationLimits(
    stale_after=timedelta(minutes=2),
    cooldown=timedelta(hours=24),
    failure_cooldown=HOUR,
    max_consecutive_failures=0,
)
#: no cooldowns: only the cap and the lease decide
BARE = CurationLimits(stale_after=timedelta(minutes=2))


def days_ago(n: int) -> date:
    return TODAY - timedelta(days=n)


def at_day(day: date, hour: int = 9) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


@attrs.frozen(kw_only=True)
class Evidence:
    """Any object with the usage fields is accepted (the domain's UsageEvidence is one)."""

    skill_id: str
    session_id: str
    project: str | None
    task_domain: str | None
    at: datetime
    main_session: bool = True


def lease(result: JobLease | CurationRefusal) -> JobLease:
    assert isinstance(result, JobLease), result
    return result


def refused(result: JobLease | CurationRefusal) -> CurationRefusal:
    assert isinstance(result, CurationRefusal), result
    return result


class SkillTelemetryContract:
    """Semantics of a `SkillTelemetry` adapter (see the port's docstrings)."""

    def make(self) -> Any:
        raise NotImplementedError

    def add_history(self, telemetry: Any, skill_id: str, project: str | None, at: datetime) -> None:
        raise NotImplementedError

    @pytest.fixture
    def telemetry(self) -> Any:
        return self.make()

    # -- loads ---------------------------------------------------------------------------------

    def test_each_call_counts_one_load_per_distinct_skill_and_day(self, telemetry: Any) -> None:
        telemetry.record_loads([G_A, G_A, G_B], "web", TODAY)
        telemetry.record_loads([G_A], "web", TODAY)
        telemetry.record_loads([G_A], "web", days_ago(1))
        telemetry.record_loads([], "web", TODAY)
        assert telemetry.load_counts(None, "web") == {G_A: 3, G_B: 1}
        assert telemetry.load_counts(TODAY, "web") == {G_A: 2, G_B: 1}

    def test_loads_are_kept_per_project_and_outside_projects(self, telemetry: Any) -> None:
        telemetry.record_loads([G_A], "web", TODAY)
        telemetry.record_loads([G_A, P_C], "api", TODAY)
        telemetry.record_loads([G_A], None, TODAY)
        assert telemetry.load_counts(None, "web") == {G_A: 1}
        assert telemetry.load_counts(None, "api") == {G_A: 1, P_C: 1}
        assert telemetry.load_counts(None) == {G_A: 3, P_C: 1}
        assert telemetry.load_counts(None, "nowhere") == {}

    def test_history_days_count_raw_rows_unless_the_day_has_a_daily_row(
        self, telemetry: Any
    ) -> None:
        for hour in (8, 9, 10):  # a history-only day: three raw loads
            self.add_history(telemetry, G_A, "web", at_day(days_ago(3), hour))
        for hour in (8, 9):  # a day also in the daily table: the daily row wins
            self.add_history(telemetry, G_A, "web", at_day(days_ago(2), hour))
        telemetry.record_loads([G_A], "web", days_ago(2))
        self.add_history(telemetry, G_A, "api", at_day(days_ago(2)))  # another project
        self.add_history(telemetry, G_B, None, at_day(days_ago(2)))  # outside projects
        telemetry.record_loads([G_B], "web", days_ago(2))
        assert telemetry.load_counts(None, "web") == {G_A: 3 + 1, G_B: 1}
        assert telemetry.load_counts(None, "api") == {G_A: 1}
        assert telemetry.load_counts(None) == {G_A: 5, G_B: 2}
        assert telemetry.load_counts(days_ago(2)) == {G_A: 2, G_B: 2}
        assert telemetry.load_counts(days_ago(1)) == {}

    def test_history_outside_a_project_matches_daily_loads_outside_projects(
        self, telemetry: Any
    ) -> None:
        self.add_history(telemetry, G_A, None, at_day(days_ago(1)))
        self.add_history(telemetry, G_A, None, at_day(days_ago(1), 10))
        telemetry.record_loads([G_A], None, days_ago(1))
        assert telemetry.load_counts(None) == {G_A: 1}

    def test_stats_windows_are_whole_utc_days_ending_today(self, telemetry: Any) -> None:
        for n in (0, 1, 6, 7, 30):
            telemetry.record_loads([G_A], "web", days_ago(n))
        assert _loads(telemetry.stats(1, "web", TODAY)) == {G_A: 1}
        assert _loads(telemetry.stats(2, "web", TODAY)) == {G_A: 2}
        assert _loads(telemetry.stats(7, "web", TODAY)) == {G_A: 3}
        assert _loads(telemetry.stats(8, "web", TODAY)) == {G_A: 4}
        assert _loads(telemetry.stats(None, "web", TODAY)) == {G_A: 5}

    def test_stats_windows_cut_uses_at_utc_midnight(self, telemetry: Any) -> None:
        first = datetime(2026, 7, 23, 0, 0, tzinfo=UTC)  # the first day of a 7-day window
        telemetry.record_use(
            Evidence(skill_id=G_A, session_id="s1", project="web", task_domain="python", at=first)
        )
        telemetry.record_use(
            Evidence(
                skill_id=G_A,
                session_id="s2",
                project="web",
                task_domain="python",
                at=first - timedelta(microseconds=1),
            )
        )
        # 07:59 on the 23rd in UTC+8 is 23:59 on the 22nd in UTC: outside the window
        east = timezone(timedelta(hours=8))
        telemetry.record_use(
            Evidence(
                skill_id=G_B,
                session_id="s3",
                project="web",
                task_domain=None,
                at=datetime(2026, 7, 23, 7, 59, tzinfo=east),
            )
        )
        assert telemetry.stats(7, "web", TODAY) == [
            SkillStatRow(skill_id=G_A, loads=0, usages=1, sessions=1, projects=1)
        ]
        assert [r.usages for r in telemetry.stats(None, "web", TODAY)] == [2, 1]

    def test_stats_count_uses_sessions_and_projects_per_skill(self, telemetry: Any) -> None:
        telemetry.record_loads([G_A, G_B], "web", TODAY)
        for session, project in (("s1", "web"), ("s1", "web"), ("s2", "api"), ("s3", None)):
            telemetry.record_use(
                Evidence(
                    skill_id=G_A, session_id=session, project=project, task_domain="python", at=NOW
                )
            )
        telemetry.record_use(
            Evidence(skill_id=P_C, session_id="s9", project="web", task_domain=None, at=NOW)
        )
        assert telemetry.stats(None, None, TODAY) == [
            SkillStatRow(skill_id=G_A, loads=1, usages=4, sessions=3, projects=2),
            SkillStatRow(skill_id=G_B, loads=1, usages=0, sessions=0, projects=0),
            SkillStatRow(skill_id=P_C, loads=0, usages=1, sessions=1, projects=1),
        ]
        assert telemetry.stats(1, "web", TODAY) == [
            SkillStatRow(skill_id=G_A, loads=1, usages=2, sessions=1, projects=1),
            SkillStatRow(skill_id=G_B, loads=1, usages=0, sessions=0, projects=0),
            SkillStatRow(skill_id=P_C, loads=0, usages=1, sessions=1, projects=1),
        ]
        assert telemetry.stats(1, "elsewhere", TODAY) == []

    @pytest.mark.parametrize("since_days", [0, -1, True, 1.5])
    def test_stats_refuse_a_window_under_one_day(self, telemetry: Any, since_days: Any) -> None:
        with pytest.raises(InvalidArgument):
            telemetry.stats(since_days, None, TODAY)

    def test_malformed_load_arguments_are_refused(self, telemetry: Any) -> None:
        with pytest.raises(InvalidArgument):
            telemetry.record_loads([G_A], "web", NOW)  # a datetime is not a day
        with pytest.raises(InvalidArgument):
            telemetry.record_loads([""], "web", TODAY)
        with pytest.raises(InvalidArgument):
            telemetry.cleanup_loads(NOW.replace(tzinfo=None), 180, 500)
        with pytest.raises(InvalidArgument):
            telemetry.cleanup_loads(NOW, -1, 500)
        assert telemetry.load_counts(None) == {}

    # -- cleanup -------------------------------------------------------------------------------

    def test_cleanup_deletes_rows_older_than_retention_from_both_tables(
        self, telemetry: Any
    ) -> None:
        telemetry.record_loads([G_A], "web", days_ago(11))
        telemetry.record_loads([G_A], "web", days_ago(10))  # the cutoff day itself stays
        self.add_history(telemetry, G_B, "web", at_day(days_ago(11), 23))
        self.add_history(telemetry, G_B, "web", at_day(days_ago(10), 0))
        report = telemetry.cleanup_loads(NOW, 10, 500)
        assert report.ran and report.reason == "ran"
        assert (report.deleted_daily, report.deleted_events) == (1, 1)
        assert not report.more_daily and not report.more_events
        assert report.cutoff == days_ago(10) and report.last_cleanup == NOW
        assert telemetry.load_counts(None) == {G_A: 1, G_B: 1}

    def test_cleanup_never_touches_usage_events(self, telemetry: Any) -> None:
        old = NOW - timedelta(days=2000)
        use = Evidence(skill_id=G_A, session_id="s1", project="web", task_domain=None, at=old)
        telemetry.record_use(use)
        telemetry.record_loads([G_A], "web", old.date())
        report = telemetry.cleanup_loads(NOW, 1, 500)
        assert report.deleted_daily == 1
        assert [u.at for u in telemetry.usages(G_A)] == [old]

    def test_cleanup_runs_at_most_once_per_24_hours(self, telemetry: Any) -> None:
        assert telemetry.cleanup_loads(NOW, 10, 500).ran  # never ran: runs now
        telemetry.record_loads([G_A], "web", days_ago(30))
        later = NOW + timedelta(hours=23, minutes=59)
        report = telemetry.cleanup_loads(later, 10, 500)
        assert not report.ran and report.reason == "not-due" and report.last_cleanup == NOW
        assert report.deleted_daily == 0 and telemetry.load_counts(None) == {G_A: 1}
        report = telemetry.cleanup_loads(NOW + timedelta(hours=24), 10, 500)
        assert report.ran and report.deleted_daily == 1
        assert telemetry.load_counts(None) == {}

    def test_cleanup_deletes_at_most_budget_rows_oldest_first_and_records_the_time(
        self, telemetry: Any
    ) -> None:
        for n in range(20, 25):
            telemetry.record_loads([G_A], "web", days_ago(n))
        for n in range(20, 24):
            self.add_history(telemetry, G_B, "api", at_day(days_ago(n)))
        first = telemetry.cleanup_loads(NOW, 10, 3)
        assert (first.deleted_daily, first.deleted_events) == (3, 3)
        assert first.more_daily and first.more_events
        # the oldest went first: the two newest daily days and the newest history day remain
        assert telemetry.load_counts(days_ago(21)) == {G_A: 2, G_B: 1}
        assert telemetry.load_counts(None) == {G_A: 2, G_B: 1}
        # the time was recorded although rows remain: a busy day does not delete again
        assert not telemetry.cleanup_loads(NOW + 20 * HOUR, 10, 3).ran
        second = telemetry.cleanup_loads(NOW + 24 * HOUR, 10, 3)
        assert (second.deleted_daily, second.deleted_events) == (2, 1)
        assert not second.more_daily and not second.more_events
        assert telemetry.load_counts(None) == {}

    def test_a_zero_budget_deletes_nothing_but_counts_as_a_run(self, telemetry: Any) -> None:
        telemetry.record_loads([G_A], "web", days_ago(30))
        report = telemetry.cleanup_loads(NOW, 10, 0)
        assert report.ran and report.deleted_daily == 0 and report.more_daily
        assert not telemetry.cleanup_loads(NOW + HOUR, 10, 500).ran

    def test_zero_retention_disables_cleanup_and_writes_no_timestamp(self, telemetry: Any) -> None:
        telemetry.record_loads([G_A], "web", days_ago(400))
        for hours in (0, 1, 48):
            report = telemetry.cleanup_loads(NOW + hours * HOUR, 0, 500)
            assert not report.ran and report.reason == "disabled" and report.deleted_daily == 0
        assert telemetry.load_counts(None) == {G_A: 1}
        # no timestamp was written: the first enabled call runs at once
        assert telemetry.cleanup_loads(NOW + HOUR, 180, 500).deleted_daily == 1

    def test_a_cleanup_time_in_the_future_does_not_block_cleanup(self, telemetry: Any) -> None:
        assert telemetry.cleanup_loads(NOW + 30 * 24 * HOUR, 10, 500).ran  # a clock far ahead
        telemetry.record_loads([G_A], "web", days_ago(30))
        report = telemetry.cleanup_loads(NOW, 10, 500)  # the clock is right again
        assert report.ran and report.deleted_daily == 1
        assert not telemetry.cleanup_loads(NOW + HOUR, 10, 500).ran

    # -- usage evidence ------------------------------------------------------------------------

    def test_uses_round_trip_oldest_first_in_utc(self, telemetry: Any) -> None:
        east = timezone(timedelta(hours=8))
        late = Evidence(
            skill_id=G_A,
            session_id="s2",
            project=None,
            task_domain=None,
            at=NOW + timedelta(microseconds=7),
            main_session=False,
        )
        early = Evidence(
            skill_id=G_A,
            session_id="s1",
            project="web",
            task_domain="python",
            at=datetime(2026, 7, 29, 19, 0, tzinfo=east),
        )
        other = Evidence(skill_id=G_B, session_id="s1", project="web", task_domain="go", at=NOW)
        for evidence in (late, early, other):
            telemetry.record_use(evidence)
        found = telemetry.usages(G_A)
        assert found == [
            UsageRecord(
                skill_id=G_A,
                session_id="s1",
                project="web",
                task_domain="python",
                at=datetime(2026, 7, 29, 11, 0, tzinfo=UTC),
                main_session=True,
            ),
            UsageRecord(
                skill_id=G_A,
                session_id="s2",
                project=None,
                task_domain=None,
                at=NOW + timedelta(microseconds=7),
                main_session=False,
            ),
        ]
        assert found[0].at.utcoffset() == timedelta(0)
        assert len(telemetry.usages()) == 3 and telemetry.usages("global:none") == []

    def test_a_use_with_a_naive_time_or_no_session_is_refused(self, telemetry: Any) -> None:
        with pytest.raises(InvalidArgument):
            telemetry.record_use(
                Evidence(
                    skill_id=G_A,
                    session_id="s",
                    project=None,
                    task_domain=None,
                    at=NOW.replace(tzinfo=None),
                )
            )
        with pytest.raises(InvalidArgument):
            telemetry.record_use(
                Evidence(skill_id=G_A, session_id="", project=None, task_domain=None, at=NOW)
            )
        assert telemetry.usages() == []

    # -- visibility ----------------------------------------------------------------------------

    def test_visibility_hide_show_and_reset_per_project(self, telemetry: Any) -> None:
        telemetry.set_visibility("web", G_A, "hidden")
        telemetry.set_visibility("web", G_B, SkillVisibility.SHOWN)
        telemetry.set_visibility("api", G_A, "shown")
        assert telemetry.visibility("web") == {G_A: "hidden", G_B: "shown"}
        telemetry.set_visibility("web", G_A, "shown")
        assert telemetry.visibility("web")[G_A] is SkillVisibility.SHOWN
        assert telemetry.reset_visibility("web", G_A) is True
        assert telemetry.reset_visibility("web", G_A) is False
        assert telemetry.visibility("web") == {G_B: "shown"}
        assert telemetry.visibility("api") == {G_A: "shown"}
        assert telemetry.visibility("other") == {}

    def test_an_unknown_visibility_state_is_refused(self, telemetry: Any) -> None:
        with pytest.raises(InvalidArgument):
            telemetry.set_visibility("web", G_A, "invisible")
        with pytest.raises(InvalidArgument):
            telemetry.set_visibility("", G_A, "hidden")
        assert telemetry.visibility("web") == {}

    # -- governance ----------------------------------------------------------------------------

    def test_governance_set_replace_list_and_clear(self, telemetry: Any) -> None:
        assert telemetry.governance(P_C) is None
        candidate = GovernanceRecord(
            skill_id=P_C,
            state="candidate",
            task_domain="python",
            reason="3 uses in 2 sessions",
            updated_at=NOW + timedelta(microseconds=1),
        )
        telemetry.set_governance(candidate)
        assert telemetry.governance(P_C) == candidate
        promoted = attrs.evolve(
            candidate,
            state="promoted",
            promoted_to="global:gamma",
            backup="---\nname: gamma\n---\n技能正文 " + "x" * 20_000,
            updated_at=NOW.astimezone(timezone(timedelta(hours=-5))),
        )
        telemetry.set_governance(promoted)
        other = GovernanceRecord(
            skill_id="global:gamma", state="promoted", promoted_from=P_C, updated_at=NOW
        )
        telemetry.set_governance(other)
        stored = telemetry.governance(P_C)
        assert stored == promoted and stored.backup == promoted.backup
        assert stored.updated_at.utcoffset() == timedelta(0)
        assert [r.skill_id for r in telemetry.governance_records()] == ["global:gamma", P_C]
        assert telemetry.clear_governance(P_C) is True
        assert telemetry.clear_governance(P_C) is False
        assert telemetry.governance(P_C) is None
        assert telemetry.governance_records() == [other]

    def test_a_malformed_governance_record_is_refused(self, telemetry: Any) -> None:
        with pytest.raises(InvalidArgument):
            telemetry.set_governance(GovernanceRecord(skill_id=P_C, state="", updated_at=NOW))
        with pytest.raises(InvalidArgument):
            telemetry.set_governance(
                GovernanceRecord(skill_id=P_C, state="blocked", updated_at=NOW.replace(tzinfo=None))
            )
        assert telemetry.governance_records() == []

    def test_policy_overrides_are_kept_per_project_and_replaced(self, telemetry: Any) -> None:
        assert telemetry.policy_overrides("web") is None
        first = PolicyOverrides(
            project="web", data='{"scope_policy_words": ["docker"]}', updated_at=NOW
        )
        telemetry.set_policy_overrides(first)
        later = PolicyOverrides(
            project="web",
            data='{"scope_policy_words": ["容器"]}',
            updated_at=(NOW + HOUR).astimezone(timezone(timedelta(hours=2))),
        )
        telemetry.set_policy_overrides(later)
        other = PolicyOverrides(project="api", data="{}", updated_at=NOW)
        telemetry.set_policy_overrides(other)
        stored = telemetry.policy_overrides("web")
        assert stored == later and stored.updated_at.utcoffset() == timedelta(0)
        assert telemetry.policy_overrides("api") == other
        assert telemetry.governance_records() == []  # not a governance record
        with pytest.raises(InvalidArgument):
            telemetry.set_policy_overrides(PolicyOverrides(project="", data="{}", updated_at=NOW))
        with pytest.raises(InvalidArgument):
            telemetry.set_policy_overrides(
                PolicyOverrides(project="web", data="{}", updated_at=NOW.replace(tzinfo=None))
            )
        assert telemetry.policy_overrides("web") == later

    # -- curation jobs -------------------------------------------------------------------------

    def test_one_lease_per_project_shared_by_manual_and_auto_runs(self, telemetry: Any) -> None:
        job = lease(telemetry.begin_curation("web", "manual", NOW, LIMITS))
        assert job.state is JobState.RUNNING and job.kind == "manual"
        assert refused(telemetry.begin_curation("web", "manual", NOW, LIMITS)).reason == "busy"
        assert refused(telemetry.begin_curation("web", "auto", NOW, LIMITS)).reason == "busy"
        other = lease(telemetry.begin_curation("api", "auto", NOW, LIMITS))  # another project
        status = telemetry.curation_status("web")
        assert status.active is not None and status.active.job_id == job.job_id
        assert status.last is None and status.skips == {"busy": 2}
        assert telemetry.finish_curation(job.job_id, "succeeded", None, NOW + HOUR) is True
        assert telemetry.finish_curation(job.job_id, "failed", None, NOW + HOUR) is False
        assert telemetry.curation_status("api").active.job_id == other.job_id
        lease(telemetry.begin_curation("web", "manual", NOW + HOUR, LIMITS))

    def test_a_stale_job_is_closed_before_the_lease_is_decided(self, telemetry: Any) -> None:
        old = lease(telemetry.begin_curation("web", "auto", NOW, LIMITS))
        edge = NOW + LIMITS.stale_after  # not older than stale_after yet
        assert refused(telemetry.begin_curation("web", "manual", edge, LIMITS)).reason == "busy"
        later = edge + timedelta(seconds=1)
        fresh = lease(telemetry.begin_curation("web", "manual", later, LIMITS))
        assert fresh.cleared_stale == 1 and fresh.job_id != old.job_id
        status = telemetry.curation_status("web")
        assert status.active is not None and status.active.job_id == fresh.job_id
        assert status.last is not None and status.last.job_id == old.job_id
        assert status.last.state is JobState.TIMED_OUT and status.last.reason == STALE_REASON
        assert status.last.finished_at == NOW  # its last sign of life, not `later`
        assert status.consecutive_failures == 1
        # the late answer of the stale job is not recorded
        assert telemetry.finish_curation(old.job_id, "succeeded", None, later) is False

    def test_a_queued_job_holds_the_lease_until_it_starts_and_ends(self, telemetry: Any) -> None:
        job = lease(telemetry.begin_curation("web", "auto", NOW, LIMITS, queued=True))
        assert job.state is JobState.QUEUED
        assert telemetry.curation_status("web").active.state is JobState.QUEUED
        assert refused(telemetry.begin_curation("web", "manual", NOW, LIMITS)).reason == "busy"
        start = NOW + timedelta(minutes=1)
        assert telemetry.start_curation(job.job_id, start) is True
        assert telemetry.start_curation(job.job_id, start) is False
        # starting refreshed its age: still not stale 2 minutes after it was queued
        t = NOW + timedelta(minutes=2, seconds=30)
        assert refused(telemetry.begin_curation("web", "manual", t, LIMITS)).reason == "busy"
        assert telemetry.finish_curation(job.job_id, "timed-out", "timeout", t) is True
        status = telemetry.curation_status("web")
        assert status.active is None and status.last.reason == "timeout"

    def test_auto_runs_wait_out_the_cooldown_after_a_success(self, telemetry: Any) -> None:
        job = lease(telemetry.begin_curation("web", "auto", NOW, LIMITS))
        done = NOW + timedelta(minutes=1)
        telemetry.finish_curation(job.job_id, "succeeded", "ok", done)
        too_soon = refused(telemetry.begin_curation("web", "auto", done + 23 * HOUR, LIMITS))
        assert too_soon.reason is RefusalReason.COOLDOWN and too_soon.until == done + 24 * HOUR
        # a manual run is not held by cooldowns
        manual = lease(telemetry.begin_curation("web", "manual", done + HOUR, LIMITS))
        telemetry.finish_curation(manual.job_id, "failed", "llm-error", done + 2 * HOUR)
        assert telemetry.curation_status("web").skips == {"cooldown": 1}
        lease(telemetry.begin_curation("web", "auto", done + 24 * HOUR, LIMITS))

    def test_a_manual_success_does_not_start_the_auto_cooldown(self, telemetry: Any) -> None:
        """The seed's autoCurationCooldownMs follows a successful *automatic* run (ADR 0077);
        a manual run still starts the failure cooldown, as any attempt does."""
        manual = lease(telemetry.begin_curation("web", "manual", NOW, LIMITS))
        done = NOW + timedelta(minutes=1)
        telemetry.finish_curation(manual.job_id, "succeeded", "ok", done)
        assert telemetry.curation_status("web").last_success_at == done
        wait = refused(telemetry.begin_curation("web", "auto", done + HOUR / 2, LIMITS))
        assert wait.reason is RefusalReason.FAILURE_COOLDOWN
        assert lease(telemetry.begin_curation("web", "auto", done + HOUR, LIMITS)).kind == "auto"

    def test_auto_runs_wait_out_the_failure_cooldown_after_any_attempt(
        self, telemetry: Any
    ) -> None:
        job = lease(telemetry.begin_curation("web", "auto", NOW, LIMITS))
        ended = NOW + timedelta(minutes=1)
        telemetry.finish_curation(job.job_id, "failed", "parse-error", ended)
        wait = refused(
            telemetry.begin_curation("web", "auto", ended + 59 * timedelta(minutes=1), LIMITS)
        )
        assert wait.reason is RefusalReason.FAILURE_COOLDOWN and wait.until == ended + HOUR
        retry = lease(telemetry.begin_curation("web", "auto", ended + HOUR, LIMITS))
        assert retry.kind == "auto"
        status = telemetry.curation_status("web")
        assert status.skips == {"failure-cooldown": 1} and status.consecutive_failures == 1
        assert status.last.state is JobState.FAILED and status.last.reason == "parse-error"

    def test_the_failure_cap_stops_auto_runs_until_a_success(self, telemetry: Any) -> None:
        capped = attrs.evolve(BARE, max_consecutive_failures=2)
        t = NOW
        for state in ("failed", "timed-out"):
            job = lease(telemetry.begin_curation("web", "auto", t, capped))
            telemetry.finish_curation(job.job_id, state, None, t)
            t += HOUR
        assert refused(telemetry.begin_curation("web", "auto", t, capped)).reason == "failure-cap"
        assert refused(telemetry.begin_curation("web", "auto", t + 99 * HOUR, capped)).until is None
        assert telemetry.curation_status("web").consecutive_failures == 2
        manual = lease(telemetry.begin_curation("web", "manual", t, capped))
        telemetry.finish_curation(manual.job_id, "succeeded", None, t)
        status = telemetry.curation_status("web")
        assert status.consecutive_failures == 0 and status.last_success_at == t
        assert status.skips == {"failure-cap": 2}
        lease(telemetry.begin_curation("web", "auto", t, capped))

    def test_a_zero_cap_never_stops_auto_runs(self, telemetry: Any) -> None:
        t = NOW
        for _ in range(5):
            job = lease(telemetry.begin_curation("web", "auto", t, BARE))
            telemetry.finish_curation(job.job_id, "failed", None, t)
        assert telemetry.curation_status("web").consecutive_failures == 5
        lease(telemetry.begin_curation("web", "auto", t, BARE))

    def test_malformed_curation_arguments_are_refused(self, telemetry: Any) -> None:
        with pytest.raises(InvalidArgument):
            telemetry.begin_curation("web", "cron", NOW, LIMITS)
        with pytest.raises(InvalidArgument):
            telemetry.begin_curation("web", "auto", NOW.replace(tzinfo=None), LIMITS)
        job = lease(telemetry.begin_curation("web", "auto", NOW, LIMITS))
        with pytest.raises(InvalidArgument):
            telemetry.finish_curation(job.job_id, "running", None, NOW)
        assert telemetry.curation_status("web").active.job_id == job.job_id
        assert telemetry.finish_curation(10_000, "failed", None, NOW) is False


def _loads(rows: list[SkillStatRow]) -> dict[str, int]:
    return {r.skill_id: r.loads for r in rows}
