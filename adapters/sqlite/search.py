"""memory_search over SQLite FTS5 (ADR 0005, ADR 0012, ADR 0068).

`memories_fts` indexes `text` (unicode61 words) and `grams` (CJK bigrams and words glued to CJK,
see `pi_hermes_memory.domain.search.terms`). A query's words are searched in both columns, its CJK
bigrams in `grams` (a lone CJK character as a prefix, so it also finds the bigrams it starts).
Every term is a double-quoted FTS5 string, and terms only ever hold letters, digits and marks,
so nothing a user types can become FTS5 syntax or SQL.

What a search does (issue 27, ADR 0068), in one read snapshot:
1. the query's meaningful keys (`domain.search.relevance.query_keys`): stop terms of every
   covered language never match; an English word is looked up by its stem as a prefix
   (`deployment` → `"deploy"*`), unless the word as written is already common
   (`resolve_keys`: FTS5 reads a prefix's merged doclist whole);
2. each key's document frequency, counted only up to `COMMON_CAP` rows
   (`SELECT count(*) FROM (SELECT 1 … MATCH ? LIMIT cap)`), cached until the database
   changes (`_Counts`): a key under the cap is *rare*, at the cap *common*;
3. the candidates: every in-scope row matching a rare key (at most `COMMON_CAP` rows per rare
   key, however large the store: the scope is in the SQL WHERE, no LIMIT), each scored in
   Python by the shared keyword relevance (`relevance`), common keys included;
4. rows matching only common keys can score at most `Weights.bound(common)` (MaxScore): they
   are looked at only when that bound reaches the floor and the rare pass did not already
   fill the limit with better rows; then the newest `COMMON_CAP` in-scope rows matching all
   common keys (and, if still short, any of them) are scored too. When the bound is below
   the floor or below the limit-th score, the answer equals scoring every row of the store;
5. hits below the floor (`SearchQuery.floor`) are dropped; best first by raw relevance,
   ties: the larger id (ids are time-ordered ULIDs: the newest first); the hit's score is the
   relevance clipped to [0, 1].

No bm25() is evaluated: FTS5's bm25 walks the whole doclist of every phrase of the query,
which is what made a common word cost in proportion to the rows holding it.

Python around the SQL (ADR 0081): each candidate is scored once by one scorer per search
(`Weights.scorer`: a prefix key is a bisection of the row's sorted tokens), the driver's rows
are the candidates as they come, and the scope's SQL, the stems and stop-word answers are
memoised. `search_reference` keeps the plan before it for the equivalence property tests.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import date
from typing import Any, Final

from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
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
    ranked_rows_reference,
    resolve_keys,
    shown_score,
)
from pi_hermes_memory.domain.search.terms import QueryTerms, plan_terms
from pi_hermes_memory.ports.search import ScopeClause, SearchHit, SearchQuery

_ROW = (
    "m.id, m.target, m.project, m.category, m.text, m.created, m.last_referenced, "
    "m.superseded_by, m.superseded_at, {score} AS score, m.namespace, m.memory_id, m.version_no"
)
_ID_CHUNK = 500
_SCORE = 9  # the score's place in a row
_CANDIDATES_SQL = (
    "SELECT m.rowid, m.id, m.text FROM memories_fts JOIN memories AS m "
    "ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ? AND {where}"
)
#: the newest in-scope rows matching common keys only, a bounded number of them
_NEWEST_SQL = _CANDIDATES_SQL + " ORDER BY memories_fts.rowid DESC LIMIT ?"
#: the same as the `Candidate` tuple a ranking takes: (id, text, rowid) (ADR 0081)
_FAST_CANDIDATES_SQL = (
    "SELECT m.id, m.text, m.rowid FROM memories_fts JOIN memories AS m "
    "ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ? AND {where}"
)
_FAST_NEWEST_SQL = _FAST_CANDIDATES_SQL + " ORDER BY memories_fts.rowid DESC LIMIT ?"
#: NOT INDEXED: by rowid only (the planner would rather scan the scope index)
_BY_ROWID_SQL = (
    f"SELECT m.rowid, {_ROW.format(score='0.0')} FROM memories AS m NOT INDEXED "
    "WHERE m.rowid IN ({marks})"
)
#: a key's rows up to the cap, and the largest rowid among them (the first matches by rowid:
#: a count at the cap is backed by the rows up to it, ADR 0107)
_DOCS_SQL = (
    "SELECT count(*), max(rowid) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
    "ORDER BY rowid LIMIT ?)"
)
_NEWEST_TEXTS_SQL = "SELECT text FROM memories ORDER BY rowid DESC LIMIT ?"
#: FTS5's averages record (id 1 of the data table): the row count, then tokens per column
_AVERAGES_SQL = "SELECT block FROM memories_fts_data WHERE id = 1"


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
    """Rows matching every required term ("" when there is none); the session and knowledge
    indexes' question terms (ADR 0016), not memory_search's keys (`key_expression`)."""
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


@functools.lru_cache(maxsize=256)
def _scope(
    clauses: tuple[ScopeClause, ...], category: FailureCategory | None, superseded: bool
) -> tuple[str, tuple[Any, ...]]:
    """`scope_sql` of a query with these scope fields, memoised: a session asks with the
    same scope every time (ADR 0081)."""
    where, params = scope_sql(
        SearchQuery(text="", clauses=clauses, category=category, include_superseded=superseded)
    )
    return where, tuple(params)


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


@functools.lru_cache(maxsize=4096)
def _day(value: object) -> date:
    # memoised: a store's rows share few days, and a hit parses three (ADR 0081)
    return date.fromisoformat(str(value)[:10])


_TARGETS: Final = {t.value: t for t in Target}
_CATEGORIES: Final = {c.value: c for c in FailureCategory}


def hit_of(row: Sequence[Any]) -> SearchHit:
    """A hit from a row of `_ROW`'s columns (the PostgreSQL index reads the same but the
    lineage: its memory id and version number, ADR 0079, are then left to the documents)."""
    id_, target, project, category, text, created, last, by, at, score, namespace = row[:11]
    memory_id, version_no = row[11:13] if len(row) >= 13 else (None, None)
    return _make_hit(
        id_,
        target,
        project,
        category,
        text,
        created,
        last,
        by,
        at,
        score,
        namespace,
        memory_id,
        version_no,
    )


def _make_hit(
    id_: Any,
    target: Any,
    project: Any,
    category: Any,
    text: Any,
    created: Any,
    last: Any,
    by: Any,
    at: Any,
    score: Any,
    namespace: Any,
    memory_id: Any,
    version_no: Any,
) -> SearchHit:
    return SearchHit(
        id=str(id_),
        target=_TARGETS.get(target) or Target(target),
        project=project,
        category=(_CATEGORIES.get(category) or FailureCategory(category)) if category else None,
        text=str(text),
        created=_day(created),
        last_referenced=_day(last),
        superseded_by=by,
        superseded_at=_day(at) if at else None,
        score=float(score),
        namespace=namespace,
        memory_id=None if memory_id is None else str(memory_id),
        version_no=None if version_no is None else int(version_no),
    )


@functools.lru_cache(maxsize=256)
def _statements(
    clauses: tuple[ScopeClause, ...], category: FailureCategory | None, superseded: bool
) -> tuple[str, str, tuple[Any, ...]]:
    """The candidates' two statements of a scope (rare tier, newest common rows) and their
    parameters, memoised: the same text every time, so apsw's statement cache finds them
    without formatting a new string per search (ADR 0102)."""
    where, params = _scope(clauses, category, superseded)
    return (
        _FAST_CANDIDATES_SQL.format(where=where),
        _FAST_NEWEST_SQL.format(where=where),
        params,
    )


@functools.lru_cache(maxsize=64)
def _by_rowid_sql(count: int) -> str:
    return _BY_ROWID_SQL.format(marks=", ".join("?" for _ in range(count)))


def _hit(row: Sequence[Any], score: float) -> SearchHit:
    """`hit_of` of a `_BY_ROWID_SQL` row (its rowid first) with `score`, without building
    an intermediate row (ADR 0102)."""
    _, id_, target, project, category, text, created, last, by, at, _, namespace, mid, no = row
    return _make_hit(
        id_, target, project, category, text, created, last, by, at, score, namespace, mid, no
    )


@functools.lru_cache(maxsize=4096)
def key_expression(key: Key) -> str:
    """The FTS5 expression of one meaningful key: a word in both columns, a gram in `grams`."""
    star = "*" if key.prefix else ""
    column = "{text grams}" if key.kind == "word" else "grams"
    return f"{column} : {quote(key.text)}{star}"


@functools.lru_cache(maxsize=4096)
def _match_key(key: Key) -> str:
    """`key_expression` as the search's candidate statements write it (ADR 0102): a word
    without the `{text grams}` column filter, which names every column of `memories_fts` and
    so matches the same rows, but makes FTS5 check each hit's column (5k: 427 → 368 µs)."""
    star = "*" if key.prefix else ""
    return f"{quote(key.text)}{star}" if key.kind == "word" else f"grams : {quote(key.text)}{star}"


