"""Regular expressions of the scanner, compiled on first use (issue 29, ADR 0080).

The rule tables hold a few hundred patterns; compiling them all at import cost ~90 ms of every
process that scans one string (the CLI echoing a search query, a hook adding one entry). Most
rules are gated by keywords (the prefilter in `scanner.py`), so for a typical text only a few
patterns ever run. `lazy_compile(source, flags)` returns a stand-in that compiles on its first
use and then answers with the compiled pattern's own bound methods, so the result of every
call is exactly that of `re.compile(source, flags)` (same source, same flags, same engine).

The stand-in is typed as `re.Pattern[str]` because it is one in behaviour: code may call its
methods and read `pattern`, `flags`, `groups`, `groupindex`; it must not pass it to `re.sub(...)`
and friends or test `isinstance(p, re.Pattern)` (nothing in `domain/scanning` does).

Before it compiles, a stand-in also answers `search`, `match`, `fullmatch`, `finditer` and
`findall` for a text that cannot hold a match without compiling at all (ADR 0089): every match
contains one of the pattern's literal factors (`prefilter.required_factors`, stored in the
generated `prefilter_table.py`), so a text whose case-folded form holds none of them has no
match. Ten injection rules have no keyword gate; their large multilingual patterns are what a
plain text (a search query's echo check, an ordinary new fact) used to compile.

`compile_all()` and `forget_compiled()` exist for the property test that compares a scanner
whose patterns are all compiled up front (the old, eager behaviour) with a cold one.
Pure: standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, cast

from pi_hermes_memory.domain.scanning.prefilter import fold, forget_folded

__all__ = [
    "cannot_match",
    "compile_all",
    "compiled_count",
    "forget_compiled",
    "forget_texts",
    "lazy_compile",
    "pattern_count",
]

#: the attributes a compiled pattern answers for; copied onto the stand-in when it compiles
_DELEGATED = (
    "search",
    "match",
    "fullmatch",
    "finditer",
    "findall",
    "sub",
    "subn",
    "split",
    "scanner",
    "flags",
    "groups",
    "groupindex",
)

_ALL: list[_LazyPattern] = []
_UNSET: Any = object()
_TABLE: dict[str, tuple[str, ...]] | None = None
#: the last text found to hold none of some stand-ins' factors, and those stand-ins: a finder
#: that calls one pattern per anchor over a 64 KiB text must not re-read the text each time
_ABSENT_TEXT: str | None = None
_ABSENT: set[int] = set()


def _factors_of(source: str, flags: int) -> tuple[str, ...] | None:
    global _TABLE
    if flags & re.VERBOSE:
        return None
    if _TABLE is None:
        from pi_hermes_memory.domain.scanning.prefilter_table import FACTORS

        _TABLE = FACTORS
    return _TABLE.get(source)


class _LazyPattern:
    """A pattern compiled by its first use. After that, attribute lookups find the compiled
    pattern's bound methods in the instance dict: no extra call per use."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags
        self._factors: tuple[str, ...] | None = _UNSET
        _ALL.append(self)

    def _cannot_match(self, string: object) -> bool:
        """True when no part of `string` can match: it holds none of the literal factors."""
        factors = self._factors
        if factors is _UNSET:
            factors = self._factors = _factors_of(self.pattern, self._flags)
        if factors is None or not isinstance(string, str):
            return False
        global _ABSENT_TEXT
        if string is _ABSENT_TEXT and id(self) in _ABSENT:
            return True
        folded = fold(string)
        if any(f in folded for f in factors):
            return False
        if string is not _ABSENT_TEXT:
            _ABSENT_TEXT = string
            _ABSENT.clear()
        _ABSENT.add(id(self))
        return True

    # Reached only before the pattern compiles (then the instance dict holds the compiled
    # pattern's own methods); a `pos`/`endpos` window of a text without a factor has none either.
    def search(self, string: str, *args: Any, **kwargs: Any) -> re.Match[str] | None:
        if self._cannot_match(string):
            return None
        return self._compile().search(string, *args, **kwargs)

    def match(self, string: str, *args: Any, **kwargs: Any) -> re.Match[str] | None:
        if self._cannot_match(string):
            return None
        return self._compile().match(string, *args, **kwargs)

    def fullmatch(self, string: str, *args: Any, **kwargs: Any) -> re.Match[str] | None:
        if self._cannot_match(string):
            return None
        return self._compile().fullmatch(string, *args, **kwargs)

    def finditer(self, string: str, *args: Any, **kwargs: Any) -> Iterator[re.Match[str]]:
        if self._cannot_match(string):
            return iter(())
        return self._compile().finditer(string, *args, **kwargs)

    def findall(self, string: str, *args: Any, **kwargs: Any) -> list[Any]:
        if self._cannot_match(string):
            return []
        return self._compile().findall(string, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # reached only for a name not (yet) in the instance dict
        if name not in _DELEGATED:
            raise AttributeError(name)
        return getattr(self._compile(), name)

    def _compile(self) -> re.Pattern[str]:
        compiled = re.compile(self.pattern, self._flags)
        for name in _DELEGATED:
            setattr(self, name, getattr(compiled, name))
        return compiled

    def _forget(self) -> None:
        for name in _DELEGATED:
            self.__dict__.pop(name, None)

    @property
    def compiled(self) -> bool:
        return "search" in self.__dict__

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags!r})"


def lazy_compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, deferred to the pattern's first use."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, int(flags)))


def cannot_match(pattern: re.Pattern[str], text: str) -> bool:
    """True when `pattern` (from `lazy_compile`) has no match anywhere in `text`, known from
    its literal factors alone, without compiling it (ADR 0100); False when it may match, or
    is not a lazy pattern."""
    return isinstance(pattern, _LazyPattern) and pattern._cannot_match(text)


def forget_texts() -> None:
    """Drop the references the prefilter keeps to the last text it read (the scanner calls
    this when a scan ends, so a refused secret is not kept alive by a cache)."""
    global _ABSENT_TEXT
    _ABSENT_TEXT = None
    _ABSENT.clear()
    forget_folded()


def pattern_count() -> int:
    return len(_ALL)


def compiled_count() -> int:
    """How many of the patterns have been compiled in this process."""
    return sum(1 for p in _ALL if p.compiled)


def compile_all() -> None:
    """Compile every pattern now (the eager behaviour of the tables before ADR 0080)."""
    for p in _ALL:
        if not p.compiled:
            p._compile()


def forget_compiled() -> None:
    """Drop every compiled pattern: the next use of each compiles it again (tests)."""
    for p in _ALL:
        p._forget()
