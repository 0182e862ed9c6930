"""The keyword plan of ADR 0081 answers exactly as the plan it replaced, on a real SQLite file.

`SqliteSearchIndex.search` (one scorer per search, each candidate scored once, prefix keys by
bisection, ASCII queries cut by a regex) against `SqliteSearchIndex.search_reference` (the
plan of ADR 0068: `ranked_rows_reference`, every candidate re-scored through `relevance` per
tier): the same ids, in the same order, with the same scores, over generated stores and
queries (English, Chinese, mixed, stop words, scopes, history rows, floors and limits).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.events import Event, MemoryAdded, MemoryReplaced
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.ports.search import SearchHit, SearchQuery
from pi_hermes_memory.search.memory_search import search_clauses

from tests.bench.keyword import common_words
from tests.bench.run import SEARCH_KINDS, build_search_store, search_queries

#: English words with stems in common (deploy/deploys/deployment), stop words, names,
#: diacritics, Chinese words and function characters, words glued to CJK text
_VOCABULARY = (
    "deploy", "deploys", "deployment", "deployed", "payment", "payments", "invoice",
    "invoices", "cache", "caching", "retry", "retries", "the", "is", "what", "with", "and",
    "Caroline", "VPN", "café", "naïve", "staging", "database", "sign", "signed", "2026",
    "支付", "服务", "发票", "金额", "缓存", "的", "是", "我们", "用pytest运行", "部署脚本",
    "東京", "タワー",
)  # fmt: skip
_WORDS = st.sampled_from(_VOCABULARY)
_TEXTS = st.lists(_WORDS, min_size=1, max_size=12).map(" ".join)
_GLUED = st.lists(_WORDS, min_size=1, max_size=6).map("".join)
_QUERIES = st.one_of(
    st.lists(_WORDS, min_size=1, max_size=5).map(" ".join),
    _GLUED,
    st.lists(_WORDS, min_size=2, max_size=4).map(lambda ws: "what is the " + " ".join(ws)),
)
_PROJECTS = st.sampled_from([None, "web", "api"])
_AT = datetime(2026, 8, 1, 9, 0, tzinfo=UTC)


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[Target, str | None, str, int | None]]:
    """(target, project, text, replaces: index of an earlier row of the target or None)."""
    out: list[tuple[Target, str | None, str, int | None]] = []
    for _ in range(draw(st.integers(1, 40))):
        target = draw(st.sampled_from(list(Target)))
        project = draw(_PROJECTS) if target in (Target.PROJECT, Target.FAILURE) else None
        if target is Target.PROJECT and project is None:
            project = "web"
        earlier = [i for i, row in enumerate(out) if row[0] is target]
        replaces = draw(st.sampled_from([None, *earlier])) if earlier else None
        out.append((target, project, draw(_TEXTS | _GLUED), replaces))
    return out


def _write(storage: SqliteStorage, rows: list[tuple[Target, str | None, str, int | None]]) -> None:
    """All rows in one transaction (replaced rows stay as superseded history)."""
    ids: list[str] = []
    live: dict[str, str] = {}  # the row's first id -> its current id
    versions = dict.fromkeys(Target, 0)
    with storage.transaction() as uow:
        for n, (target, project, text, replaces) in enumerate(rows):
            stream = f"memory:{target.value}"
            versions[target] += 1
            new_id = f"e{n:05d}"
            category = FailureCategory.FAILURE if target is Target.FAILURE else None
            event: Event
            if replaces is not None and ids[replaces] in live:
                old = live.pop(ids[replaces])
                event = MemoryReplaced(
                    stream=stream,
                    version=versions[target],
                    at=_AT,
                    old_id=old,
                    new_id=new_id,
                    text=text,
                    project=rows[replaces][1],
                    category=category,
                    created=date(2026, 8, 1),
                    last_referenced=date(2026, 8, 1),
                )
                live[ids[replaces]] = new_id
            else:
                event = MemoryAdded(
                    stream=stream,
                    version=versions[target],
                    at=_AT,
                    entry_id=new_id,
                    target=target,
                    text=text,
                    project=project,
                    category=category,
                    created=date(2026, 8, 1),
                    last_referenced=date(2026, 8, 1),
                )
                live[new_id] = new_id
            ids.append(new_id)
            uow.journal.append(stream, versions[target] - 1, [event])
            uow.projection.apply([event])


@st.composite
def _query(draw: st.DrawFn, text: str) -> SearchQuery:
    scope = SessionScope(project=draw(_PROJECTS), sharing=draw(st.booleans()))
    target = draw(st.sampled_from([None, *Target]))
    clauses = search_clauses(scope, target)
    return SearchQuery(
        text=text,
        clauses=clauses,
        include_superseded=draw(st.booleans()),
        limit=draw(st.integers(1, 20)),
        min_score=draw(st.sampled_from([None, 0.0, 0.05, 0.3, 0.6, 1.0])),
    )


def _answer(hits: list[SearchHit]) -> list[tuple[Any, ...]]:
    return [(h.id, h.score, h.text, h.target, h.project, h.superseded_by) for h in hits]


def _same(index: SqliteSearchIndex, query: SearchQuery) -> None:
    plan_terms.cache_clear()
    new = index.search(query)
    index._counts._token = None  # the reference counts again, as after a write
    old = index.search_reference(query)
    assert _answer(new) == _answer(old), query


@given(rows=_rows(), data=st.data())
def test_the_new_plan_equals_the_old_on_generated_stores(
    rows: list[tuple[Target, str | None, str, int | None]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory(prefix="keyword-plan-") as tmp:
        storage = SqliteStorage(Path(tmp) / "sessions.db")
        try:
            _write(storage, rows)
            index = SqliteSearchIndex(storage)
            for _ in range(4):
                text = data.draw(_QUERIES | st.sampled_from([r[2] for r in rows]))
                _same(index, data.draw(_query(text)))
        finally:
            storage.close()


@pytest.fixture(scope="module")
def large(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SqliteSearchIndex, list[str]]]:
    """A 5,000-row bench store, with its most common words (in more than COMMON_CAP rows:
    the common tiers, all-of and any-of)."""
    path = tmp_path_factory.mktemp("keyword-plan") / "sessions.db"
    build_search_store(path, 5_000)
    words = common_words(path, 12)
    storage = SqliteStorage(path)
    try:
        yield SqliteSearchIndex(storage), words
    finally:
        storage.close()


_BENCH_QUERIES = [q for kind in SEARCH_KINDS for q in search_queries(kind, 10, seed=7)]


@given(text=_QUERIES | st.sampled_from(_BENCH_QUERIES), data=st.data())
def test_the_new_plan_equals_the_old_with_common_words(
    large: tuple[SqliteSearchIndex, list[str]], text: str, data: st.DataObject
) -> None:
    index, common = large
    if data.draw(st.booleans()):  # two or three of the store's most common words
        text = " ".join(data.draw(st.lists(st.sampled_from(common), min_size=2, max_size=3)))
    _same(index, data.draw(_query(text)))


def test_every_pair_of_common_words_answers_as_before(
    large: tuple[SqliteSearchIndex, list[str]],
) -> None:
    """Both common tiers (all of the words, then any of them when that is short of the
    limit) on every pair of the store's most common words, in three scopes."""
    index, common = large
    scopes = [SessionScope(project="web"), SessionScope(project="api", sharing=True)]
    for a in common:
        for b in common:
            for scope in scopes:
                for limit, history in ((1, False), (10, True), (20, False)):
                    query = SearchQuery(
                        text=f"{a} {b}",
                        clauses=search_clauses(scope),
                        limit=limit,
                        include_superseded=history,
                    )
                    _same(index, query)
