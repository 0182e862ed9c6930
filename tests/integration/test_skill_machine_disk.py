"""The skill state machine on a real SQLite journal and real folders (ADR 0030)."""

from __future__ import annotations

from hypothesis import settings
from pi_hermes_memory.adapters.sqlite.skill_tables import SqliteSkillTables
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.journal import pipeline
from pi_hermes_memory.ports.skills import SkillTelemetry
from pi_hermes_memory.ports.store import Storage

from tests.support.skill_machine import SkillMachine


class DiskSkills(SkillMachine):
    """Snapshots every few events here, so reopening also reads skill snapshots (ADR 0024)."""

    sqlite: SqliteStorage

    def __init__(self) -> None:
        self.snapshot_every = pipeline.SNAPSHOT_EVERY
        pipeline.SNAPSHOT_EVERY = 3
        super().__init__()

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            pipeline.SNAPSHOT_EVERY = self.snapshot_every

    def open_storage(self) -> tuple[Storage, SkillTelemetry]:
        self.sqlite = SqliteStorage(self.root / "sessions.db")
        return self.sqlite, SqliteSkillTables(self.sqlite)

    def reopen_storage(self) -> tuple[Storage, SkillTelemetry]:
        self.sqlite.close()
        return self.open_storage()

    def close_storage(self) -> None:
        self.sqlite.close()


DiskSkills.TestCase.settings = settings(
    DiskSkills.TestCase.settings, stateful_step_count=30, max_examples=50
)
TestDiskSkills = DiskSkills.TestCase