def _any_key(keys: Iterable[Key]) -> str:
    return " OR ".join(dict.fromkeys(_match_key(k) for k in keys))


def _all_keys(keys: Iterable[Key]) -> str:
    return " AND ".join(dict.fromkeys(_match_key(k) for k in keys))


def _any_of(keys: Iterable[Key]) -> str:
    return " OR ".join(dict.fromkeys(key_expression(k) for k in keys))


def _all_of(keys: Iterable[Key]) -> str:
    return " AND ".join(dict.fromkeys(key_expression(k) for k in keys))


class SqliteSearchIndex:
    """The `SearchIndex` port over `memories` + `memories_fts` of a `SqliteStorage`."""

    def __init__(self, storage: SqliteStorage) -> None:
        self._storage = storage
        self._counts = _Counts()

    def search(self, query: SearchQuery) -> list[SearchHit]:
        planned = query_keys(plan_terms(query.text))
        if not planned or not query.clauses or query.limit < 1:
            return []
        rare_sql, newest_sql, params = _statements(
            query.clauses, query.category, query.include_superseded
        )
        counts = self._counts
        with self._storage.read() as conn:
            counts.check(conn)
            # the keys, their counts and weights of this key set, memoised until the next
            # change like the counts themselves (ADR 0102)
            _, docs, weights = counts.weights(conn, planned)

            def rare_rows(rare: Sequence[Key]) -> Iterable[Candidate]:
                found: Iterable[Candidate] = conn.execute(rare_sql, (_any_key(rare), *params))
                return found

            def common_rows(common: Sequence[Key], every: bool) -> Iterable[Candidate]:
                expression = _all_keys(common) if every else _any_key(common)
                found: Iterable[Candidate] = conn.execute(
                    newest_sql, (expression, *params, COMMON_POOL)
                )
                return found

            ranked = ranked_rows(weights, docs, query.floor, query.limit, rare_rows, common_rows)
            if not ranked:
                return []
            full = {
                row[0]: row
                for row in conn.execute(_by_rowid_sql(len(ranked)), [r for _, _, r in ranked])
            }
        return [_hit(full[rowid], shown_score(raw)) for raw, _, rowid in ranked]

    def search_reference(self, query: SearchQuery) -> list[SearchHit]:
        """The plan before ADR 0081 (`ranked_rows_reference`: every candidate re-scored per
        tier), kept so a property test compares `search` with it on a real store."""
        planned = query_keys(plan_terms(query.text))
        if not planned or not query.clauses or query.limit < 1:
            return []
        where, params = scope_sql(query)
        with self._storage.read() as conn:
            self._counts.check(conn)
            keys, docs = resolve_keys(planned, lambda k: self._counts.docs(conn, k))
            total = self._counts.total(conn)
            weights = Weights.of(keys, docs, total, self._counts.average_length(conn))

            def rare_rows(rare: Sequence[Key]) -> Iterator[Candidate]:
                sql = _CANDIDATES_SQL.format(where=where)
                for rowid, id_, text in conn.execute(sql, (_any_of(rare), *params)):
                    yield str(id_), str(text), rowid

            def common_rows(
                common: Sequence[Key], every: bool
            ) -> Iterator[tuple[str, str, object]]:
                sql = _NEWEST_SQL.format(where=where)
                expression = _all_of(common) if every else _any_of(common)
                for rowid, id_, text in conn.execute(sql, (expression, *params, COMMON_POOL)):
                    yield str(id_), str(text), rowid

            ranked = ranked_rows_reference(
                weights, docs, query.floor, query.limit, rare_rows, common_rows
            )
            if not ranked:
                return []
            rowids = [rowid for _, _, rowid in ranked]
            sql = _BY_ROWID_SQL.format(marks=", ".join("?" for _ in rowids))
            full = {row[0]: row[1:] for row in conn.execute(sql, rowids)}
        return [
            hit_of((*full[rowid][:_SCORE], shown_score(raw), *full[rowid][_SCORE + 1 :]))
            for raw, _, rowid in ranked
        ]

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


