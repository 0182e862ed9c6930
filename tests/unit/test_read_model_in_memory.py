"""The read port `MemoryRows` in memory, and a custom vector store written against the public
ports alone passing the shipped vector contract over it (ADR 0057)."""

from __future__ import annotations

import pytest
from pi_hermes_memory.adapters.inmemory.rows import InMemoryRows
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.testing import (
    MemoryRowsContract,
    VectorBackgroundContract,
    VectorStoreContract,
)

from tests.support.rows_vector_store import RowsVectorStore


class TestInMemoryRows(MemoryRowsContract):
    @pytest.fixture
    def storage(self) -> InMemoryStorage:
        return InMemoryStorage()

    @pytest.fixture
    def rows(self, storage: InMemoryStorage) -> InMemoryRows:
        return InMemoryRows(storage)


class TestRowsVectorStoreInMemory(VectorStoreContract, VectorBackgroundContract):
    @pytest.fixture
    def storage(self) -> InMemoryStorage:
        return InMemoryStorage()

    @pytest.fixture
    def vector_store(self, storage: InMemoryStorage) -> RowsVectorStore:
        return RowsVectorStore(InMemoryRows(storage))
