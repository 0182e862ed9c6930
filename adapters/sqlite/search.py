"""memory_search over SQLite FTS5 (ADR 0005, ADR 0012).

`memories_fts` indexes `text` (unicode61 words) and `grams` (CJK bigrams and words glued to CJK,
see `pi_hermes_memory.domain.search.terms`). A query's words are searched in both columns, its CJK
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

Each tier runs in two passes where that is provably the same answer (ADR 0040, `_Ranker`):
FTS5 ranks its matches alone, and the scope is applied to the best of them read by rowid;
otherwise as one query with the scope in its WHERE. Terms no row holds are left out of tiers
2-3 (they change neither the rows nor bm25); document frequencies and those absences are
cached until the database changes.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from datetime import date
from typing import Any, Final

from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.search.terms import QueryTerms, plan_terms
from pi_hermes_memory.ports.search import ScopeClause, SearchHit, SearchQuery

#: fts5vocab over memories_fts in the temp schema: nothing is written to the database file.
_VOCAB = "temp.pi_hermes_memory_fts_vocab"

_ROW = (
    "m.id, m.target, m.project, m.category, m.text, m.created, m.last_referenced, "
    "m.superseded_by, m.superseded_at, {score} AS score, m.namespace"
)
_COLUMNS = _ROW.format(score="-bm25(memories_fts)")
_SCORE = 9  # the score's place in a row
_ID_CHUNK = 500
#: The first pass of a tier ranks twice the rows wanted divided by the scope's share of
#: the matches, plus this slack; a scope not seen yet is assumed to hold a quarter.
_FIRST_PASS_SLACK: Final = 32
_ASSUMED_SHARE: Final = 0.25
#: Below this many rows the OR tiers run as one query (the scope in its WHERE); the
#: all-terms tier always does.
_SMALL_STORE: Final = 20_000
#: A first pass of at least this many rows updates the scope's share.
_SHARE_SAMPLE: Final = 16
_FIRST_SQL = (
    "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? "
    "ORDER BY bm25(memories_fts) LIMIT ?"
)
#: NOT INDEXED: by rowid only; the planner would rather scan the scope index (every
#: in-scope row, tens of ms at 100k rows) than look up a few dozen rowids
_BY_ROWID_SQL = (
    f"SELECT m.rowid, {_ROW.format(score='NULL')} FROM memories AS m NOT INDEXED "
    "WHERE m.rowid IN ({marks}) AND {where}"
)
_ANY_ROW_SQL = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT 1"
_ONE_PASS_SQL = (
    f"SELECT {_COLUMNS} FROM memories_fts JOIN memories AS m "
    "ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ? AND {where} "
    "ORDER BY score DESC, m.id DESC LIMIT ?"
)


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


def scope_sql(query: SearchQuery, *, mark: str = "?", false: str = "0") -> tuple[str, list[Any]]:
    """The WHERE predicate of `query`'s scope, with its parameters; `mark` is the driver's
    parameter placeholder and `false` its false literal (the PostgreSQL index shares it)."""
    ors: list[str] = []
    params: list[Any] = []
    for clause in query.clauses:
        sql, clause_params = _clause_sql(clause, mark, false)
        ors.append(sql)
        params += clause_params
    # a hand-edited row that failed the content scan never leaves the store (ADR 0022)
    where = [f"({' OR '.join(ors)})", "m.flagged IS NULL"]
    if query.category is not None:
        where.append(f"m.category = {mark}")
        params.append(query.category.value)
    if not query.include_superseded:
        where.append("m.superseded_by IS NULL")
    return " AND ".join(where), params


def _in(
    column: str, values: tuple[str | None, ...], mark: str, false: str
) -> tuple[str, list[Any]]:
    """`column` is one of `values` (None = NULL)."""
    named = [v for v in values if v is not None]
    alternatives = []
    if named:
        alternatives.append(f"{column} IN ({', '.join(mark for _ in named)})")
    if None in values:
        alternatives.append(f"{column} IS NULL")
    return f"({' OR '.join(alternatives) or false})", named


def _clause_sql(clause: ScopeClause, mark: str, false: str) -> tuple[str, list[Any]]:
    parts, params = [f"m.target = {mark}"], [clause.target.value]
    for column, values in (("m.project", clause.projects), ("m.namespace", clause.namespaces)):
        if values is not None:
            sql, more = _in(column, values, mark, false)
            parts.append(sql)
            params += more
    return f"({' AND '.join(parts)})", params


def _day(value: object) -> date:
    return date.fromisoformat(str(value)[:10])


def hit_of(row: Sequence[Any]) -> SearchHit:
    """A hit from a row of `_ROW`'s columns (the PostgreSQL index reads the same)."""
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
        self._counts = _Counts()
        self._ranker = _Ranker()

    def search(self, query: SearchQuery) -> list[SearchHit]:
        terms = plan_terms(query.text)
        if not terms or not query.clauses or query.limit < 1:
            return []
        where, params = scope_sql(query)
        rows: list[Sequence[Any]] = []

        def tier(conn: Any, expression: str, one_pass: bool) -> None:
            seen = {row[0] for row in rows}
            wanted = query.limit - len(seen)
            rows.extend(
                self._ranker.ranked(conn, expression, where, params, wanted, seen, one_pass)
            )

        every, anything = match_all(terms), match_any(terms)
        with self._storage.read() as conn:
            self._counts.check(conn)
            # the all-terms tier matches few rows, and so does any tier of a small store:
            # joining the scope to every match costs less than a second query (measured)
            small = self._counts.size < _SMALL_STORE
            if every and every != anything:
                tier(conn, every, True)
            if len(rows) < query.limit and len(terms) > 1:
                # a term no row holds adds no row and nothing to any row's bm25: left out of
                # the OR tiers, it costs no work per matching row (ADR 0040)
                absent = self._counts.absent(conn, terms)
                anything = match_any(terms, skip=absent)
                uninformative = self._counts.common(conn, terms) | terms.weak | absent
                informative = match_any(terms, skip=uninformative)
                if informative and informative != anything:
                    tier(conn, informative, small)
            if len(rows) < query.limit and anything:
                tier(conn, anything, small)
        return [hit_of(row) for row in rows]

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
                    hit = hit_of(row)
                    if query.admits(
                        hit.target,
                        hit.project,
                        hit.category.value if hit.category else None,
                        hit.superseded_by,
                        hit.namespace,
                    ):
                        found[hit.id] = hit
        return [found[i] for i in wanted if i in found]


