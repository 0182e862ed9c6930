"""What a consolidation plan must keep (issue 26 §1, ADR 0062): the coverage rule and the
removal cap, as pure functions.

A plan (an LLM's reply) may drop an entry only when a replace or add of the same plan keeps
its information. "Keeps" is measured on the entry's terms, cut as search cuts them
(`pi_hermes_memory.domain.search.terms.split_pieces`, NFKC + case-folded):

- **terms**: each run of letters/digits (a word) and each CJK bigram;
- **distinctive terms**: the terms that are not English function words (`STOP_WORDS`);
- **anchors**: the terms that must survive verbatim: every term holding a digit (versions,
  ports, sizes, dates), and every term of a code-like token (in backticks, or a token holding
  one of ``/ \\ _ = @ # $ ~``, an inner ``.`` or ``:`` between letters/digits, or a capital
  letter after its first character: paths, file names, identifiers, hosts, `PostgreSQL`).

An output text *covers* a dropped entry when it holds every anchor of the entry and at least
`ceil(MIN_KEPT_SHARE × n)` of its `n` distinctive terms. A word of five or more ASCII letters
also counts as kept when the output has a word with the same first five letters
(`indentation` ~ `indents`): compression may inflect prose, never names or numbers. An entry
without distinctive terms and anchors (only function words) has nothing to lose.

`max_removals(n, share)`: the entries one plan may delete outright from a target of `n`
entries, `floor(share × n)`, but at least one when the target has two or more entries (so
two duplicates can always be merged); a replace does not count (the entry lives on in its
supersede chain and the coverage rule checks its new text).

Pure: standard library and attrs only.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

import attrs
from pi_hermes_memory.domain.search.terms import STOP_WORDS, bigrams, split_pieces

__all__ = [
    "DEFAULT_MAX_REMOVED_SHARE",
    "MIN_KEPT_SHARE",
    "STEM_CHARS",
    "EntryTerms",
    "covers",
    "entry_terms",
    "first_uncovered",
    "max_removals",
]

#: the share of an entry's distinctive terms an output must keep to cover it
MIN_KEPT_SHARE: Final = 1 / 3
#: the default share of a target's entries one plan may delete (consolidationMaxRemovedShare)
DEFAULT_MAX_REMOVED_SHARE: Final = 0.3
#: ASCII words this long or longer match on their first STEM_CHARS letters
STEM_CHARS: Final = 5

_BACKTICKS: Final = re.compile(r"`([^`]*)`")
_CODE_CHARS: Final = frozenset("/\\_=@#$~")
_INNER_SEPARATOR: Final = re.compile(r"[^\W_][.:]+[^\W_]")
_EDGE: Final = "\"'()[]{}<>,;:!?.*`"


@attrs.frozen(kw_only=True)
class EntryTerms:
    """The terms of one text (see the module docstring)."""

    terms: frozenset[str]
    distinctive: frozenset[str]
    anchors: frozenset[str]


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _terms(text: str) -> list[str]:
    out: list[str] = []
    for kind, run in split_pieces(_fold(text)):
        if kind == "word" and any(ch.isalnum() for ch in run):
            out.append(run)
        elif kind == "cjk":
            out.extend(g for g in bigrams(run) if any(ch.isalnum() for ch in g))
    return out


def _code_like(token: str) -> bool:
    token = token.strip(_EDGE)
    if not token:
        return False
    if any(ch in _CODE_CHARS for ch in token):
        return True
    if _INNER_SEPARATOR.search(token) and any(len(t) > 1 for t in _terms(token)):
        return True  # main.py, host:5432; not e.g. or i.e.
    return any(ch.isupper() for ch in token[1:])


def entry_terms(text: str) -> EntryTerms:
    """The terms, distinctive terms and anchors of `text`."""
    terms = _terms(text)
    anchors = {t for t in terms if any(ch.isdigit() for ch in t)}
    nfkc = unicodedata.normalize("NFKC", text)
    for span in _BACKTICKS.findall(nfkc):
        anchors.update(_terms(span))
    for token in _BACKTICKS.sub(" ", nfkc).split():
        if _code_like(token):
            anchors.update(_terms(token))
    return EntryTerms(
        terms=frozenset(terms),
        distinctive=frozenset(t for t in terms if t not in STOP_WORDS),
        anchors=frozenset(anchors),
    )


def _stem(term: str) -> str:
    if len(term) >= STEM_CHARS and term.isascii() and term.isalpha():
        return term[:STEM_CHARS]
    return term


def covers(removed: EntryTerms, output: EntryTerms) -> bool:
    """Whether `output` keeps the information of the dropped entry `removed`."""
    if not removed.anchors <= output.terms:
        return False
    need = math.ceil(MIN_KEPT_SHARE * len(removed.distinctive) - 1e-9)
    if need == 0:
        return True
    stems = {_stem(t) for t in output.terms}
    kept = sum(1 for t in removed.distinctive if t in output.terms or _stem(t) in stems)
    return kept >= need


def first_uncovered(
    removed: Iterable[tuple[str, str]], outputs: Sequence[str]
) -> tuple[str, str] | None:
    """The first (id, text) of `removed` that no text of `outputs` covers, or None."""
    cut = [entry_terms(o) for o in outputs]
    for entry_id, text in removed:
        terms = entry_terms(text)
        if not any(covers(terms, o) for o in cut) and (terms.distinctive or terms.anchors):
            return entry_id, text
    return None


def max_removals(n: int, share: float) -> int:
    """Entries one plan may delete from a target of `n` entries (see the module docstring)."""
    if n <= 0 or share <= 0:
        return 0
    allowed = math.floor(share * n + 1e-9)
    return max(allowed, 1) if n >= 2 else allowed
