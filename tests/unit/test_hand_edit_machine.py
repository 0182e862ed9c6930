"""Tool writes racing stale editor buffers, on the in-memory adapters (ADR 0022)."""

from __future__ import annotations

from hypothesis import settings
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.store import MarkdownStore

from tests.support.builders import service
from tests.support.hand_edit_machine import HandEditMachine


class InMemoryHandEdits(HandEditMachine):
    def make_service(self) -> tuple[MemoryService, MarkdownStore]:
        md = InMemoryMarkdown()
        return service(markdown=md, clock=self.clock), md


InMemoryHandEdits.TestCase.settings = settings(
    InMemoryHandEdits.TestCase.settings, stateful_step_count=30
)
TestInMemoryHandEdits = InMemoryHandEdits.TestCase
