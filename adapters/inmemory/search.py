"""memory_search over the in-memory read model (`InMemoryStorage`), for tests and embedding.

Same contract as the SQLite FTS5 index (`SearchIndexContract`): the same query terms
(`pi_hermes_memory.domain.search.terms`, including a question's prefix words and weak function
words,
ADR 0016), the same scope predicate and the same tiers (rows matching every required term,
then rows matching an informative term, then the rest). The scoring is
simpler than bm25: the number of distinct terms a row matches, plus a small bonus for shorter
rows. Words are compared case- and diacritic-insensitively, like unicode61 with
remove_diacritics.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import date

from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.search.similarity import is_cjk
from pi_hermes_memory.domain.search.terms import QueryTerms, bigrams, plan_terms, split_pieces
from pi_hermes_memory.ports.search import SearchHit, SearchQuery

_EPOCH = date(1970, 1, 1)


def fold(word: str) -> str:
    """Lower case without diacritics (what unicode61 remove_diacritics does, roughly)."""
    decomposed = unicodedata.normalize("NFD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


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


def _word_matches(word: str, terms: QueryTerms, words: frozenset[str]) -> bool:
    key = terms.prefix(word)
    if key is None:
        return fold(word) in words
    return any(w.startswith(key) for w in words)  # a question's prefix word (ADR 0016)


def _gram_matches(gram: str, grams: frozenset[str]) -> bool:
    if len(gram) == 1:  # a lone character also matches the bigrams it starts (FTS5 prefix)
        return any(g.startswith(gram) for g in grams)
    return gram in grams


def _day(value: object) -> date:
    return value if isinstance(value, date) else _EPOCH


class InMemorySearchIndex:
    """The `SearchIndex` port over `InMemoryStorage.rows` (the committed state)."""

    def __init__(self, storage: InMemoryStorage) -> None:
        self._storage = storage

    def search(self, query: SearchQuery) -> list[SearchHit]:
        terms = plan_terms(query.text)
        if not terms or not query.clauses or query.limit < 1:
            return []
        rows = list(self._storage.rows.items())
        required = set(terms.required)
        every = [*terms.words, *terms.alt_words, *terms.grams, *terms.alt_grams]
        matches = [(entry_id, row, _matched(row, terms)) for entry_id, row in rows]
        docs = {t: sum(1 for _, _, m in matches if t in m) for t in every}
        # like the SQLite index: a term in at least half of all rows is common (no bm25
        # weight); one-character prefix terms and words with diacritics are never counted
        common = terms.weak | {
            t
            for t in every
            if 2 * docs[t] >= len(rows)
            and not (len(t) == 1 and is_cjk(t))
            and (t not in (*terms.words, *terms.alt_words) or fold(t) == t)
        }
        found: list[tuple[int, float, SearchHit]] = []
        for entry_id, row, matched in matches:
            if not matched or not _admits(query, row):
                continue
            if required <= matched:
                tier = 0
            elif matched - common:
                tier = 1
            else:
                tier = 2
            row_words, row_grams = row_keys(str(row["text"]))
            score = len(matched) + 1.0 / (1 + len(row_words) + len(row_grams))
            found.append((tier, score, _hit(entry_id, row, score)))
        found.sort(key=lambda f: f[2].id, reverse=True)
        found.sort(key=lambda f: (f[0], -f[1]))
        return [hit for _, _, hit in found[: query.limit]]

    def rows(self, ids: Iterable[str], query: SearchQuery) -> list[SearchHit]:
        rows = self._storage.rows
        return [
            _hit(entry_id, rows[entry_id], 0.0)
            for entry_id in dict.fromkeys(ids)
            if entry_id in rows and _admits(query, rows[entry_id])
        ]


def _matched(row: Mapping[str, object], terms: QueryTerms) -> set[str]:
    """The query terms (as spelled in `terms`) that `row` matches."""
    row_words, row_grams = row_keys(str(row["text"]))
    matched = {w for w in (*terms.words, *terms.alt_words) if _word_matches(w, terms, row_words)}
    matched |= {g for g in (*terms.grams, *terms.alt_grams) if _gram_matches(g, row_grams)}
    return matched


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
