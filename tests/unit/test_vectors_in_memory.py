"""The vector store contract against the in-memory adapters."""

from __future__ import annotations

import pytest
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.adapters.inmemory.vectors import InMemoryVectorStore
from pi_hermes_memory.testing import VectorBackgroundContract, VectorStoreContract


class TestInMemoryVectorStore(VectorStoreContract, VectorBackgroundContract):
    @pytest.fixture
    def storage(self) -> InMemoryStorage:
        return InMemoryStorage()

    @pytest.fixture
    def vector_store(self, storage: InMemoryStorage) -> InMemoryVectorStore:
        return InMemoryVectorStore(storage)
