"""memory_search over the in-memory read model (`InMemoryStorage`), for tests and embedding.

Same contract as the SQLite FTS5 index (`SearchIndexContract`) and the same ranking: the
query's meaningful keys (`domain.search.relevance.query_keys`: no stop terms, English words
by their stem as a prefix), document frequencies counted up to `COMMON_CAP`, the average
length over the newest `LENGTH_SAMPLE` rows, the shared keyword relevance (ADR 0068) and
candidate rule (`ranked_rows`: every in-scope row holding a rare key, the newest
`COMMON_POOL` holding only common ones when they can matter), the query's floor, best first,
ties: the larger id. Rows are in insertion order, as SQLite's rowids. Words
are compared case- and diacritic-insensitively, like unicode61 with remove_diacritics.

"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.search.relevance import (
    COMMON_CAP,
    COMMON_POOL,
    LENGTH_SAMPLE,
    Candidate,
    Key,
    Weights,
    average_length,
    matches,
    query_keys,
    ranked_rows,
    resolve_keys,
    shown_score,
)
from pi_hermes_memory.domain.search.terms import bigrams, fold, plan_terms, split_pieces
from pi_hermes_memory.ports.search import SearchHit, SearchQuery

_EPOCH = date(1970, 1, 1)


@functools.lru_cache(maxsize=65_536)
def row_keys(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(folded words, CJK grams) of a stored text."""
    words: set[str] = set()
    grams: set[str] = set()
    for kind, run in split_pieces(text):
        if kind == "word":
            words.add(fold(run))
        elif kind == "cjk":
            grams.update(bigrams(run))
    return frozenset(words), frozenset(grams)


def _day(value: object) -> date:
    return value if isinstance(value, date) else _EPOCH


class InMemorySearchIndex:
    """The `SearchIndex` port over `InMemoryStorage.rows` (the committed state)."""

    def __init__(self, storage: InMemoryStorage) -> None:
        self._storage = storage

    def search(self, query: SearchQuery) -> list[SearchHit]:
        keys = query_keys(plan_terms(query.text))
        if not keys or not query.clauses or query.limit < 1:
            return []
        held: list[Candidate] = [
            (entry_id, str(row["text"]), row) for entry_id, row in self._storage.rows.items()
        ]

        def count(key: Key) -> int:
            found = 0
            for _, text, _ in held:
                if matches(key, text):
                    found += 1
                    if found >= COMMON_CAP:
                        break
            return found

        chosen, docs = resolve_keys(keys, count)
        weights = Weights.of(
            chosen, docs, len(held), average_length(text for _, text, _ in held[-LENGTH_SAMPLE:])
        )
        in_scope = [c for c in held if _admits(query, c[2])]  # type: ignore[arg-type]

        def rare_rows(rare: Sequence[Key]) -> list[Candidate]:
            return [c for c in in_scope if any(matches(k, c[1]) for k in rare)]

        def common_rows(common: Sequence[Key], every: bool) -> list[Candidate]:
            test = all if every else any
            found = [c for c in reversed(in_scope) if test(matches(k, c[1]) for k in common)]
            return found[:COMMON_POOL]  # the newest, as the SQLite index reads them

        ranked = ranked_rows(weights, docs, query.floor, query.limit, rare_rows, common_rows)
        return [
            _hit(entry_id, row, shown_score(raw))  # type: ignore[arg-type]
            for raw, entry_id, row in ranked
        ]

    def rows(self, ids: Iterable[str], query: SearchQuery) -> list[SearchHit]:
        rows = self._storage.rows
        return [
            _hit(entry_id, rows[entry_id], 0.0)
            for entry_id in dict.fromkeys(ids)
            if entry_id in rows and _admits(query, rows[entry_id])
        ]


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _admits(query: SearchQuery, row: Mapping[str, object]) -> bool:
    if row.get("flagged") is not None:  # failed the content scan: never searched (ADR 0022)
        return False
    return query.admits(
        Target(str(row["target"])),
        _str(row.get("project")),
        _str(row.get("category")),
        _str(row.get("superseded_by")),
        _str(row.get("namespace")),
    )


def _hit(entry_id: str, row: Mapping[str, object], score: float) -> SearchHit:
    category = _str(row.get("category"))
    superseded_at = row.get("superseded_at")
    return SearchHit(
        id=entry_id,
        target=Target(str(row["target"])),
        project=_str(row.get("project")),
        category=FailureCategory(category) if category else None,
        text=str(row["text"]),
        created=_day(row.get("created")),
        last_referenced=_day(row.get("last_referenced")),
        superseded_by=_str(row.get("superseded_by")),
        superseded_at=superseded_at if isinstance(superseded_at, date) else None,
        score=score,
        namespace=_str(row.get("namespace")),
    )
