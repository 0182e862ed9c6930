"""Literal prefilters for the scanner's patterns (issue 29, ADR 0089).

`required_factors(source, flags)` reads a regular expression's parse tree and returns a set of
short strings such that every match of the pattern contains at least one of them (after
`fold`), or None when no such set is known (the pattern may match without any literal). A text
whose folded form contains none of the factors cannot match, so the pattern need not be
compiled to say so: `lazy_re` answers "no match" for it before compiling (the factors come from
the generated table `prefilter_table.py`, so no pattern is parsed at run time either).

`fold` maps every character to one representative of its class under `re.IGNORECASE` (simple
lower case plus the extra equivalences `re` knows, e.g. `ı`~`i`, `ſ`~`s`, `ς`~`σ`, `в`~`ᲀ`),
one character for one character, so a substring matched literally or case-insensitively
becomes the folded factor at the same place. A pattern compiled without IGNORECASE matches
fewer texts, never more, so the same fold is sound for it too.

The analysis (in the manner of RE2's prefilter and Russ Cox's trigram index) tracks for each
node the exact set of strings it matches while that set is small, and otherwise a set of
factors one of which each match contains:
- a literal or a class of a few literals is exact; `\\b`, anchors and lookarounds match the
  empty string (a lookaround's content is not required of the match itself);
- a concatenation's exact sets multiply while small; otherwise its factors are the best of its
  children's factor sets and of the products of its runs of exact children;
- an alternation is the union of its branches (unknown if any branch is unknown);
- a repetition with a minimum of one keeps its child's factors; an optional one is unknown
  unless it is a small exact set (`-?` is {"", "-"});
- anything else (`.`, `\\w`, `[^...]`, ranges, back references) is unknown.

Pure: standard library only (`re._parser`, `re._casefix`: the parser and the case table of the
running `re`, so the analysis and the fold follow the engine that runs the patterns; the test
suite checks the fold against the engine for every character).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import import_module
from typing import Any

__all__ = ["fold", "forget_folded", "render_table", "required_factors", "table"]

# `re`'s own modules (already loaded by `import re`), reached by name: typeshed has no stubs
_parser: Any = import_module("re._parser")
c: Any = import_module("re._constants")
_EXTRA: dict[int, tuple[int, ...]] = import_module("re._casefix")._EXTRA_CASES


class _FoldTable(dict[int, int]):
    """`str.translate` table built on demand: code point -> its class representative."""

    def __missing__(self, cp: int) -> int:
        ch = chr(cp)
        low = "i" if cp == 0x130 else ch.lower()  # İ: full lower case is two characters
        lo = ord(low) if len(low) == 1 else cp
        rep = min((lo, *_EXTRA.get(lo, ())))
        self[cp] = rep
        return rep


_FOLD = _FoldTable()
_last: tuple[str, str] = ("", "")


def fold(text: str) -> str:
    """Each character replaced by the representative of its IGNORECASE class (same length)."""
    global _last
    if _last[0] is text:
        return _last[1]
    folded = text.lower() if text.isascii() else text.translate(_FOLD)
    _last = (text, folded)
    return folded


def forget_folded() -> None:
    global _last
    _last = ("", "")


# --------------------------------------------------------------------------------------------
# Analysis

_EXACT_LIMIT = 64  # strings in an exact set before it becomes a factor set
_REPEAT_LIMIT = 3  # largest maximum of a repetition that is enumerated

_Set = frozenset[str]


class _Info:
    __slots__ = ("exact", "factors")

    def __init__(self, exact: _Set | None, factors: _Set | None) -> None:
        self.exact = exact
        # an exact set is its own factor set, unless it holds the empty string
        if exact is not None:
            factors = None if "" in exact else exact
        self.factors = factors


_UNKNOWN = _Info(None, None)
_EMPTY = _Info(frozenset({""}), None)


def _score(factors: _Set) -> tuple[int, int]:
    """Larger is more selective: the shortest factor's length first, then fewer factors."""
    return (min(len(f) for f in factors), -len(factors))


def _best(candidates: Iterable[_Set]) -> _Set | None:
    best: _Set | None = None
    for cand in candidates:
        if cand and "" not in cand and (best is None or _score(cand) > _score(best)):
            best = cand
    return best


def _product(a: _Set, b: _Set) -> _Set | None:
    if len(a) * len(b) > _EXACT_LIMIT:
        return None
    return frozenset(x + y for x in a for y in b)


