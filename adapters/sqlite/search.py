"""memory_search over SQLite FTS5 (ADR 0005, ADR 0012).

`memories_fts` indexes `text` (unicode61 words) and `grams` (CJK bigrams and words glued to CJK,
see `pi_hermes_memory.domain.terms`). A query's words are searched in both columns, its CJK
bigrams in `grams` (a lone CJK character as a prefix, so it also finds the bigrams it starts).
Every term is a double-quoted FTS5 string, and terms only ever hold letters, digits and marks,
so nothing a user types can become FTS5 syntax or SQL.

A question (ADR 0016) searches its words by prefix where `QueryTerms.prefix` says so
(`{text grams} : "paint"*`) and leaves its weak function words out of tiers 1-2.

Up to three tiers, in one read snapshot, each ranked by bm25, until the limit is filled:
1. rows matching every required term (AND; a question's function words are not required);
2. rows matching any *informative* term: not a question's function word, and not a term found
   in at least half of all rows, which has no weight in bm25 (FTS5 clamps its idf), so "the"
   or "的" alone does not make a row a hit yet;
3. rows matching any term at all.
Tier 3 differs from tier 2 only when the query has a common or weak term, and runs only when
tiers 1-2 did not fill the limit; document frequencies come from an `fts5vocab` table in the
connection's temp schema (a question's prefix word: the sum over the tokens it starts bounds
it, and only a bound of half the rows or more is counted exactly) and are looked up only when
tier 1 came up short. The scope predicate
(target/project clauses, category, active rows) is in the SQL WHERE of every tier, so it
applies before LIMIT. Score = -bm25 (> 0, higher is better); ties: larger id first (ids are
time-ordered ULIDs: the newest first).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import date
from typing import Any

from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.model import FailureCategory, Target
from pi_hermes_memory.domain.terms import QueryTerms, plan_terms
from pi_hermes_memory.search import ScopeClause, SearchHit, SearchQuery

#: fts5vocab over memories_fts in the temp schema: nothing is written to the database file.
_VOCAB = "temp.pi_hermes_memory_fts_vocab"

_ROW = (
    "m.id, m.target, m.project, m.category, m.text, m.created, m.last_referenced, "
    "m.superseded_by, m.superseded_at, {score} AS score, m.namespace"
)
_COLUMNS = _ROW.format(score="-bm25(memories_fts)")
_ID_CHUNK = 500


def quote(term: str) -> str:
    """An FTS5 string literal: double quotes, inner double quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def _word(term: str, terms: QueryTerms) -> str:
    key = terms.prefix(term)
    return "{text grams} : " + (quote(term) if key is None else quote(key) + "*")


def _gram(term: str) -> str:
    # a lone CJK character (a unigram) also matches the bigrams it starts
    return "grams : " + quote(term) + ("*" if len(term) == 1 else "")


def _distinct(parts: list[str]) -> list[str]:
    return list(dict.fromkeys(parts))  # two words with one prefix: one expression


def match_all(terms: QueryTerms) -> str:
    """Rows matching every required term ("" when there is none)."""
    required = set(terms.required)
    parts = [_word(w, terms) for w in terms.words if w in required]
    parts += [_gram(g) for g in terms.grams if g in required]
    return " AND ".join(_distinct(parts))


def match_any(terms: QueryTerms, skip: Collection[str] = ()) -> str:
    """Rows matching at least one term (primary or alternative spelling) not in `skip`."""
    parts = [_word(w, terms) for w in (*terms.words, *terms.alt_words) if w not in skip]
    parts += [_gram(g) for g in (*terms.grams, *terms.alt_grams) if g not in skip]
    return " OR ".join(_distinct(parts))


def scope_sql(query: SearchQuery) -> tuple[str, list[Any]]:
    """The WHERE predicate of `query`'s scope, with its parameters."""
    ors: list[str] = []
    params: list[Any] = []
    for clause in query.clauses:
        sql, clause_params = _clause_sql(clause)
        ors.append(sql)
        params += clause_params
    # a hand-edited row that failed the content scan never leaves the store (ADR 0022)
    where = [f"({' OR '.join(ors)})", "m.flagged IS NULL"]
    if query.category is not None:
        where.append("m.category = ?")
        params.append(query.category.value)
    if not query.include_superseded:
        where.append("m.superseded_by IS NULL")
    return " AND ".join(where), params


def _in(column: str, values: tuple[str | None, ...]) -> tuple[str, list[Any]]:
    """`column` is one of `values` (None = NULL)."""
    named = [v for v in values if v is not None]
    alternatives = []
    if named:
        alternatives.append(f"{column} IN ({', '.join('?' for _ in named)})")
    if None in values:
        alternatives.append(f"{column} IS NULL")
    return f"({' OR '.join(alternatives) or '0'})", named


