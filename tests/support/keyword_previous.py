"""`SqliteSearchIndex.search` as ADR 0081 left it, over the index's internals: the reference
of the equivalence property test (`tests/integration/test_keyword_search_overhead.py`) and
the bench's "old" column (`tests/bench/run.py::bench_search`). Moved out of the adapter by
ADR 0102: code kept only for comparison does not belong in production."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pi_hermes_memory.adapters.sqlite.search import (
    _BY_ROWID_SQL,
    _FAST_CANDIDATES_SQL,
    _FAST_NEWEST_SQL,
    _SCORE,
    SqliteSearchIndex,
    _all_of,
    _any_of,
    _scope,
    hit_of,
)
from pi_hermes_memory.domain.search.relevance import (
    COMMON_POOL,
    Candidate,
    Key,
    Weights,
    query_keys,
    ranked_rows,
    resolve_keys,
    shown_score,
)
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.ports.search import SearchHit, SearchQuery

__all__ = ["search_previous"]


def search_previous(index: SqliteSearchIndex, query: SearchQuery) -> list[SearchHit]:
    """The search of `index` as ADR 0081 left it, with `index`'s storage and counts cache."""
    planned = query_keys(plan_terms(query.text))
    if not planned or not query.clauses or query.limit < 1:
        return []
    where, params = _scope(query.clauses, query.category, query.include_superseded)
    counts = index._counts
    with index._storage.read() as conn:
        counts.check(conn)
        keys, docs = resolve_keys(planned, lambda k: counts.docs(conn, k))
        total = counts.total(conn)
        weights = Weights.of(keys, docs, total, counts.average_length(conn))

        # the driver's rows are the candidates themselves: (id, text, rowid), both
        # TEXT columns NOT NULL, so no per-row conversion (ADR 0081)
        def rare_rows(rare: Sequence[Key]) -> Iterable[Candidate]:
            sql = _FAST_CANDIDATES_SQL.format(where=where)
            found: Iterable[Candidate] = conn.execute(sql, (_any_of(rare), *params))
            return found

        def common_rows(common: Sequence[Key], every: bool) -> Iterable[Candidate]:
            sql = _FAST_NEWEST_SQL.format(where=where)
            expression = _all_of(common) if every else _any_of(common)
            found: Iterable[Candidate] = conn.execute(sql, (expression, *params, COMMON_POOL))
            return found

        ranked = ranked_rows(weights, docs, query.floor, query.limit, rare_rows, common_rows)
        if not ranked:
            return []
        rowids = [rowid for _, _, rowid in ranked]
        sql = _BY_ROWID_SQL.format(marks=", ".join("?" for _ in rowids))
        full = {row[0]: row[1:] for row in conn.execute(sql, rowids)}
    return [
        hit_of((*full[rowid][:_SCORE], shown_score(raw), *full[rowid][_SCORE + 1 :]))
        for raw, _, rowid in ranked
    ]
