"""The skill telemetry contract and properties on the PostgreSQL skill tables (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import psycopg
import pytest
from pi_hermes_memory.adapters.postgres.skill_tables import PgSkillTables
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.skill_tables import utc_text
from pi_hermes_memory.testing import SkillTelemetryContract

from tests.support.pg_fixtures import fresh_database
from tests.support.skill_properties import SkillLoadProperties


class TestPgSkillTables(SkillTelemetryContract, SkillLoadProperties):
    @pytest.fixture(autouse=True)
    def _server(self, pg_admin_dsn: str) -> Iterator[None]:
        self._admin = pg_admin_dsn
        self._opened: list[PgStorage] = []
        yield
        for storage in self._opened:
            storage.close()

    def make(self) -> PgSkillTables:
        storage = PgStorage(fresh_database(self._admin))
        self._opened.append(storage)
        return PgSkillTables(storage)

    def add_history(
        self, telemetry: PgSkillTables, skill_id: str, project: str | None, at: datetime
    ) -> None:
        with telemetry.storage.writing() as conn:
            conn.execute(
                "INSERT INTO skill_load_events (skill_id, project, at) VALUES (%s, %s, %s)",
                (skill_id, project, utc_text(at)),
            )


def test_a_driver_error_is_a_storage_failure(pg_dsn: str) -> None:
    from pi_hermes_memory.errors import StorageFailed

    storage = PgStorage(pg_dsn)
    tables = PgSkillTables(storage)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE skill_visibility")
    with pytest.raises(StorageFailed, match="skill_visibility"):
        tables.visibility("web")
    storage.close()