class _Counts:
    """Document frequencies (capped at `COMMON_CAP`), the row count and the average row
    length, valid while the database is unchanged.

    `PRAGMA data_version` (other connections' commits) and `total_changes()` (this
    connection's writes) together are the change token, as for the candidate matrices
    (`adapters/sqlite/vectors.py`). A count reads at most `COMMON_CAP` entries of a key's
    doclist, so its cost does not grow with the store."""

    _MAX_KEYS: Final = 4096

    def __init__(self) -> None:
        self._token: tuple[int, int] | None = None
        self._total: int | None = None
        self._average: float | None = None
        #: by key (a search's lookup, ADR 0081) and by FTS5 expression (two keys, one
        #: expression: one count)
        self._docs: dict[Key, int] = {}
        self._by_expression: dict[str, int] = {}
        self._weights: dict[tuple[Key, ...], tuple[list[Key], list[int], Weights]] = {}
        #: by expression: the largest rowid of the rows behind a count at `COMMON_CAP`
        self._bounds: dict[str, int] = {}
        #: the change log's newest entry when the cached values were last checked (`check`)
        self._position: int | None = None

    def check(self, conn: Any) -> None:
        """Forget what a write since the last call may have changed.

        A count that reached `COMMON_CAP` is backed by the key's first `COMMON_CAP` rows by
        rowid, all at or below its `bound` (the largest of them). A change whose rows (every
        rowid the change log names since the last check: inserted, updated or deleted) all
        lie above that bound left those rows as they were, so the count is `COMMON_CAP`
        still and is kept; every other count, the row count, the average length and the
        weights are dropped (ADR 0107). A change that did not touch `memories` (the log has
        nothing new) keeps everything: the keyword index is its projection."""
        token = change_token(conn)
        if (
            token == self._token
            and len(self._docs) <= self._MAX_KEYS
            and len(self._weights) <= self._MAX_KEYS
        ):
            return
        kept = (
            self._token is not None
            and len(self._docs) <= self._MAX_KEYS
            and len(self._weights) <= self._MAX_KEYS
        )
        lowest = self._lowest_changed(conn) if kept else None
        self._token = token
        if lowest is _UNCHANGED:
            return
        bounds = self._bounds
        if isinstance(lowest, int) and bounds:
            self._by_expression = {
                e: n for e, n in self._by_expression.items() if bounds.get(e, lowest) < lowest
            }
            self._bounds = {e: b for e, b in bounds.items() if e in self._by_expression}
            self._docs = {
                k: n for k, n in self._docs.items() if key_expression(k) in self._by_expression
            }
        else:
            self._docs.clear()
            self._by_expression.clear()
            self._bounds.clear()
        self._weights.clear()
        self._total = None
        self._average = None
        self._position = int(conn.execute(_LOG_END_SQL).get or 0)

    def _lowest_changed(self, conn: Any) -> object:
        """What `memories` went through since `_position`: `_UNCHANGED` (nothing logged), the
        lowest rowid the log names since, or None (too many entries, or the log cannot say:
        trimmed past the position, or another log)."""
        if self._position is None:
            return None
        seq = self._position
        # from the position's own entry on: the trim deletes the oldest entries only, so the
        # entries after it are all there exactly when it is (a log without it, another
        # file's or one trimmed past it, says nothing: count afresh), as for the candidate
        # matrices (ADR 0101)
        entries = conn.execute(_LOG_SINCE_SQL, (seq, _LOG_LIMIT + 2)).fetchall()
        if seq > 0:
            if not entries or int(entries[0][0]) != seq:
                return None
            entries = entries[1:]
        elif entries and int(entries[0][0]) != 1:
            return None
        if not entries:
            return _UNCHANGED
        if len(entries) > _LOG_LIMIT:
            return None
        return min(int(rowid) for _, rowid in entries)

    def total(self, conn: Any) -> int:
        """The rows of `memories`: FTS5's own count (its averages record, O(1)), or
        count(*) (which reads every row: 2 ms at 100k) when that record cannot be read."""
        if self._total is None:
            block = conn.execute(_AVERAGES_SQL).get
            rows = _varint(block) if isinstance(block, bytes) else None
            if rows is None:
                rows = int(conn.execute("SELECT count(*) FROM memories").get or 0)
            self._total = rows
        return self._total

    def average_length(self, conn: Any) -> float:
        if self._average is None:
            texts = conn.execute(_NEWEST_TEXTS_SQL, (LENGTH_SAMPLE,))
            self._average = average_length(str(t) for (t,) in texts)
        return self._average

    def weights(self, conn: Any, planned: tuple[Key, ...]) -> tuple[list[Key], list[int], Weights]:
        """`resolve_keys` and `Weights.of` of a query's planned keys, memoised by key set
        until the database changes (`check`)."""
        found = self._weights.get(planned)
        if found is None:
            keys, docs = resolve_keys(planned, lambda k: self.docs(conn, k))
            weights = Weights.of(keys, docs, self.total(conn), self.average_length(conn))
            found = self._weights[planned] = (keys, docs, weights)
        return found

    def docs(self, conn: Any, key: Key) -> int:
        """The rows holding `key`, counted up to COMMON_CAP."""
        found = self._docs.get(key)
        if found is None:
            expression = key_expression(key)
            found = self._by_expression.get(expression)
            if found is None:
                count, bound = conn.execute(_DOCS_SQL, (expression, COMMON_CAP)).fetchone()
                found = int(count or 0)
                self._by_expression[expression] = found
                if found >= COMMON_CAP:
                    self._bounds[expression] = int(bound)
            self._docs[key] = found
        return found


#: `_Counts._lowest_changed`'s answer when `memories` did not change
_UNCHANGED: Final = object()
#: log entries past which a change counts afresh instead of being read
_LOG_LIMIT: Final = 256
_LOG_END_SQL: Final = "SELECT max(seq) FROM memories_changes"
_LOG_SINCE_SQL: Final = (
    "SELECT seq, memory_rowid FROM memories_changes WHERE seq >= ? ORDER BY seq LIMIT ?"
)


def _varint(block: bytes) -> int | None:
    """The leading SQLite varint of `block` (FTS5's averages record starts with its row
    count), or None when it is malformed."""
    value = 0
    for i, byte in enumerate(block[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


def change_token(conn: Any) -> tuple[int, int]:
    """Changes whenever any connection committed a change to the file (inside a read txn)."""
    return int(conn.execute("PRAGMA data_version").get), int(conn.total_changes())
