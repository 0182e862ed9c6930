"""The purge state machine (tests/unit/test_purge_machine.py) on the real adapters: SQLite on
disk with its event log, and Markdown files. "Nowhere" means every file under the data
directory, read as bytes: the database, its WAL, the event log and the Markdown files."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target

from tests.unit.test_purge_machine import PurgeMachine


class DiskPurgeMachine(PurgeMachine):
    def make_adapters(self) -> tuple[Any, Any]:
        self.root = Path(tempfile.mkdtemp(prefix="purge-machine-"))
        memory_dir = self.root / "pi-hermes-memory"
        return (
            SqliteStorage(memory_dir / "sessions.db"),
            MarkdownFiles(memory_dir, self.root / "projects-memory"),
        )

    def teardown(self) -> None:
        try:
            self.storage.close()
            shutil.rmtree(self.root, ignore_errors=True)
        finally:
            super().teardown()

    def file(self, target: Target) -> bytes:
        path = self.md.path_for(target)
        return path.read_bytes() if path.exists() else b""

    def put_file(self, target: Target, data: bytes) -> None:
        self.md.path_for(target).write_bytes(data)

    def row_ids(self) -> set[str]:
        return {str(r[0]) for r in self.storage.connection.execute("SELECT id FROM memories")}

    def leftover_blobs(self) -> list[str]:
        return [
            p.read_bytes().decode("latin-1")  # the generated texts are ASCII
            for p in sorted(self.root.rglob("*"))
            if p.is_file()
        ]


TestDiskPurgeMachine = DiskPurgeMachine.TestCase
TestDiskPurgeMachine.settings = settings(max_examples=12, stateful_step_count=20, deadline=None)
