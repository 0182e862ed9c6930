"""Hypothesis properties of the skill load tables, run against each adapter next to the
shipped contract (the contract itself needs no Hypothesis). Mixed into a class that provides
`make()` and `add_history()` like `SkillTelemetryContract`."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TODAY = date(2026, 7, 29)
SKILLS = ("global:a", "global:b", "project:web:c")
PROJECTS = (None, "web", "api")

_daily = st.tuples(st.sampled_from(SKILLS), st.sampled_from(PROJECTS), st.integers(0, 15))
_history = st.tuples(
    st.sampled_from(SKILLS), st.sampled_from(PROJECTS), st.integers(0, 15), st.integers(0, 23)
)
#: each example makes its own adapter (`make()`), so the folder fixture is not shared state;
#: the same property runs for each adapter class (differing executors), and an example found
#: failing on one adapter is exactly what the other should replay
_fresh = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
)


def _model(
    daily: list[tuple[str, str | None, int]],
    history: list[tuple[str, str | None, int, int]],
    since: date | None,
    project: str | None,
) -> dict[str, int]:
    days: dict[tuple[str, str | None, date], int] = {}
    for skill, where, ago, _ in history:
        key = (skill, where, TODAY - timedelta(days=ago))
        days[key] = days.get(key, 0) + 1
    counted: dict[tuple[str, str | None, date], int] = {}
    for skill, where, ago in daily:
        key = (skill, where, TODAY - timedelta(days=ago))
        counted[key] = counted.get(key, 0) + 1
    days.update(counted)
    out: dict[str, int] = {}
    for (skill, where, day), n in days.items():
        if (since is None or day >= since) and (project is None or where == project):
            out[skill] = out.get(skill, 0) + n
    return out


class SkillLoadProperties:
    def make(self) -> Any:
        raise NotImplementedError

    def add_history(self, telemetry: Any, skill_id: str, project: str | None, at: datetime) -> None:
        raise NotImplementedError

    def _filled(
        self,
        daily: list[tuple[str, str | None, int]],
        history: list[tuple[str, str | None, int, int]],
    ) -> Any:
        telemetry = self.make()
        for skill, project, ago in daily:
            telemetry.record_loads([skill], project, TODAY - timedelta(days=ago))
        for skill, project, ago, hour in history:
            day = TODAY - timedelta(days=ago)
            at = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
            self.add_history(telemetry, skill, project, at)
        return telemetry

    @_fresh
    @given(
        daily=st.lists(_daily, max_size=25),
        history=st.lists(_history, max_size=25),
        since=st.none() | st.integers(0, 16),
        project=st.sampled_from(PROJECTS),
    )
    def test_load_counts_equal_the_model(
        self,
        daily: list[tuple[str, str | None, int]],
        history: list[tuple[str, str | None, int, int]],
        since: int | None,
        project: str | None,
    ) -> None:
        telemetry = self._filled(daily, history)
        first = None if since is None else TODAY - timedelta(days=since)
        assert telemetry.load_counts(first, project) == _model(daily, history, first, project)

    @_fresh
    @given(
        daily=st.lists(_daily, max_size=25),
        history=st.lists(_history, max_size=25),
        retention=st.integers(1, 16),
        budget=st.integers(0, 8),
    )
    def test_cleanup_deletes_only_expired_rows_within_budget(
        self,
        daily: list[tuple[str, str | None, int]],
        history: list[tuple[str, str | None, int, int]],
        retention: int,
        budget: int,
    ) -> None:
        telemetry = self._filled(daily, history)
        cutoff = TODAY - timedelta(days=retention)
        kept = telemetry.load_counts(cutoff)
        now = datetime(TODAY.year, TODAY.month, TODAY.day, 12, tzinfo=UTC)
        report = telemetry.cleanup_loads(now, retention, budget)
        old_daily = len({(s, p, a) for s, p, a in daily if a > retention})
        old_events = sum(1 for _, _, a, _ in history if a > retention)
        assert report.ran and report.cutoff == cutoff
        assert report.deleted_daily == min(budget, old_daily)
        assert report.deleted_events == min(budget, old_events)
        assert report.more_daily == (old_daily > budget)
        assert report.more_events == (old_events > budget)
        assert telemetry.load_counts(cutoff) == kept  # nothing within retention was touched
