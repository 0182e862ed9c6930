"""Stateful invariants on the real adapters: SQLite file + Markdown files, with reopen."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.document import MemoryDocument

from tests.support.machine import MemoryMachine
from tests.support.write_index import check_write_index


def _disk() -> tuple[SqliteStorage, MarkdownFiles]:
    root = Path(tempfile.mkdtemp(prefix="phm-sm-"))
    memory_dir = root / "pi-hermes-memory"
    return SqliteStorage(memory_dir / "sessions.db"), MarkdownFiles(
        memory_dir, root / "projects-memory"
    )


class DiskMachine(MemoryMachine):
    make_adapters = staticmethod(_disk)

    def reopen(self) -> None:
        path = self.storage.path  # type: ignore[attr-defined]
        self.storage.close()
        self.storage = SqliteStorage(path)

    def teardown(self) -> None:
        path = self.storage.path  # type: ignore[attr-defined]
        super().teardown()
        shutil.rmtree(path.parent.parent, ignore_errors=True)

    def check_projection(self, doc: MemoryDocument) -> None:
        conn = self.storage.connection  # type: ignore[attr-defined]
        rows = {
            r[0]: (r[1], r[2])
            for r in conn.execute(
                "SELECT id, text, superseded_by FROM memories WHERE target = ?", (doc.target.value,)
            )
        }
        expected = {
            e.id: (e.text, e.superseded_by)
            for e in doc.all_entries()
            if not (e.target.value == "project" and e.project is None)
        }
        assert rows == expected
        fts = conn.execute("SELECT count(*) FROM memories_fts").get
        assert fts == conn.execute("SELECT count(*) FROM memories").get
        # the persisted write index answers the write rules as the fold does (ADR 0084)
        check_write_index(self.storage, doc, [e.text + " more" for e in doc.active[:3]])


DiskMachine.TestCase.settings = settings(
    DiskMachine.TestCase.settings, stateful_step_count=25, max_examples=25
)
TestDiskMachine = DiskMachine.TestCase