class _Ranker:
    """The best in-scope rows of one tier, in two passes where the scope holds enough of the
    matches (ADR 0040).

    First pass: FTS5 ranks its matches alone (no row of `memories` is read) and keeps the
    best `depth`; those are read by rowid and the scope applies to them. The answer is the
    one-pass query's whenever every match was ranked, or the last row taken scores strictly
    above the last row ranked (a row not ranked scores at most that). Otherwise (few of the
    matches in scope, a tie at the cut) the one-pass query runs: the scope in its WHERE,
    every match joined and ranked. The share of ranked rows a scope admitted is remembered
    per scope: it sizes `depth`, and a scope that admits less than `_NARROW` goes straight
    to the one-pass query (tried again with two passes every `_RETRY` searches). The share
    is only a hint: a stale one costs time, never a different answer."""

    _NARROW: Final = 1 / 16
    _RETRY: Final = 32
    _MAX_SCOPES: Final = 256

    def __init__(self) -> None:
        self._share: dict[tuple[str, tuple[Any, ...]], tuple[float, int]] = {}

    def ranked(
        self,
        conn: Any,
        expression: str,
        where: str,
        params: list[Any],
        wanted: int,
        seen: Collection[str],
        one_pass: bool = False,
    ) -> list[Sequence[Any]]:
        """The best `wanted` in-scope rows matching `expression`, leaving out the ids in
        `seen`: by score (-bm25) descending, then id descending. `one_pass`: skip the first
        pass (few matches expected)."""
        if wanted < 1:
            return []
        key = (where, tuple(params))
        share, since = self._share.get(key, (_ASSUMED_SHARE, 0))
        if not one_pass and (share >= self._NARROW or since >= self._RETRY):
            taken = self._two_pass(conn, key, expression, where, params, wanted, seen, share)
            if taken is not None:
                return taken
        elif not one_pass:
            self._share[key] = (share, since + 1)
        more = conn.execute(
            _ONE_PASS_SQL.format(where=where), (expression, *params, wanted + len(seen))
        )
        return [row for row in more if row[0] not in seen][:wanted]

    def _two_pass(
        self,
        conn: Any,
        key: tuple[str, tuple[Any, ...]],
        expression: str,
        where: str,
        params: list[Any],
        wanted: int,
        seen: Collection[str],
        share: float,
    ) -> list[Sequence[Any]] | None:
        depth = math.ceil(2 * (wanted + len(seen)) / max(share, self._NARROW)) + _FIRST_PASS_SLACK
        ranked = conn.execute(_FIRST_SQL, (expression, depth)).fetchall()
        if not ranked:
            return []
        scores = {rowid: -float(bm25) for rowid, bm25 in ranked}
        marks = ", ".join("?" for _ in ranked)
        admitted = [
            (*row[1 : _SCORE + 1], scores[row[0]], *row[_SCORE + 2 :])
            for row in conn.execute(
                _BY_ROWID_SQL.format(marks=marks, where=where), (*scores, *params)
            )
        ]
        if len(ranked) >= _SHARE_SAMPLE:
            if len(self._share) >= self._MAX_SCOPES:
                self._share.clear()
            self._share[key] = (len(admitted) / len(ranked), 0)
        found: list[Sequence[Any]] = [row for row in admitted if row[0] not in seen]
        found.sort(key=lambda row: (row[_SCORE], row[0]), reverse=True)
        taken = found[:wanted]
        if len(ranked) < depth or (len(taken) == wanted and taken[-1][_SCORE] > -ranked[-1][1]):
            return taken
        return None


