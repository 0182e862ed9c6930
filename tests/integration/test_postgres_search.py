"""memory_search on PostgreSQL has the semantics of the other indexes (issue 16, ADR 0068):
on any corpus and query, exactly the in-memory and the SQLite FTS5 index's hits and scores."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.adapters.postgres.search import PgSearchIndex
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery
from pi_hermes_memory.testing.contracts import EventWriter

EVERYTHING = tuple(ScopeClause(t) for t in Target)
# words on which unicode61 (remove_diacritics 2) and the Python key cutter agree, CJK runs
# (bigrams), words glued to CJK, and function words that make a query a question
WORDS = ["deploy", "deploys", "staging", "VPN", "token", "Café", "cafe", "München", "the",
         "a", "is", "what", "how", "docker", "build", "構建", "项目构建", "中文", "中",
         "会議室", "pytest运行", "make", "80", "v2", "error", "errors"]  # fmt: skip
SEPARATORS = [" ", ", ", "：", "。", " - ", "\n"]

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
corpora = st.lists(st.tuples(texts, st.sampled_from(list(Target))), min_size=1, max_size=12)
queries = st.builds(
    lambda words, sep, question: sep.join(words) + ("?" if question else ""),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    st.sampled_from(SEPARATORS),
    st.booleans(),
)


@pytest.fixture
def pg(pg_dsn: str) -> Iterator[tuple[PgStorage, str]]:
    storage = PgStorage(pg_dsn)
    yield storage, pg_dsn
    storage.close()


def test_postgres_ranks_like_in_memory_and_matches_like_sqlite(
    pg: tuple[PgStorage, str], tmp_path: Path
) -> None:
    storage, dsn = pg
    numbers = itertools.count()

    @settings(max_examples=40)
    @given(corpus=corpora, query=queries, limit=st.integers(1, 15))
    def check(corpus: list[tuple[str, Target]], query: str, limit: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("TRUNCATE events, memories, snapshots")
        sqlite = SqliteStorage(tmp_path / f"{next(numbers)}.db", event_log=None)
        memory = InMemoryStorage()
        try:
            for store in (storage, sqlite, memory):
                rows = EventWriter(store)
                for text, target in corpus:
                    rows.add(text, target, project="web" if target is Target.PROJECT else None)
            q = SearchQuery(text=query, clauses=EVERYTHING, limit=limit)
            found = PgSearchIndex(storage).search(q)
            assert found == InMemorySearchIndex(memory).search(q)
            # one relevance function (ADR 0068): SQLite ranks and scores alike
            on_sqlite = SqliteSearchIndex(sqlite).search(q)
            assert [(h.id, h.score) for h in found] == [(h.id, h.score) for h in on_sqlite]
            every = SearchQuery(text=query, clauses=EVERYTHING, limit=100, min_score=0.0)
            pg_ids = {h.id for h in PgSearchIndex(storage).search(every)}
            assert pg_ids == {h.id for h in SqliteSearchIndex(sqlite).search(every)}
        finally:
            sqlite.close()

    check()


def test_scope_applies_before_the_limit_on_a_common_word(pg: tuple[PgStorage, str]) -> None:
    storage, _ = pg
    rows = EventWriter(storage)
    for i in range(30):
        rows.add(f"the memory row {i}", Target.MEMORY)
    wanted = rows.add("the project row", Target.PROJECT, project="web")
    q = SearchQuery(text="the row", clauses=(ScopeClause(Target.PROJECT),), limit=1)
    assert [h.id for h in PgSearchIndex(storage).search(q)] == [wanted]
