"""The skill state machine on the in-memory journal and real folders in a temporary
directory (ADR 0030); `tests/integration/test_skill_machine_disk.py` runs it on SQLite."""

from __future__ import annotations

from hypothesis import settings
from pi_hermes_memory.adapters.inmemory.skill_tables import InMemorySkillTables
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.ports.skills import SkillTelemetry
from pi_hermes_memory.ports.store import Storage

from tests.support.skill_machine import SkillMachine


class InMemorySkills(SkillMachine):
    def open_storage(self) -> tuple[Storage, SkillTelemetry]:
        self.memory, self.tables = InMemoryStorage(), InMemorySkillTables()
        return self.memory, self.tables

    def reopen_storage(self) -> tuple[Storage, SkillTelemetry]:
        return self.memory, self.tables  # the same journal; the new service starts cold


InMemorySkills.TestCase.settings = settings(
    InMemorySkills.TestCase.settings, stateful_step_count=30, max_examples=25
)
TestInMemorySkills = InMemorySkills.TestCase
