"""The shipped contract suites against the in-memory adapters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.testing import (
    KeywordRelevanceContract,
    MarkdownStoreContract,
    SharedJournalContract,
    StorageContract,
)


class TestInMemoryStorage(StorageContract):
    @pytest.fixture
    def storage(self) -> Iterator[InMemoryStorage]:
        yield InMemoryStorage()


class TestInMemoryMarkdown(MarkdownStoreContract):
    @pytest.fixture
    def markdown(self) -> InMemoryMarkdown:
        return InMemoryMarkdown()


class TestInMemorySearchIndex(KeywordRelevanceContract):
    @pytest.fixture
    def storage(self) -> InMemoryStorage:
        return InMemoryStorage()

    @pytest.fixture
    def search_index(self, storage: InMemoryStorage) -> InMemorySearchIndex:
        return InMemorySearchIndex(storage)


class TestInMemorySharedJournal(SharedJournalContract):
    @pytest.fixture
    def storage(self) -> InMemoryStorage:
        return InMemoryStorage()

    @pytest.fixture
    def document_format(self) -> MarkdownFormat:
        return MarkdownFormat()
