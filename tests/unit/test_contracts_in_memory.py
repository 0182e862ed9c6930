"""The shipped contract suites against the in-memory adapters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pi_hermes_memory.adapters.memory import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.testing import MarkdownStoreContract, StorageContract


class TestInMemoryStorage(StorageContract):
    @pytest.fixture
    def storage(self) -> Iterator[InMemoryStorage]:
        yield InMemoryStorage()


class TestInMemoryMarkdown(MarkdownStoreContract):
    @pytest.fixture
    def markdown(self) -> InMemoryMarkdown:
        return InMemoryMarkdown()
