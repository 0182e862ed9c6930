"""The shipped contract suites against the SQLite and Markdown-file adapters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.testing import (
    KeywordRelevanceContract,
    MarkdownStoreContract,
    SharedJournalContract,
    StorageContract,
)


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


def test_a_symlink_joining_the_two_roots_refuses_moves(tmp_path: Path) -> None:
    import pi_hermes_memory

    root = tmp_path / "agent"
    with pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(tmp_path)}, project="web"
    ) as m:
        m.add("Web deploys with Docker Compose", target="project")
        projects = root / "projects-memory"
        moved = root / "projects-real"
        projects.rename(moved)
        projects.symlink_to(root / "pi-hermes-memory", target_is_directory=True)
        result = m.promote("Docker Compose")
        assert result.status == "invalid" and "same physical directory" in result.message
        # the file in the TypeScript extension's spelling: no version line (ADR 0077)
        assert (moved / "MEMORY.md").read_text().startswith("Web deploys with Docker Compose")


class TestSqliteSearchIndex(KeywordRelevanceContract):
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Iterator[SqliteStorage]:
        s = SqliteStorage(tmp_path / "sessions.db")
        yield s
        s.close()

    @pytest.fixture
    def search_index(self, storage: SqliteStorage) -> SqliteSearchIndex:
        return SqliteSearchIndex(storage)


class TestSqliteSharedJournal(SharedJournalContract):
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Iterator[SqliteStorage]:
        s = SqliteStorage(tmp_path / "sessions.db")
        yield s
        s.close()

    @pytest.fixture
    def document_format(self) -> MarkdownFormat:
        return MarkdownFormat()
