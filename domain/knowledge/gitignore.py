"""The `.gitignore` subset the knowledge indexer honours (ADR 0048).

Supported: comments (`#`), blank lines, `!` negation, a trailing `/` (directories only), a
pattern with a `/` before its end is anchored to the directory of its `.gitignore` (a leading
`/` only anchors), `*`, `?`, `[...]` classes, `**/` (any leading directories), `/**` (all
inside) and `/**/` (zero or more directories), `\\` escapes. The last matching rule wins; a
file inside an ignored directory is never reached, as in git. Not supported: the global
excludes file, `.git/info/exclude` and trailing-space escapes.

Pure: patterns and paths are strings ("/"-separated, relative to the indexed root).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import attrs


@attrs.frozen
class IgnoreRule:
    """One pattern of the `.gitignore` in directory `base` ("" = the root)."""

    base: str
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def _class(body: str, i: int) -> tuple[str, int] | None:
    """The regex of the `[...]` class at `body[i]`, and the index after it; None: no class."""
    j = i + 1
    if j < len(body) and body[j] in "!^":
        j += 1
    if j < len(body) and body[j] == "]":
        j += 1
    while j < len(body) and body[j] != "]":
        j += 1
    if j >= len(body):
        return None
    inner = body[i + 1 : j]
    if inner[:1] in ("!", "^"):
        inner = "^" + inner[1:]
    inner = inner.replace("\\", "\\\\")
    return f"(?!/)[{inner}]", j + 1


def _translate(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i) and (i == 0 or body[i - 1] == "/"):
            out.append("(?:[^/]*/)*")
            i += 3
        elif body.startswith("**", i) and i + 2 == len(body) and (i == 0 or body[i - 1] == "/"):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            while i < len(body) and body[i] == "*":
                i += 1
            out.append("[^/]*")
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        elif body[i] == "[":
            found = _class(body, i)
            if found is None:
                out.append(re.escape("["))
                i += 1
            else:
                out.append(found[0])
                i = found[1]
        elif body[i] == "\\" and i + 1 < len(body):
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(body[i]))
            i += 1
    return "".join(out)


def parse_gitignore(text: str, base: str = "") -> tuple[IgnoreRule, ...]:
    """The rules of one `.gitignore` in directory `base`; unusable lines are skipped."""
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip(" \t\r")
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith("\\"):
            line = line[1:] if line[1:2] in ("#", "!") else line
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        try:
            regex = re.compile(_translate(line), re.DOTALL)
        except re.error:
            continue
        rules.append(IgnoreRule(base, regex, negate, dir_only, anchored))
    return tuple(rules)


def _relative(path: str, base: str) -> str | None:
    if not base:
        return path
    if path.startswith(base + "/"):
        return path[len(base) + 1 :]
    return None


def is_ignored(rules: Sequence[IgnoreRule], path: str, *, is_dir: bool) -> bool:
    """Whether `path` (relative to the indexed root) is ignored by `rules` (in file order,
    outer directories first): the last rule that matches decides."""
    ignored = False
    name = path.rsplit("/", 1)[-1]
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        relative = _relative(path, rule.base)
        if relative is None:
            continue
        subject = relative if rule.anchored else name
        if rule.regex.fullmatch(subject):
            ignored = not rule.negate
    return ignored


def extend(rules: Iterable[IgnoreRule], more: Iterable[IgnoreRule]) -> tuple[IgnoreRule, ...]:
    return (*rules, *more)


__all__ = ["IgnoreRule", "extend", "is_ignored", "parse_gitignore"]
