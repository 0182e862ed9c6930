"""The shipped contract suites, unchanged, against the PostgreSQL adapters (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.postgres.search import PgSearchIndex
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.postgres.vectors import PgVectorStore
from pi_hermes_memory.testing import (
    KeywordRelevanceContract,
    SharedJournalContract,
    StorageContract,
    VectorBackgroundContract,
    VectorStoreContract,
)


@pytest.fixture
def storage(pg_dsn: str) -> Iterator[PgStorage]:
    s = PgStorage(pg_dsn)
    yield s
    s.close()


class TestPgStorage(StorageContract):
    pass


class TestPgSearchIndex(KeywordRelevanceContract):
    @pytest.fixture
    def search_index(self, storage: PgStorage) -> PgSearchIndex:
        return PgSearchIndex(storage)


class TestPgSharedJournal(SharedJournalContract):
    @pytest.fixture
    def document_format(self) -> MarkdownFormat:
        return MarkdownFormat()


class TestPgVectorStore(VectorStoreContract, VectorBackgroundContract):
    @pytest.fixture
    def vector_store(self, storage: PgStorage) -> PgVectorStore:
        return PgVectorStore(storage)
