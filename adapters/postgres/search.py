"""memory_search over PostgreSQL (issue 16, ADR 0050, ADR 0068).

The same keys and the same ranking as the SQLite and in-memory indexes: the query's
meaningful keys (`domain.search.relevance.query_keys`: no stop terms, English words by their
stem as a prefix unless the whole word is common), document frequencies counted up to
`COMMON_CAP` on the GIN index (`SELECT count(*) FROM (SELECT 1 … LIMIT cap)`), the shared
candidate rule and keyword relevance (`ranked_rows`), so a PostgreSQL store ranks and scores
exactly like the in-memory one. The average length is taken over the newest `LENGTH_SAMPLE`
rows by id (ids are time-ordered).

Each row's `keys` tsvector holds its folded words and CJK bigrams (adapters/postgres/keys.py);
each query key is one quoted tsquery operand passed as a parameter, so nothing a user types
becomes SQL or query syntax. The scope predicate is the SQLite index's (`scope_sql`), in the
WHERE of every query, so it applies before any LIMIT.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pi_hermes_memory.adapters.postgres.keys import lexeme
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.search import hit_of, scope_sql
from pi_hermes_memory.domain.search.relevance import (
    COMMON_CAP,
    COMMON_POOL,
    LENGTH_SAMPLE,
    Candidate,
    Key,
    Weights,
    average_length,
    query_keys,
    ranked_rows,
    resolve_keys,
    shown_score,
)
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.ports.search import SearchHit, SearchQuery

_ROW = (
    "m.id, m.target, m.project, m.category, m.text, m.created, m.last_referenced, "
    "m.superseded_by, m.superseded_at, {score} AS score, m.namespace"
)
_SCORE = 9  # the score's place in a row


def pg_scope(query: SearchQuery) -> tuple[str, list[Any]]:
    return scope_sql(query, mark="%s", false="FALSE")


def operand(key: Key) -> str:
    """The tsquery operand of one key (a prefix key: `:*`)."""
    return lexeme(key.text, prefix=key.prefix)


def _joined(keys: Sequence[Key], op: str) -> str:
    return f" {op} ".join(f"({operand(k)})" for k in keys)


_CANDIDATES = "SELECT m.id, m.text FROM memories AS m WHERE m.keys @@ %s::tsquery AND {where}"


class PgSearchIndex:
    """The `SearchIndex` port over the `memories` table of a `PgStorage`."""

    def __init__(self, storage: PgStorage) -> None:
        self._storage = storage

    def search(self, query: SearchQuery) -> list[SearchHit]:
        keys = query_keys(plan_terms(query.text))
        if not keys or not query.clauses or query.limit < 1:
            return []
        where, params = pg_scope(query)
        with self._storage.read() as conn:
            row = conn.execute("SELECT count(*) FROM memories").fetchone()
            total = int(row[0]) if row else 0

            def count(key: Key) -> int:  # on the GIN index, never past the cap
                found = conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memories WHERE keys @@ %s::tsquery "
                    "LIMIT %s) AS hits",
                    (operand(key), COMMON_CAP),
                ).fetchone()
                return int(found[0]) if found else 0

            chosen, docs = resolve_keys(keys, count)
            newest = conn.execute(
                "SELECT text FROM memories ORDER BY id DESC LIMIT %s", (LENGTH_SAMPLE,)
            ).fetchall()
            weights = Weights.of(chosen, docs, total, average_length(str(t) for (t,) in newest))

            def rare_rows(rare: Sequence[Key]) -> list[Candidate]:
                found = conn.execute(
                    _CANDIDATES.format(where=where), (_joined(rare, "|"), *params)
                ).fetchall()
                return [(str(i), str(t), None) for i, t in found]

            def common_rows(common: Sequence[Key], every: bool) -> list[Candidate]:
                found = conn.execute(
                    _CANDIDATES.format(where=where) + " ORDER BY m.id DESC LIMIT %s",
                    (_joined(common, "&" if every else "|"), *params, COMMON_POOL),
                ).fetchall()
                return [(str(i), str(t), None) for i, t in found]

            ranked = ranked_rows(weights, docs, query.floor, query.limit, rare_rows, common_rows)
            if not ranked:
                return []
            ids = [id_ for _, id_, _ in ranked]
            full = {
                str(row[0]): row
                for row in conn.execute(
                    f"SELECT {_ROW.format(score='0.0')} FROM memories AS m WHERE m.id = ANY(%s)",
                    (ids,),
                ).fetchall()
            }
        return [
            hit_of((*full[id_][:_SCORE], shown_score(raw), *full[id_][_SCORE + 1 :]))
            for raw, id_, _ in ranked
        ]

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
