"""The near-duplicate rule: conservative token-set Jaccard with CJK code-point bigrams.

See ADR 0008 for the thresholds. Pure and deterministic; token sets are cached by text because
the add path compares one new text against every active entry of its scope.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

import attrs
from pi_hermes_memory.domain.search.cjk import cjk_patterns, is_cjk

#: Token-set Jaccard at or above this blocks an add (unless ``force``).
JACCARD_THRESHOLD = 0.8
#: Cosine similarity at or above this blocks an add when both sides have a current vector.
COSINE_THRESHOLD = 0.90
#: At most this many candidates are returned to the agent.
MAX_CANDIDATES = 3

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def __getattr__(name: str) -> re.Pattern[str]:
    """`CJK_CHAR` and `CJK_RUN`, as `pi_hermes_memory.domain.search.cjk` has them."""
    from pi_hermes_memory.domain.search import cjk

    return getattr(cjk, name)  # type: ignore[no-any-return]


def _split_runs(word: str) -> Iterable[tuple[bool, str]]:
    """Split a \\w+ run into maximal CJK and non-CJK pieces."""
    start = 0
    for i in range(1, len(word) + 1):
        if i == len(word) or is_cjk(word[i]) != is_cjk(word[start]):
            yield is_cjk(word[start]), word[start:i]
            start = i


@functools.lru_cache(maxsize=65_536)
def token_set(text: str) -> frozenset[str]:
    """Tokens of `text`: case-folded NFKC words; CJK runs become code-point bigrams.

    A CJK run of one character is kept as a unigram so that short texts still have tokens.
    Python strings index by code point, so supplementary-plane Han counts as one character.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    # no CJK run to split (an ASCII text has none): every word is a token
    if folded.isascii() or cjk_patterns()[0].search(folded) is None:
        return frozenset(_TOKEN_RE.findall(folded))
    tokens: set[str] = set()
    for match in _TOKEN_RE.finditer(folded):
        for cjk, piece in _split_runs(match.group()):
            if not cjk or len(piece) == 1:
                tokens.add(piece)
            else:
                tokens.update(piece[i : i + 2] for i in range(len(piece) - 1))
    return frozenset(tokens)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


@attrs.frozen(kw_only=True)
class Similarity:
    score: float
    basis: str  # "token" or "cosine"


def similarity(text_a: str, text_b: str, cosine: float | None = None) -> Similarity:
    """How alike two texts are, by cosine when both vectors exist, else by tokens."""
    token_score = jaccard(token_set(text_a), token_set(text_b))
    if cosine is not None and cosine >= COSINE_THRESHOLD and cosine > token_score:
        return Similarity(score=cosine, basis="cosine")
    return Similarity(score=token_score, basis="token")


def is_near_duplicate(text_a: str, text_b: str, cosine: float | None = None) -> bool:
    """The add-time rule: token Jaccard ≥ 0.8, or cosine ≥ 0.90 when both vectors exist."""
    if cosine is not None and cosine >= COSINE_THRESHOLD:
        return True
    return jaccard(token_set(text_a), token_set(text_b)) >= JACCARD_THRESHOLD


@attrs.frozen(kw_only=True)
class Candidate:
    entry_id: str
    text: str
    score: float
    basis: str


def near_duplicates(
    text: str,
    pool: Sequence[tuple[str, str]],
    cosines: Mapping[str, float] | None = None,
    limit: int = MAX_CANDIDATES,
) -> tuple[Candidate, ...]:
    """The best `limit` near-duplicates of `text` among `pool` ((entry_id, text) pairs).

    `cosines`: entry id -> cosine of the two texts' vectors, for the pairs where both sides
    have a current vector; a cosine >= 0.90 blocks as well as the token rule."""
    cosines = cosines or {}
    mine = token_set(text)
    size = len(mine)
    # Jaccard >= t needs t*|B| <= |A| <= |B|/t, i.e. |B| in [t*|A|, |A|/t]: pairs outside that
    # band are skipped without any set work (the add path scans every row of the scope).
    low, high = size * JACCARD_THRESHOLD, size / JACCARD_THRESHOLD
    tokens_of = token_set
    found: list[Candidate] = []
    for entry_id, other in pool:
        theirs = tokens_of(other)
        cos = cosines.get(entry_id) if cosines else None
        if cos is None and not low <= len(theirs) <= high:
            continue
        shared = len(mine & theirs)
        union = size + len(theirs) - shared
        token_score = shared / union if union else 0.0
        if cos is not None and cos >= COSINE_THRESHOLD and cos > token_score:
            found.append(Candidate(entry_id=entry_id, text=other, score=cos, basis="cosine"))
        elif token_score >= JACCARD_THRESHOLD:
            found.append(Candidate(entry_id=entry_id, text=other, score=token_score, basis="token"))
    found.sort(key=lambda c: (-c.score, c.entry_id))
    return tuple(found[:limit])
