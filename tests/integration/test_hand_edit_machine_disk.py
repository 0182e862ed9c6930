"""Tool writes racing stale editor buffers, on SQLite and real Markdown files (ADR 0022)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.store import MarkdownStore

from tests.support.builders import service
from tests.support.hand_edit_machine import HandEditMachine


class DiskHandEdits(HandEditMachine):
    def make_service(self) -> tuple[MemoryService, MarkdownStore]:
        self.root = Path(tempfile.mkdtemp(prefix="hand-edits-"))
        memory_dir = self.root / "pi-hermes-memory"
        self.storage = SqliteStorage(memory_dir / "sessions.db")
        md = MarkdownFiles(memory_dir, self.root / "projects-memory")
        return service(self.storage, md, clock=self.clock), md

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.storage.close()
            shutil.rmtree(self.root, ignore_errors=True)


DiskHandEdits.TestCase.settings = settings(
    DiskHandEdits.TestCase.settings, stateful_step_count=25, max_examples=30
)
TestDiskHandEdits = DiskHandEdits.TestCase