class _Counts:
    """Document frequencies and the row count, valid while the database is unchanged.

    `PRAGMA data_version` (other connections' commits) and `total_changes()` (this
    connection's writes) together are the change token, as for the candidate matrices
    (`adapters/sqlite/vectors.py`). A search that comes up short of its first tier asks
    whether its terms are common; without this cache each asks `fts5vocab`, which walks
    the term's whole doclist, and counts `memories` (about 1 ms at 100k rows)."""

    _MAX_TERMS: Final = 4096

    def __init__(self) -> None:
        self._token: tuple[int, int] | None = None
        self._total: int | None = None
        #: the largest rowid: the store's size, roughly (rows removed leave gaps)
        self.size = 0
        self._docs: dict[tuple[bool, str], int | None] = {}
        self._matches: dict[str, bool] = {}

    def check(self, conn: Any) -> None:
        """Forget what a write since the last call may have changed."""
        token = change_token(conn)
        if token != self._token or len(self._docs) + len(self._matches) > self._MAX_TERMS:
            self._docs.clear()
            self._matches.clear()
            self._total = None
            self.size = int(conn.execute("SELECT max(rowid) FROM memories").get or 0)
            self._token = token

    def common(self, conn: Any, terms: QueryTerms) -> set[str]:
        if self._total is None:
            self._total = int(conn.execute("SELECT count(*) FROM memories").get or 0)
        return _common_terms(conn, terms, self._total, self._docs)

    def absent(self, conn: Any, terms: QueryTerms) -> set[str]:
        """The terms no row matches, asked of FTS5 itself (one row at most per term), so the
        tokenizer's folding applies as in the search."""
        found = set()
        words = [(w, _word(w, terms)) for w in (*terms.words, *terms.alt_words)]
        grams = [(g, _gram(g)) for g in (*terms.grams, *terms.alt_grams)]
        for term, expression in (*words, *grams):
            matches = self._matches.get(expression)
            if matches is None:
                matches = conn.execute(_ANY_ROW_SQL, (expression,)).get is not None
                self._matches[expression] = matches
            if not matches:
                found.add(term)
        return found


def change_token(conn: Any) -> tuple[int, int]:
    """Changes whenever any connection committed a change to the file (inside a read txn)."""
    return int(conn.execute("PRAGMA data_version").get), int(conn.total_changes())


def _common_terms(
    conn: Any, terms: QueryTerms, total: int, docs_of: dict[tuple[bool, str], int | None]
) -> set[str]:
    """Terms found in at least half of all rows (bm25 gives them no weight).

    Looked up by exact token; a term the tokenizer would fold differently (diacritics) or a
    one-character CJK prefix term is never counted as common (it stays in every tier). A
    question's prefix word counts the rows its prefix matches. Weak terms are not looked up.
    `total`: the rows of `memories`; `docs_of`: the counts already looked up, by (searched by
    prefix, term), filled in here.
    """
    candidates = [t for t in (*terms.words, *terms.alt_words, *terms.grams, *terms.alt_grams)]
    common = set()
    vocab = False
    for term in candidates:
        if term in terms.weak or (len(term) == 1 and term in terms.grams + terms.alt_grams):
            continue  # weak anyway, or a CJK prefix query: no single document frequency
        key = terms.prefix(term) if term in terms.words + terms.alt_words else None
        lookup = (key is not None, key or term)
        if lookup in docs_of:
            cached = docs_of[lookup]
            if cached is not None and 2 * cached >= total:
                common.add(term)
            continue
        if not vocab:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} "
                "USING fts5vocab(main, memories_fts, 'row')"
            )
            vocab = True
        if key is not None:  # an ASCII-letter prefix: bound by the sum over its tokens first
            end = key[:-1] + chr(ord(key[-1]) + 1)
            bound = conn.execute(
                f"SELECT sum(doc) FROM {_VOCAB} WHERE term >= ? AND term < ?", (key, end)
            ).get
            docs: Any = bound
            if bound is not None and 2 * int(bound) >= total:
                docs = conn.execute(
                    "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                    (_word(term, terms),),
                ).get
            docs_of[True, key] = None if docs is None else int(docs)
        else:
            docs = conn.execute(f"SELECT doc FROM {_VOCAB} WHERE term = ?", (term,)).get
            docs_of[False, term] = None if docs is None else int(docs)
        if docs is not None and 2 * int(docs) >= total:
            common.add(term)
    return common
