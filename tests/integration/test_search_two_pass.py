"""memory_search's keyword ranking on a real store (ADR 0068, which replaced the two-pass
tiers of ADR 0040): against every row scored, and its caches across connections."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search import relevance
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.ports.search import SearchQuery
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

from tests.bench.run import SEARCH_KINDS, build_search_store, search_queries

MODEL = "test/model"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("two-pass") / "sessions.db"
    build_search_store(path, 3_000)
    storage = SqliteStorage(path)
    try:
        writer = EventWriter(storage)
        # rows of one text in several scopes: equal bm25 scores, so ties fall at every cut
        for n in range(120):
            target = (Target.MEMORY, Target.PROJECT, Target.FAILURE)[n % 3]
            project = ("web", "api")[n % 2] if target is not Target.MEMORY else None
            writer.add("tie marker zebra", target, project=project, entry_id=f"tie{n:04d}")
    finally:
        storage.close()
    yield path


def _queries() -> list[str]:
    texts = ["tie marker", "zebra", "tie marker payments", "what is the zebra marker"]
    for kind in SEARCH_KINDS:
        texts += search_queries(kind, 6, seed=3)
    return texts


def _every_row_scored(storage: SqliteStorage, query: SearchQuery) -> tuple[list[Any], bool]:
    """The oracle: every in-scope row of the store scored by the shared relevance, with the
    weights the index uses; and whether the MaxScore bound proves the index must equal it
    (rows holding only common keys cannot reach the floor or the limit-th score)."""
    conn = storage.connection
    keys = relevance.query_keys(plan_terms(query.text))
    texts = [
        (str(id_), str(text), (Target(t), p, c, by, ns))
        for id_, text, t, p, c, by, ns in conn.execute(
            "SELECT id, text, target, project, category, superseded_by, namespace "
            "FROM memories ORDER BY rowid"
        )
    ]

    def count(key: relevance.Key) -> int:
        return min(relevance.COMMON_CAP, sum(1 for _, t, _ in texts if relevance.matches(key, t)))

    chosen, docs = relevance.resolve_keys(keys, count)
    weights = relevance.Weights(
        keys=tuple(chosen),
        idf=tuple(
            relevance.key_weight(k, n, len(texts)) for k, n in zip(chosen, docs, strict=True)
        ),
        average_length=relevance.average_length(t for _, t, _ in texts[-relevance.LENGTH_SAMPLE :]),
    )
    scored = [
        (relevance.relevance(weights, text), id_, None)
        for id_, text, scope in texts
        if query.admits(*scope)
    ]
    ranked = relevance.best(scored, query.floor, query.limit)
    common = [k for k, n in zip(chosen, docs, strict=True) if n >= relevance.COMMON_CAP]
    kth = relevance.kth_score(ranked, query.limit)
    bound = weights.bound(common)
    proven = not common or bound < query.floor or (kth is not None and kth > bound)
    return [(id_, relevance.shown_score(raw)) for raw, id_, _ in ranked], proven


def test_the_index_equals_scoring_every_row_where_the_bound_proves_it(store: Path) -> None:
    """Common keys are counted only up to the cap and rows holding only them are read from
    a bounded pool (ADR 0068); where the MaxScore bound says they cannot matter, the answer
    is exactly every row scored; elsewhere every hit is in scope, above the floor, best
    first."""
    storage = SqliteStorage(store)
    try:
        scopes = [
            SessionScope(project="web"),
            SessionScope(project="api", sharing=True),
            SessionScope(project=None),
        ]
        cases = [
            SearchQuery(text=text, clauses=clauses, limit=limit, include_superseded=history)
            for text in _queries()
            for scope in scopes
            for target in (None, Target.FAILURE, Target.PROJECT, Target.MEMORY)
            if (clauses := search_clauses(scope, target))
            for limit, history in ((10, False), (1, True), (20, False))
        ]
        index = SqliteSearchIndex(storage)
        proven_cases = 0
        for query in cases:
            hits = index.search(query)
            expected, proven = _every_row_scored(storage, query)
            if proven:
                proven_cases += 1
                assert [(h.id, h.score) for h in hits] == expected, query
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            assert all(query.floor <= s <= 1 or s == 1.0 for s in scores)
            assert all(
                query.admits(
                    h.target,
                    h.project,
                    h.category.value if h.category else None,
                    h.superseded_by,
                    h.namespace,
                )
                for h in hits
            )
        assert proven_cases > len(cases) // 2
    finally:
        storage.close()


def test_a_word_no_row_held_is_found_after_another_connection_adds_it(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    mine, theirs = SqliteStorage(path), SqliteStorage(path)
    try:
        EventWriter(mine).add("deploy the payments service")
        index = SqliteSearchIndex(mine)
        query = SearchQuery(  # no floor: in a one-row store "payments" alone scores low
            text="payments quokka",
            clauses=search_clauses(SessionScope(project=None)),
            min_score=0.0,
        )
        assert [h.text for h in index.search(query)] == ["deploy the payments service"]
        EventWriter(theirs).add("the quokka runbook", entry_id="zz-quokka")
        found = [h.text for h in index.search(query)]
        assert found == ["deploy the payments service", "the quokka runbook"] or found == [
            "the quokka runbook",
            "deploy the payments service",
        ]
    finally:
        mine.close()
        theirs.close()


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, 4)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_the_candidate_matrix_follows_writes_without_copying_an_unchanged_scope(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    mine, theirs = SqliteStorage(path), SqliteStorage(path)
    try:
        writer = EventWriter(mine)
        rows = [(writer.add(f"row {n}"), f"row {n}") for n in range(8)]
        store = SqliteVectorStore(mine)
        store.put(rows, _vectors(8, 1), MODEL)
        scope = VectorScope(clauses=search_clauses(SessionScope(project=None), Target.MEMORY))
        ids, matrix = store.candidates(scope, MODEL)
        assert sorted(ids) == sorted(i for i, _ in rows)
        with theirs.transaction():  # a write that changes no row of the scope's matrix
            theirs.connection.execute("UPDATE memories SET last_referenced = '2026-12-01'")
        again, same = store.candidates(scope, MODEL)
        assert again is ids and same is matrix
        # another connection supersedes a row and embeds the new one
        other = EventWriter(theirs)
        other.n = 100  # ids of its own
        new_id = other.replace(rows[2][0], "row two, corrected")
        SqliteVectorStore(theirs).put([(new_id, "row two, corrected")], _vectors(1, 2), MODEL)
        ids, matrix = store.candidates(scope, MODEL)
        assert rows[2][0] not in ids and new_id in ids
        fresh_ids, fresh = SqliteVectorStore(mine).candidates(scope, MODEL)
        mapped = {i: matrix[n].tolist() for n, i in enumerate(ids)}
        assert mapped == {i: fresh[n].tolist() for n, i in enumerate(fresh_ids)}
        assert not matrix.flags.writeable
    finally:
        mine.close()
        theirs.close()


@pytest.mark.parametrize("lacking", [3, 600])
def test_missing_lists_the_newest_rows_lacking_a_vector_and_feeds_the_refresh(
    tmp_path: Path, lacking: int
) -> None:
    """`missing` lists the scope once (ADR 0040): the rows lacking a current vector, newest
    id first, whether few (read by rowid) or many (its own query); the refresh that follows
    reuses the listing and equals a rebuild."""
    path = tmp_path / "sessions.db"
    storage = SqliteStorage(path)
    try:
        writer = EventWriter(storage)
        embedded = [(writer.add(f"embedded {n}"), f"embedded {n}") for n in range(5)]
        store = SqliteVectorStore(storage)
        scope = VectorScope(clauses=search_clauses(SessionScope(project=None), Target.MEMORY))
        store.put(embedded, _vectors(5, 3), MODEL)
        assert store.missing(scope, MODEL, limit=16) == []
        store.candidates(scope, MODEL)  # cached
        with storage.transaction():  # many rows in one commit; ids in reverse rowid order
            bare = [f"b{9_999 - n:05d}" for n in range(lacking)]
            for entry_id in bare:
                writer.add(f"bare {entry_id}", entry_id=entry_id)
        newest = sorted(bare, reverse=True)[:16]
        assert [i for i, _ in store.missing(scope, MODEL, limit=16)] == newest
        for _ in range(2):  # with the listing `missing` left, then after a write of its own
            ids, matrix = store.candidates(scope, MODEL)
            fresh_ids, fresh = SqliteVectorStore(storage).candidates(scope, MODEL)
            assert sorted(ids) == sorted(fresh_ids) == sorted(i for i, _ in embedded)
            mapped = {i: matrix[n].tolist() for n, i in enumerate(ids)}
            assert mapped == {i: fresh[n].tolist() for n, i in enumerate(fresh_ids)}
            store.put([(embedded[0][0], embedded[0][1])], _vectors(1, 4), MODEL)
    finally:
        storage.close()
