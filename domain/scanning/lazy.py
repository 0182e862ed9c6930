"""Regexes compiled when first used (issue 29: the first write of a new process).

The scanner's rule tables hold a few hundred bounded regexes; compiling them all when the
scanner is imported cost ~180 ms of CPU in every process that writes once (a hook, the CLI),
while a benign text runs only the few rules whose keywords it contains (the prefilter). A
`lazy_compile` pattern keeps its source (`.pattern`, read when tables compose patterns) and
compiles on the first call of anything else, with the same flags: the same regex, the same
matches. Pure: standard library only.
"""

from __future__ import annotations

import re
import threading
from typing import Any, cast

__all__ = ["lazy_compile"]

_LOCK = threading.Lock()


class _LazyPattern:
    __slots__ = ("_compiled", "_flags", "pattern")

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            with _LOCK:
                compiled = self._compiled
                if compiled is None:
                    compiled = self._compiled = re.compile(self.pattern, self._flags)
        return compiled

    def search(self, string: str, *args: Any) -> re.Match[str] | None:
        return self._get().search(string, *args)

    def match(self, string: str, *args: Any) -> re.Match[str] | None:
        return self._get().match(string, *args)

    def fullmatch(self, string: str, *args: Any) -> re.Match[str] | None:
        return self._get().fullmatch(string, *args)

    def finditer(self, string: str, *args: Any) -> Any:
        return self._get().finditer(string, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags})"


def lazy_compile(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, compiled on first use (typed as the pattern it becomes)."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, int(flags)))
