"""Keyword relevance: how well a stored text answers a query's meaningful terms, in [0, 1].

One pure function for every `SearchIndex` (SQLite FTS5, in-memory, PostgreSQL), so a score
means the same in every store (issue 27, ADR 0068):

- the query's *keys* (`query_keys`): its terms that are not stop terms (`QueryTerms.stop`),
  each a folded word (an English word looked up by its stem as a prefix: `deploy*` finds
  deploy, deploys, deployed, deployment) or a CJK gram (a lone CJK character: a prefix of
  the bigrams it starts); two words with one stem are one key;
- `resolve_keys`: a stemmed word whose whole spelling is already common is looked up by that
  spelling only: a common key weighs almost nothing, and FTS5 reads a prefix's merged
  doclist whole (its cost grows with the rows the prefix hits), while an exact word is read
  lazily up to the cap;
- each key weighs its idf, `ln(1 + (N - n + 0.5) / (n + 0.5))` over the N rows of the store
  (at least `MIN_ROWS`) and the n rows holding it; n is counted only up to `COMMON_CAP` (the
  cost of a count never grows with the store): a key found in `COMMON_CAP` rows or more is
  *common* and weighs as if it were in half of all rows (at least `COMMON_CAP`), a bound that
  gives it almost no say;
- a row's raw relevance is `sum(idf(k) * sat(tf_k, len)) / sum(idf(k))` over the primary-
  spelling keys, where `sat` is bm25's term-frequency saturation with length normalisation
  (`K1`, `B`): `sat(1, average length) = 1`. So 1.0 means every meaningful term present once
  in a row of average length; rows shorter than average, or holding a term several times,
  can go above 1, which orders them (best first) but is shown as 1.0 (`shown_score`);
- a row's length is its word tokens plus its CJK bigrams (`row_counts`); the average is
  taken over the newest `LENGTH_SAMPLE` rows of the store.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs
from pi_hermes_memory.domain.search.terms import (
    QueryTerms,
    bigrams,
    fold,
    split_pieces,
)

#: bm25's term-frequency saturation and length normalisation.
K1 = 0.8
B = 0.5
#: Document frequencies are counted up to this many rows; a key in more is common.
COMMON_CAP = 256
#: The idf of a smaller store is taken as if it had this many rows (`idf`).
MIN_ROWS = 100
#: Rows holding only common keys are scored among the newest this many in scope.
COMMON_POOL = 32
#: The average row length is taken over this many newest rows.
LENGTH_SAMPLE = 128
#: Hits below this keyword relevance are dropped by every index unless the query sets its
#: own floor (measured on LoCoMo and on unrelated questions, ADR 0068).
KEYWORD_FLOOR = 0.2
#: The weight over its idf of a name no row holds (`Key.named`).
NAMED_WEIGHT = 3.0

_ASCII_WORD = re.compile(r"[a-z0-9]+")
#: (raw relevance, id, the row as the index keeps it)
Scored = tuple[float, str, object]


@attrs.frozen(cache_hash=True)  # hashed by every lookup of a search (ADR 0102)
class Key:
    """One meaningful query key: `text` is the folded word, its stem, or the CJK gram;
    `prefix`: matched as a prefix of a row's word (or bigram); `primary`: from the query's
    primary spelling (only those count in the denominator)."""

    kind: str  # "word" or "gram"
    text: str
    prefix: bool
    primary: bool
    #: a name or acronym of the query (`QueryTerms.named`): absent from the store, it weighs
    #: NAMED_WEIGHT times its idf
    named: bool = False
    #: a stemmed word's whole (folded) spelling: what the key falls back to when that word
    #: alone is common (`resolve_keys`); "" for the others
    whole: str = ""

    @property
    def tokens(self) -> tuple[str, ...]:
        """The exact tokens this key matches (a prefix key: the prefix)."""
        return (self.text,)


def query_keys(terms: QueryTerms) -> tuple[Key, ...]:
    """The meaningful keys of `terms` (see the module docstring), primary spellings first."""
    keys: dict[tuple[str, str, bool], Key] = {}
    for primary, words, grams in (
        (True, terms.words, terms.grams),
        (False, terms.alt_words, terms.alt_grams),
    ):
        for word in words:
            if word in terms.stop:
                continue
            stem = terms.stem(word)
            key = Key(
                "word",
                fold(stem if stem is not None else word),
                stem is not None,
                primary,
                named=word in terms.named,
                whole=fold(word) if stem is not None else "",
            )
            keys.setdefault((key.kind, key.text, key.prefix), key)
        for gram in grams:
            if gram in terms.stop:
                continue
            key = Key("gram", gram, len(gram) == 1, primary)
            keys.setdefault((key.kind, key.text, key.prefix), key)
    return tuple(keys.values())


@attrs.frozen
class RowCounts:
    """The folded words and CJK bigrams of a stored text, with their counts; `length`: how
    many of them (the row's length for the saturation)."""

    words: Mapping[str, int]
    grams: Mapping[str, int]
    length: int
    #: `words` and `grams` in sorted order: a prefix key's tokens are one contiguous run
    #: (`Weights.scorer` finds it by bisection)
    word_order: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    gram_order: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    #: a prefix key's term frequency in this row, memoised by `Weights.scorer` (ADR 0114):
    #: a word prefix under its text, a gram prefix under "\0" + its text. A pure function
    #: of the (immutable) text, kept as long as the row's counts are (`row_counts`' memo)
    prefix_tf: dict[str, int] = attrs.field(init=False, eq=False, repr=False, factory=dict)

    @word_order.default
    def _word_order(self) -> tuple[str, ...]:
        return tuple(sorted(self.words))

    @gram_order.default
    def _gram_order(self) -> tuple[str, ...]:
        return tuple(sorted(self.grams))


@functools.lru_cache(maxsize=65_536)
def row_counts(text: str) -> RowCounts:
    """The words and grams of `text`, cut as the in-memory index and the FTS5 tokenizer do:
    words are runs of letters, digits and marks (case- and diacritic-folded, words glued to
    CJK text included), CJK runs become code-point bigrams (a lone character a unigram)."""
    if text.isascii():
        words = Counter(_ASCII_WORD.findall(text.lower()))
        return RowCounts(words, {}, sum(words.values()))
    found: Counter[str] = Counter()
    grams: Counter[str] = Counter()
    for kind, run in split_pieces(text):
        if kind == "word":
            found[fold(run)] += 1
        elif kind == "cjk":
            grams.update(bigrams(run))
    return RowCounts(found, grams, sum(found.values()) + sum(grams.values()))


def frequency(key: Key, row: RowCounts) -> int:
    """How many of `row`'s words (or grams) `key` matches."""
    table = row.words if key.kind == "word" else row.grams
    if not key.prefix:
        return table.get(key.text, 0)
    return sum(n for token, n in table.items() if token.startswith(key.text))


def matches(key: Key, text: str) -> bool:
    """Whether the stored `text` holds `key`."""
    return frequency(key, row_counts(text)) > 0


def resolve_keys(keys: Sequence[Key], count: Callable[[Key], int]) -> tuple[list[Key], list[int]]:
    """The keys a search uses and their document frequencies (each counted by `count`, up to
    COMMON_CAP): a stemmed word whose whole spelling is in COMMON_CAP rows or more becomes
    that exact word (a common key); otherwise its stem prefix is counted."""
    chosen: list[Key] = []
    docs: list[int] = []
    for key in keys:
        if key.whole:
            exact = _whole_word(key)
            n = count(exact)
            if n >= COMMON_CAP:
                chosen.append(exact)
                docs.append(n)
                continue
        chosen.append(key)
        docs.append(count(key))
    return chosen, docs


@functools.lru_cache(maxsize=4096)
def _whole_word(key: Key) -> Key:
    """A stemmed key's whole spelling as an exact key (`resolve_keys`)."""
    return attrs.evolve(key, text=key.whole, prefix=False, whole="")


def key_weight(key: Key, docs: int, total: int) -> float:
    """The weight of `key` in one store: its idf, NAMED_WEIGHT times for a name no row holds
    (a question about someone or something the store does not know scores low everywhere)."""
    return idf(docs, total) * (NAMED_WEIGHT if key.named and docs == 0 else 1.0)


def idf(docs: int, total: int) -> float:
    """The weight of a key held by `docs` of `total` rows (`docs` counted up to COMMON_CAP:
    a capped count weighs as half of all rows, at least COMMON_CAP). A store of fewer than
    MIN_ROWS rows counts as MIN_ROWS (the others holding none of the key): in a handful of
    rows, a word found in all of them is not known to be common."""
    total = max(total, docs, 1)
    if docs >= COMMON_CAP:
        docs = max(COMMON_CAP, total // 2)
    total = max(total, MIN_ROWS)
    return math.log(1.0 + (total - docs + 0.5) / (docs + 0.5))


def average_length(texts: Iterable[str]) -> float:
    """The mean `row_counts` length of `texts` (1.0 when there is none)."""
    lengths = [row_counts(t).length for t in texts]
    return max(1.0, sum(lengths) / len(lengths)) if lengths else 1.0


@attrs.frozen
class Weights:
    """The keys of one query with their idf, over one store."""

    keys: tuple[Key, ...]
    idf: tuple[float, ...]
    average_length: float
    #: The query's information: the sum of its primary keys' weights.
    total: float = attrs.field(init=False)
    #: exact word / gram → the positions of the keys it counts for
    _words: Mapping[str, tuple[int, ...]] = attrs.field(init=False)
    _grams: Mapping[str, tuple[int, ...]] = attrs.field(init=False)
    #: the positions of the prefix keys (a lone CJK character)
    _prefixed: tuple[int, ...] = attrs.field(init=False)

    @classmethod
    def of(
        cls, keys: Sequence[Key], docs: Sequence[int], rows: int, average_length: float
    ) -> Weights:
        """The weights of `keys` whose document frequencies are `docs` in a store of `rows`
        rows (`key_weight`), the one way every index builds them."""
        idf = tuple(key_weight(k, n, rows) for k, n in zip(keys, docs, strict=True))
        return cls(keys=tuple(keys), idf=idf, average_length=average_length)

    @total.default
    def _total(self) -> float:
        return sum(w for k, w in zip(self.keys, self.idf, strict=True) if k.primary) or 1.0

    @_words.default
    def _word_table(self) -> Mapping[str, tuple[int, ...]]:
        return self._table("word")

    @_grams.default
    def _gram_table(self) -> Mapping[str, tuple[int, ...]]:
        return self._table("gram")

    @_prefixed.default
    def _prefix_keys(self) -> tuple[int, ...]:
        return tuple(i for i, k in enumerate(self.keys) if k.prefix)

    def _table(self, kind: str) -> Mapping[str, tuple[int, ...]]:
        table: dict[str, list[int]] = {}
        for i, key in enumerate(self.keys):
            if key.kind == kind and not key.prefix:
                for token in key.tokens:
                    table.setdefault(token, []).append(i)
        return {token: tuple(at) for token, at in table.items()}

    def frequencies(self, row: RowCounts) -> list[int]:
        """How many of `row`'s words and grams each key matches (`frequency` for every key,
        in one walk over the row)."""
        tf = [0] * len(self.keys)
        for table, tokens in ((self._words, row.words), (self._grams, row.grams)):
            if len(tokens) < len(table):
                for token, n in tokens.items():
                    for i in table.get(token, ()):
                        tf[i] += n
            else:
                for token, at in table.items():
                    n = tokens.get(token, 0)
                    if n:
                        for i in at:
                            tf[i] += n
        for i in self._prefixed:
            tf[i] = frequency(self.keys[i], row)
        return tf

    def scorer(self) -> Callable[[str], float]:
        """`relevance(self, text)` as one function for a whole search (ADR 0081): an exact
        key is one dictionary lookup in the row, a prefix key one bisection of the row's
        sorted tokens, memoised in the row (`RowCounts.prefix_tf`, ADR 0114); the sum runs
        in the same order with the same operations, so the floats are equal bit for bit."""
        idf, average, total = self.idf, self.average_length, self.total
        plus = K1 + 1
        # (position, kind is word, text, prefix, memo key) of every key, in key order
        plan = tuple(
            (i, key.kind == "word", key.text, key.prefix, _memo_key(key))
            for i, key in enumerate(self.keys)
        )

        def score(text: str) -> float:
            row = row_counts(text)
            norm = K1 * (1 - B + B * row.length / average)
            result = 0.0
            for i, word, token, prefix, memo in plan:
                if not prefix:
                    tf = (row.words if word else row.grams).get(token, 0)
                else:
                    known = row.prefix_tf.get(memo)
                    if known is None:
                        known = row.prefix_tf[memo] = _prefix_frequency(row, word, token)
                    tf = known
                if tf:
                    result += idf[i] * tf * plus / (tf + norm)
            return result / total

        return score

    def bound(self, keys: Iterable[Key]) -> float:
        """The highest raw relevance a row holding only `keys` can reach (saturation < K1 + 1):
        a row not holding any other key never scores above it (MaxScore)."""
        chosen = set(keys)
        part = sum(w for k, w in zip(self.keys, self.idf, strict=True) if k in chosen)
        return part * (K1 + 1) / self.total


def _memo_key(key: Key) -> str:
    """Where `RowCounts.prefix_tf` keeps a prefix key's frequency: words and grams apart."""
    return key.text if key.kind == "word" else "\0" + key.text


def _prefix_frequency(row: RowCounts, word: bool, token: str) -> int:
    """How many of `row`'s words (or grams) start with `token`: one bisection of the row's
    sorted tokens, then the contiguous run of those holding the prefix (ADR 0081)."""
    table = row.words if word else row.grams
    order = row.word_order if word else row.gram_order
    at = bisect.bisect_left(order, token)
    tf = 0
    while at < len(order) and order[at].startswith(token):
        tf += table[order[at]]
        at += 1
    return tf


def relevance(weights: Weights, text: str) -> float:
    """The raw keyword relevance of `text` (see the module docstring; >= 0, 1.0 = every
    meaningful term once in a row of average length)."""
    row = row_counts(text)
    norm = K1 * (1 - B + B * row.length / weights.average_length)
    score = 0.0
    for tf, weight in zip(weights.frequencies(row), weights.idf, strict=True):
        if tf:
            score += weight * tf * (K1 + 1) / (tf + norm)
    return score / weights.total


def shown_score(raw: float) -> float:
    """The score a hit carries: the raw relevance clipped to [0, 1], four decimals."""
    if not math.isfinite(raw) or raw <= 0:
        return 0.0
    return round(min(1.0, raw), 4)


def best(scored: Iterable[Scored], floor: float, limit: int) -> list[Scored]:
    """The `limit` best (raw score, id, row) triples at or above `floor`: by raw score, then
    the larger id (ids are time-ordered: the newest first)."""
    kept = [s for s in scored if s[0] >= floor and s[0] > 0]
    kept.sort(key=lambda s: (s[0], s[1]), reverse=True)
    return kept[:limit]


def kth_score(ranked: Sequence[Scored], limit: int) -> float | None:
    """The raw score of the `limit`-th row (None when fewer)."""
    return ranked[limit - 1][0] if len(ranked) >= limit else None


#: A candidate row as an index fetches it: (id, text, whatever the index keeps of it).
Candidate = tuple[str, str, object]
#: Rows of the scope holding any of the keys given: *all* of them.
RareFetch = Callable[[Sequence[Key]], Iterable[Candidate]]
#: The newest COMMON_POOL rows (id, text, row) of the scope holding all (True) or any
#: (False) of the keys given.
CommonFetch = Callable[[Sequence[Key], bool], Iterable[Candidate]]


def ranked_rows(
    weights: Weights,
    docs: Sequence[int],
    floor: float,
    limit: int,
    rare_rows: RareFetch,
    common_rows: CommonFetch,
) -> list[Scored]:
    """The best `limit` rows of one search, the same way in every index (ADR 0068).

    `docs`: each key's document frequency counted up to COMMON_CAP. Every in-scope row
    holding a rare key (under the cap) is scored; rows holding only common keys can reach at
    most `weights.bound(common)`, so they are fetched (the newest COMMON_POOL holding all
    common keys, then, if still short, any of them) only when that bound reaches both the
    floor and the limit-th score. Otherwise the answer equals scoring every row.

    Each row is scored once (`Weights.scorer`) and only rows at or above the floor are kept
    for the cut (ADR 0081); the answer equals `ranked_rows_reference`, which re-scored every
    row per tier."""
    keys = weights.keys
    rare = [k for k, n in zip(keys, docs, strict=True) if 0 < n < COMMON_CAP]
    common = [k for k, n in zip(keys, docs, strict=True) if n >= COMMON_CAP]
    score = weights.scorer()
    seen: set[str] = set()
    kept: list[Scored] = []

    def take(rows: Iterable[Candidate]) -> list[Scored]:
        for id_, text, row in rows:
            if id_ in seen:
                continue
            seen.add(id_)
            raw = score(text)
            if raw >= floor and raw > 0:
                kept.append((raw, id_, row))
        return heapq.nlargest(limit, kept, key=_RANK_KEY)

    ranked = take(rare_rows(rare)) if rare else []
    kth = kth_score(ranked, limit)
    bound = weights.bound(common)
    if common and bound >= floor and (kth is None or kth <= bound):
        for every in (True, False) if len(common) > 1 else (True,):
            ranked = take(common_rows(common, every))
            if len(ranked) >= limit:
                break
    return ranked


#: a scored row's rank: (raw score, id), the larger first (ADR 0114: in C, not a lambda)
_RANK_KEY: Callable[[Scored], tuple[float, str]] = operator.itemgetter(0, 1)


def ranked_rows_reference(
    weights: Weights,
    docs: Sequence[int],
    floor: float,
    limit: int,
    rare_rows: RareFetch,
    common_rows: CommonFetch,
) -> list[Scored]:
    """The best `limit` rows of one search, the same way in every index (ADR 0068).

    `docs`: each key's document frequency counted up to COMMON_CAP. Every in-scope row
    holding a rare key (under the cap) is scored; rows holding only common keys can reach at
    most `weights.bound(common)`, so they are fetched (the newest COMMON_POOL holding all
    common keys, then, if still short, any of them) only when that bound reaches both the
    floor and the limit-th score. Otherwise the answer equals scoring every row.

    The plan before ADR 0081 (every row re-scored per tier through `relevance`), kept so the
    property tests can compare `ranked_rows` with it."""
    keys = weights.keys
    rare = [k for k, n in zip(keys, docs, strict=True) if 0 < n < COMMON_CAP]
    common = [k for k, n in zip(keys, docs, strict=True) if n >= COMMON_CAP]
    found: dict[str, tuple[str, object]] = {}
    if rare:
        for id_, text, row in rare_rows(rare):
            found[id_] = (text, row)

    def rank() -> list[Scored]:
        scored = ((relevance(weights, text), id_, row) for id_, (text, row) in found.items())
        return best(scored, floor, limit)

    ranked = rank()
    kth = kth_score(ranked, limit)
    bound = weights.bound(common)
    if common and bound >= floor and (kth is None or kth <= bound):
        for every in (True, False) if len(common) > 1 else (True,):
            for id_, text, row in common_rows(common, every):
                found.setdefault(id_, (text, row))
            ranked = rank()
            if len(ranked) >= limit:
                break
    return ranked
