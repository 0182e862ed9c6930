"""memory_search over PostgreSQL (issue 16, ADR 0050).

The same terms (`pi_hermes_memory.domain.search.terms`: words, a question's prefix words and weak
function words, CJK bigrams, a lone CJK character as a prefix) and the same tiers as the
SQLite and in-memory indexes: rows matching every required term first, then rows matching an
informative term (not weak, not in at least half of all rows), then the rest. The score is
the in-memory index's (distinct terms matched, plus a small bonus for shorter rows), so a
PostgreSQL store ranks exactly like the in-memory one; ties: the larger id first.

Each row's `keys` tsvector holds its folded words and CJK bigrams (adapters/postgres/keys.py);
each query term is one quoted tsquery operand passed as a parameter, so nothing a user types
becomes SQL or query syntax. The scope predicate is the SQLite index's (`scope_sql`), in the
WHERE of every query, so it applies before the LIMIT. Document frequencies (for "common") are
counted only when the first tier did not fill the limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pi_hermes_memory.adapters.postgres.keys import fold, lexeme
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.search import hit_of, scope_sql
from pi_hermes_memory.domain.search.similarity import is_cjk
from pi_hermes_memory.domain.search.terms import QueryTerms, plan_terms
from pi_hermes_memory.ports.search import SearchHit, SearchQuery

_ROW = (
    "m.id, m.target, m.project, m.category, m.text, m.created, m.last_referenced, "
    "m.superseded_by, m.superseded_at, {score} AS score, m.namespace"
)


def pg_scope(query: SearchQuery) -> tuple[str, list[Any]]:
    return scope_sql(query, mark="%s", false="FALSE")


class _Plan:
    """A query's terms as tsquery operands."""

    def __init__(self, terms: QueryTerms) -> None:
        self.terms = terms
        self.words = [*terms.words, *terms.alt_words]
        self.every = list(dict.fromkeys([*self.words, *terms.grams, *terms.alt_grams]))
        self.operand = {t: self._operand(t) for t in self.every}

    def _operand(self, term: str) -> str:
        if term in self.words:
            key = self.terms.prefix(term)
            return lexeme(fold(term)) if key is None else lexeme(key, prefix=True)
        return lexeme(term, prefix=len(term) == 1)  # a lone CJK character: a prefix

    def joined(self, terms: Iterable[str], op: str) -> str:
        return f" {op} ".join(f"({self.operand[t]})" for t in dict.fromkeys(terms))

    def score_sql(self) -> tuple[str, list[Any]]:
        matched = " + ".join("(m.keys @@ %s::tsquery)::int" for _ in self.every)
        return f"({matched}) + 1.0::float8 / (1 + m.nkeys)", [self.operand[t] for t in self.every]


class PgSearchIndex:
    """The `SearchIndex` port over the `memories` table of a `PgStorage`."""

    def __init__(self, storage: PgStorage) -> None:
        self._storage = storage

    def search(self, query: SearchQuery) -> list[SearchHit]:
        terms = plan_terms(query.text)
        if not terms or not query.clauses or query.limit < 1:
            return []
        plan = _Plan(terms)
        required = [t for t in plan.every if t in set(terms.required)]
        where, params = pg_scope(query)
        score, score_params = plan.score_sql()
        columns = _ROW.format(score=score)
        with self._storage.read() as conn:
            match = plan.joined(required, "&") if required else plan.joined(plan.every, "|")
            first = conn.execute(
                f"SELECT {columns} FROM memories AS m WHERE m.keys @@ %s::tsquery AND {where} "
                "ORDER BY score DESC, m.id DESC LIMIT %s",
                (*score_params, match, *params, query.limit),
            ).fetchall()
            if len(first) >= query.limit or not required:
                return [hit_of(row) for row in first]
            common = self._common(conn, plan)
            informative = [t for t in plan.every if t not in common]
            tier = "CASE WHEN m.keys @@ %s::tsquery THEN 0 "
            tier_params: list[Any] = [plan.joined(required, "&")]
            if informative:
                tier += "WHEN m.keys @@ %s::tsquery THEN 1 "
                tier_params.append(plan.joined(informative, "|"))
            rows = conn.execute(
                f"SELECT {columns}, {tier} ELSE 2 END AS tier FROM memories AS m "
                f"WHERE m.keys @@ %s::tsquery AND {where} "
                "ORDER BY tier, score DESC, m.id DESC LIMIT %s",
                (
                    *score_params,
                    *tier_params,
                    plan.joined(plan.every, "|"),
                    *params,
                    query.limit,
                ),
            ).fetchall()
        return [hit_of(row[:-1]) for row in rows]

    def _common(self, conn: Any, plan: _Plan) -> set[str]:
        """The weak terms and those in at least half of all rows (as the in-memory index:
        one-character CJK prefixes and words with diacritics are never counted)."""
        counted = [
            t
            for t in plan.every
            if not (len(t) == 1 and is_cjk(t)) and (t not in plan.words or fold(t) == t)
        ]
        row = conn.execute("SELECT count(*) FROM memories").fetchone()
        total = int(row[0]) if row else 0
        half = (total + 1) // 2  # common: 2 * docs >= total
        common = set(plan.terms.weak)
        for term in counted:  # counted on the GIN index, never past `half`
            found = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memories WHERE keys @@ %s::tsquery "
                "LIMIT %s) AS hits",
                (plan.operand[term], half),
            ).fetchone()
            if found is not None and 2 * int(found[0]) >= total:
                common.add(term)
        return common

    def rows(self, ids: Iterable[str], query: SearchQuery) -> list[SearchHit]:
        wanted = list(dict.fromkeys(ids))
        if not wanted or not query.clauses:
            return []
        where, params = pg_scope(query)
        with self._storage.read() as conn:
            found = {
                str(row[0]): hit_of(row)
                for row in conn.execute(
                    f"SELECT {_ROW.format(score='0.0')} FROM memories AS m "
                    f"WHERE m.id = ANY(%s) AND {where}",
                    (wanted, *params),
                ).fetchall()
            }
        return [found[i] for i in wanted if i in found]
