"""The shipped SessionIndex contract suite against the SQLite index on disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex
from pi_hermes_memory.testing import SessionIndexContract


class TestSqliteSessionIndex(SessionIndexContract):
    @pytest.fixture
    def session_index(self, tmp_path: Path) -> Iterator[SqliteSessionIndex]:
        index = SqliteSessionIndex(tmp_path / "sessions.db")
        yield index
        index.close()