def _clause_sql(clause: ScopeClause) -> tuple[str, list[Any]]:
    parts, params = ["m.target = ?"], [clause.target.value]
    for column, values in (("m.project", clause.projects), ("m.namespace", clause.namespaces)):
        if values is not None:
            sql, more = _in(column, values)
            parts.append(sql)
            params += more
    return f"({' AND '.join(parts)})", params


def _day(value: object) -> date:
    return date.fromisoformat(str(value)[:10])


def _hit(row: Sequence[Any]) -> SearchHit:
    id_, target, project, category, text, created, last, by, at, score, namespace = row
    return SearchHit(
        id=str(id_),
        target=Target(target),
        project=project,
        category=FailureCategory(category) if category else None,
        text=str(text),
        created=_day(created),
        last_referenced=_day(last),
        superseded_by=by,
        superseded_at=_day(at) if at else None,
        score=float(score),
        namespace=namespace,
    )


class SqliteSearchIndex:
    """The `SearchIndex` port over `memories` + `memories_fts` of a `SqliteStorage`."""

    def __init__(self, storage: SqliteStorage) -> None:
        self._storage = storage

    def search(self, query: SearchQuery) -> list[SearchHit]:
        terms = plan_terms(query.text)
        if not terms or not query.clauses or query.limit < 1:
            return []
        where, params = scope_sql(query)
        sql = (
            f"SELECT {_COLUMNS} FROM memories_fts JOIN memories AS m "
            f"ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ? AND {where} "
            "ORDER BY score DESC, m.id DESC LIMIT ?"
        )
        rows: list[Sequence[Any]] = []

        def tier(conn: Any, expression: str) -> None:
            seen = {row[0] for row in rows}
            more = conn.execute(sql, (expression, *params, query.limit + len(seen)))
            rows.extend([row for row in more if row[0] not in seen][: query.limit - len(seen)])

        every, anything = match_all(terms), match_any(terms)
        with self._storage.read() as conn:
            if every and every != anything:
                tier(conn, every)
            if len(rows) < query.limit and len(terms) > 1:
                uninformative = _common_terms(conn, terms) | terms.weak
                informative = match_any(terms, skip=uninformative)
                if informative and informative != anything:
                    tier(conn, informative)
            if len(rows) < query.limit:
                tier(conn, anything)
        return [_hit(row) for row in rows]

    def rows(self, ids: Iterable[str], query: SearchQuery) -> list[SearchHit]:
        wanted = list(dict.fromkeys(ids))
        if not wanted or not query.clauses:
            return []
        found: dict[str, SearchHit] = {}
        with self._storage.read() as conn:
            for start in range(0, len(wanted), _ID_CHUNK):
                chunk = wanted[start : start + _ID_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                # looked up by the id index only: with the scope predicate in SQL the planner
                # prefers the scope index and scans every in-scope row (38 ms at 100k rows);
                # the scope is applied to the few rows found, with the same predicate
                sql = (
                    f"SELECT {_ROW.format(score='0.0')} FROM memories AS m WHERE m.id IN ({marks})"
                )
                for row in conn.execute(sql, chunk):
                    hit = _hit(row)
                    if query.admits(
                        hit.target,
                        hit.project,
                        hit.category.value if hit.category else None,
                        hit.superseded_by,
                        hit.namespace,
                    ):
                        found[hit.id] = hit
        return [found[i] for i in wanted if i in found]


def _common_terms(conn: Any, terms: QueryTerms) -> set[str]:
    """Terms found in at least half of all rows (bm25 gives them no weight).

    Looked up by exact token; a term the tokenizer would fold differently (diacritics) or a
    one-character CJK prefix term is never counted as common (it stays in every tier). A
    question's prefix word counts the rows its prefix matches. Weak terms are not looked up.
    """
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} USING fts5vocab(main, memories_fts, 'row')"
    )
    total = conn.execute("SELECT count(*) FROM memories").get
    candidates = [t for t in (*terms.words, *terms.alt_words, *terms.grams, *terms.alt_grams)]
    common = set()
    for term in candidates:
        if term in terms.weak or (len(term) == 1 and term in terms.grams + terms.alt_grams):
            continue  # weak anyway, or a CJK prefix query: no single document frequency
        key = terms.prefix(term) if term in terms.words + terms.alt_words else None
        if key is not None:  # an ASCII-letter prefix: bound by the sum over its tokens first
            end = key[:-1] + chr(ord(key[-1]) + 1)
            bound = conn.execute(
                f"SELECT sum(doc) FROM {_VOCAB} WHERE term >= ? AND term < ?", (key, end)
            ).get
            docs = bound
            if bound is not None and 2 * int(bound) >= int(total or 0):
                docs = conn.execute(
                    "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                    (_word(term, terms),),
                ).get
        else:
            docs = conn.execute(f"SELECT doc FROM {_VOCAB} WHERE term = ?", (term,)).get
        if docs is not None and 2 * int(docs) >= int(total or 0):
            common.add(term)
    return common
