"""The skill telemetry contract and properties on the SQLite tables of `sessions.db`, plus
what only the real file shows: the schema step, query plans, isolation of a failing cleanup,
mapped driver errors and the sharing of one store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest
from pi_hermes_memory.adapters.sqlite.schema import SCHEMA_VERSION
from pi_hermes_memory.adapters.sqlite.skill_tables import CLEANUP_KEY, SqliteSkillTables, utc_text
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.config.settings import SkillGovernanceConfig, SkillScopesConfig
from pi_hermes_memory.errors import StorageFailed
from pi_hermes_memory.ports.skills import CurationLimits
from pi_hermes_memory.skills.stats import after_discovery
from pi_hermes_memory.testing import SkillTelemetryContract

from tests.support.skill_properties import SkillLoadProperties

NOW = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
CONFIG = SkillGovernanceConfig(scopes=SkillScopesConfig(global_skills_dir=Path("/nonexistent")))


class TestSqliteSkillTables(SkillTelemetryContract, SkillLoadProperties):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> Iterator[None]:
        self._tmp = tmp_path
        self._opened: list[SqliteStorage] = []
        yield
        for storage in self._opened:
            storage.close()

    def make(self) -> SqliteSkillTables:
        storage = SqliteStorage(self._tmp / f"sessions-{len(self._opened)}.db", event_log=None)
        self._opened.append(storage)
        return SqliteSkillTables(storage)

    def add_history(
        self, telemetry: SqliteSkillTables, skill_id: str, project: str | None, at: datetime
    ) -> None:
        with telemetry.storage.transaction():
            telemetry.storage.connection.execute(
                "INSERT INTO skill_load_events (skill_id, project, at) VALUES (?, ?, ?)",
                (skill_id, project, utc_text(at)),
            )


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[SqliteStorage]:
    s = SqliteStorage(tmp_path / "sessions.db", event_log=None)
    yield s
    s.close()


def _traced(storage: SqliteStorage, call: Any) -> list[tuple[str, Any]]:
    """The statements `call` runs on the store's connection, with their bindings."""
    seen: list[tuple[str, Any]] = []

    def trace(cursor: Any, sql: str, bindings: Any) -> bool:
        seen.append((sql, bindings))
        return True

    storage.connection.exec_trace = trace
    try:
        call()
    finally:
        storage.connection.exec_trace = None
    return seen


def test_the_skill_tables_are_schema_step_5_of_an_upgraded_store(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    SqliteStorage(path, event_log=None).close()
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA user_version").get == SCHEMA_VERSION >= 6
    conn.execute(
        "DROP TABLE skill_policy_overrides;"
        "DROP TABLE skill_load_daily; DROP TABLE skill_load_events; DROP TABLE skill_usage_events;"
        "DROP TABLE skill_visibility; DROP TABLE skill_governance; DROP TABLE skill_curation_jobs;"
        "DROP TABLE skill_curation_skips; PRAGMA user_version=4"
    )
    conn.close()
    storage = SqliteStorage(path, event_log=None)  # a store of the previous release migrates
    try:
        SqliteSkillTables(storage).record_loads(["global:a"], "web", NOW.date())
        assert SqliteSkillTables(storage).load_counts(None) == {"global:a": 1}
    finally:
        storage.close()


def test_cleanup_and_windowed_stats_never_scan_a_skill_table(storage: SqliteStorage) -> None:
    """Every statement the adapter runs for a cleanup or a windowed stats query searches an
    index (the day/at ones) instead of walking a whole table or index."""
    telemetry = SqliteSkillTables(storage)
    telemetry.record_loads(["global:a"], "web", NOW.date())
    today = NOW.date()
    statements = _traced(storage, lambda: telemetry.cleanup_loads(NOW, 180, 500))
    statements += _traced(storage, lambda: telemetry.stats(7, None, today))
    statements += _traced(storage, lambda: telemetry.stats(1, "web", today))
    checked = 0
    for sql, bindings in statements:
        if "skill_" not in sql:
            continue
        plan = [str(row[-1]) for row in storage.connection.execute(
            f"EXPLAIN QUERY PLAN {sql}", bindings
        )]  # fmt: skip
        assert not [step for step in plan if step.startswith("SCAN skill_")], (sql, plan)
        checked += 1
    assert checked >= 8  # two deletes, two probes, three load-count and usage queries


def test_a_failing_cleanup_rolls_back_warns_and_keeps_the_discovery_counts(
    storage: SqliteStorage,
) -> None:
    telemetry = SqliteSkillTables(storage)
    telemetry.record_loads(["global:old"], "web", date(2025, 1, 1))
    with storage.transaction():
        storage.connection.execute(
            "CREATE TRIGGER refuse BEFORE DELETE ON skill_load_daily "
            "BEGIN SELECT RAISE(ABORT, 'cannot delete now'); END"
        )
    warnings = after_discovery(telemetry, ["global:a"], "web", NOW, CONFIG)
    assert len(warnings) == 1 and "cleanup failed" in warnings[0]
    assert "cannot delete now" in warnings[0]
    assert telemetry.load_counts(None) == {"global:old": 1, "global:a": 1}
    meta = storage.connection.execute(
        "SELECT count(*) FROM store_meta WHERE key = ?", (CLEANUP_KEY,)
    ).get
    assert meta == 0  # rolled back with the deletes: the next discovery retries
    with storage.transaction():
        storage.connection.execute("DROP TRIGGER refuse")
    assert after_discovery(telemetry, ["global:a"], "web", NOW, CONFIG) == []
    assert telemetry.load_counts(None) == {"global:a": 2}


def test_driver_errors_leave_as_storage_failures(storage: SqliteStorage) -> None:
    telemetry = SqliteSkillTables(storage)
    storage.close()
    with pytest.raises(StorageFailed):
        telemetry.record_loads(["global:a"], "web", NOW.date())
    with pytest.raises(StorageFailed):
        telemetry.visibility("web")
    assert after_discovery(telemetry, ["global:a"], "web", NOW, CONFIG) != []


def test_two_connections_share_one_lease(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first, second = SqliteStorage(path, event_log=None), SqliteStorage(path, event_log=None)
    try:
        limits = CurationLimits(stale_after=timedelta(minutes=2))
        a, b = SqliteSkillTables(first), SqliteSkillTables(second)
        job = a.begin_curation("web", "auto", NOW, limits)
        refused = b.begin_curation("web", "manual", NOW, limits)
        assert getattr(refused, "reason", None) == "busy"
        assert b.curation_status("web").skips == {"busy": 1}
        assert b.finish_curation(job.job_id, "succeeded", None, NOW) is True  # type: ignore[union-attr]
        a.cleanup_loads(NOW, 180, 500)
        assert not b.cleanup_loads(NOW + timedelta(hours=1), 180, 500).ran
    finally:
        first.close()
        second.close()


def test_skill_writes_are_not_journal_events(storage: SqliteStorage) -> None:
    telemetry = SqliteSkillTables(storage)
    telemetry.record_loads(["global:a"], "web", NOW.date())
    telemetry.set_visibility("web", "global:a", "hidden")
    assert storage.connection.execute("SELECT count(*) FROM events").get == 0
