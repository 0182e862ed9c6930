"""The shipped contract suites against the SQLite and Markdown-file adapters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.testing import MarkdownStoreContract, StorageContract


class TestSqliteStorage(StorageContract):
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Iterator[SqliteStorage]:
        s = SqliteStorage(tmp_path / "sessions.db")
        yield s
        s.close()


class TestMarkdownFiles(MarkdownStoreContract):
    @pytest.fixture
    def markdown(self, tmp_path: Path) -> MarkdownFiles:
        return MarkdownFiles(tmp_path / "pi-hermes-memory", tmp_path / "projects-memory")
