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

`compile_all()` and `forget_compiled()` exist for the property test that compares a scanner
whose patterns are all compiled up front (the old, eager behaviour) with a cold one.
Pure: standard library only.
"""

from __future__ import annotations

import re
from typing import Any, cast

__all__ = ["compile_all", "compiled_count", "forget_compiled", "lazy_compile", "pattern_count"]

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


class _LazyPattern:
    """A pattern compiled by its first use. After that, attribute lookups find the compiled
    pattern's bound methods in the instance dict: no extra call per use."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags
        _ALL.append(self)

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
