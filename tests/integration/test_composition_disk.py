"""Per-port factories of `open(...)` on the default SQLite store (ADR 0057): the read port
`MemoryRows` over SQLite passes its contract; a custom vector store written against the public
ports alone passes the vector contract over it and replaces only the vector store of a real
SQLite store (FTS search, session history and skill statistics stay on); a storage factory
wraps the default storage and keeps every other default; a storage instance switches the
defaults off only with a warning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
import structlog
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.sqlite.rows import SqliteRows
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.composition import Backend, BackendKind
from pi_hermes_memory.ports import Storage
from pi_hermes_memory.testing import (
    MemoryRowsContract,
    VectorBackgroundContract,
    VectorStoreContract,
)

from tests.support.embedders import BagEmbedder
from tests.support.rows_vector_store import RowsVectorStore


@pytest.fixture
def sqlite_storage(tmp_path: Path) -> Iterator[SqliteStorage]:
    s = SqliteStorage(tmp_path / "sessions.db")
    yield s
    s.close()


class TestSqliteRows(MemoryRowsContract):
    @pytest.fixture
    def storage(self, sqlite_storage: SqliteStorage) -> SqliteStorage:
        return sqlite_storage

    @pytest.fixture
    def rows(self, storage: SqliteStorage) -> SqliteRows:
        return SqliteRows(storage)


class TestRowsVectorStoreOnSqlite(VectorStoreContract, VectorBackgroundContract):
    @pytest.fixture
    def storage(self, sqlite_storage: SqliteStorage) -> SqliteStorage:
        return sqlite_storage

    @pytest.fixture
    def vector_store(self, storage: SqliteStorage) -> RowsVectorStore:
        return RowsVectorStore(SqliteRows(storage))


def test_a_custom_vector_store_replaces_only_the_vectors(tmp_path: Path) -> None:
    made: list[RowsVectorStore] = []
    seen: list[Backend] = []

    def vectors(backend: Backend) -> RowsVectorStore:
        seen.append(backend)
        assert backend.rows is not None
        made.append(RowsVectorStore(backend.rows))
        return made[0]

    with pi_hermes_memory.open(
        agent_root=tmp_path, cwd=tmp_path, environ={}, embedder=BagEmbedder(), vector_store=vectors
    ) as memory:
        assert seen[0].kind is BackendKind.SQLITE
        assert isinstance(seen[0].storage, SqliteStorage)
        memory.add("Deploys go through blue-green switching on Fridays")
        memory.add("The staging database is refreshed nightly")
        hits = memory.search("blue-green deploys").hits
        assert hits and hits[0].text.startswith("Deploys go through blue-green")
        assert made[0].calls > 0  # the custom store served the vectors
        assert memory.reembed().total == 0  # both were embedded as they were written
        assert made[0].count(
            pi_hermes_memory.ports.VectorScope.everything(),
            memory.embeddings.model_id,  # type: ignore[union-attr]
        ) == (2, 2)
        assert memory.session_search("anything").success is not None  # history stays on
        assert memory.skill_stats() is not None  # skill statistics stay on
    assert (tmp_path / "pi-hermes-memory" / "sessions.db").exists()


class Audited:
    """A storage wrapper: counts transactions, delegates everything."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.transactions = 0

    def transaction(self) -> Any:
        self.transactions += 1
        return self.inner.transaction()

    def snapshot(self) -> Any:
        return self.inner.snapshot()

    def erasing(self) -> Any:
        return self.inner.erasing()

    def scrub(self) -> Any:
        return self.inner.scrub()

    def close(self) -> None:
        self.inner.close()


def test_a_storage_factory_wraps_the_default_and_keeps_every_other_default(
    tmp_path: Path,
) -> None:
    wrappers: list[Audited] = []

    def audited(backend: Backend) -> Audited:
        wrappers.append(Audited(backend.storage))
        return wrappers[0]

    with pi_hermes_memory.open(
        agent_root=tmp_path, cwd=tmp_path, environ={}, storage=audited
    ) as memory:
        memory.add("The CI runs on Buildkite")
        assert wrappers[0].transactions > 0
        assert memory.search("Buildkite").hits  # the default FTS index over the same file
        assert memory.session_search("anything").success is not None
    with pi_hermes_memory.open(agent_root=tmp_path, cwd=tmp_path, environ={}) as memory:
        assert [e.text for e in memory.entries("memory")] == ["The CI runs on Buildkite"]


def test_a_storage_instance_says_which_defaults_are_off(tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        memory = pi_hermes_memory.open(
            agent_root=tmp_path,
            cwd=tmp_path,
            environ={},
            storage=InMemoryStorage(),
            markdown=InMemoryMarkdown(),
        )
    memory.close()
    off = [e for e in logs if e["event"] == "open.defaults_off"]
    assert off and off[0]["parts"] == [
        "search_index",
        "vector_store",
        "session_index",
        "skill_telemetry",
    ]
    assert off[0]["log_level"] == "warning"