def _concat(infos: list[_Info]) -> _Info:
    candidates: list[_Set] = []
    run: _Set | None = frozenset({""})
    whole: _Set | None = frozenset({""})
    for info in infos:
        if whole is not None:
            whole = None if info.exact is None else _product(whole, info.exact)
        if info.exact is None:
            if run is not None:
                candidates.append(run)
            run = frozenset({""})
            if info.factors is not None:
                candidates.append(info.factors)
            continue
        assert run is not None
        grown = _product(run, info.exact)
        if grown is None:  # too many strings: close the run, start again from this child
            candidates.append(run)
            grown = info.exact
        run = grown
    if whole is not None:
        return _Info(whole, None)
    if run is not None:
        candidates.append(run)
    return _Info(None, _best(candidates))


def _branch(infos: list[_Info]) -> _Info:
    exact: set[str] = set()
    for info in infos:
        if info.exact is None:
            break
        exact |= info.exact
    else:
        if len(exact) <= _EXACT_LIMIT:
            return _Info(frozenset(exact), None)
    factors: set[str] = set()
    for info in infos:
        if info.factors is None:
            return _UNKNOWN
        factors |= info.factors
    return _Info(None, frozenset(factors))


def _repeat(lo: int, hi: int, info: _Info) -> _Info:
    if info.exact is not None and hi <= _REPEAT_LIMIT:
        out: set[str] = set()
        power: _Set | None = frozenset({""})
        for k in range(hi + 1):
            if power is None:
                break
            if k >= lo:
                out |= power
            power = _product(power, info.exact)
        if power is not None and len(out) <= _EXACT_LIMIT:
            return _Info(frozenset(out), None)
    if lo >= 1:
        return _Info(None, info.factors)
    return _UNKNOWN


def _node(op: Any, av: Any) -> _Info:
    if op is c.LITERAL:
        return _Info(frozenset({chr(av)}), None)
    if op is c.IN:
        if all(o is c.LITERAL for o, _ in av):
            return _Info(frozenset(chr(v) for _, v in av), None)
        return _UNKNOWN
    if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
        return _EMPTY
    if op is c.SUBPATTERN:
        return _seq(av[-1])
    if op is c.ATOMIC_GROUP:
        return _seq(av)
    if op is c.BRANCH:
        return _branch([_seq(alt) for alt in av[1]])
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        lo, hi, item = av
        return _repeat(lo, hi, _seq(item))
    return _UNKNOWN  # ANY, NOT_LITERAL, categories, ranges, back references, conditionals


def _seq(items: Any) -> _Info:
    return _concat([_node(op, av) for op, av in items])


def required_factors(source: str, flags: int = 0) -> tuple[str, ...] | None:
    """Folded strings one of which every match of `re.compile(source, flags)` contains, sorted;
    None when the analysis finds no such set. Redundant factors (containing another) are left
    out: a text containing the longer one contains the shorter."""
    if flags & re.VERBOSE:
        return None  # the parser keeps no whitespace; not worth the care here
    info = _seq(_parser.parse(source, flags))
    factors = info.factors
    if not factors or "" in factors:
        return None
    folded = {fold(f) for f in factors}
    kept = [f for f in folded if not any(g != f and g in f for g in folded)]
    return tuple(sorted(kept))


def table(patterns: Iterable[tuple[str, int]]) -> dict[str, tuple[str, ...]]:
    """Pattern source -> its factors, for the (source, flags) pairs that have some."""
    rows: dict[str, tuple[str, ...]] = {}
    for source, flags in patterns:
        factors = required_factors(source, flags)
        if factors is not None:
            rows[source] = factors
    return rows


def render_table(patterns: Iterable[tuple[str, int]]) -> str:
    """The text of `prefilter_table.py` for these (source, flags) pairs."""
    rows = table(patterns)
    lines = [
        "# ruff: noqa: E501",
        '"""Generated by `python -m tests.support.prefilter_table` from the scanner\'s patterns',
        "(ADR 0089): pattern source -> the folded literal factors one of which each match holds.",
        "Do not edit; `tests/unit/test_scanning_prefilter.py` checks it is current. A pattern",
        'missing here (edited since) is simply compiled on first use, as before."""',
        "",
        "FACTORS: dict[str, tuple[str, ...]] = {",
    ]
    for source in sorted(rows):
        lines.append(f"    {source!r}: {rows[source]!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"
