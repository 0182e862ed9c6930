"""The format of STANDING.md, the user's hand-written standing instructions (ADR 0037).

One entry per Markdown list item: a line starting with `- `, `* `, `+ ` or a number and
`. `/`) `. Indented lines continue the item above them. Headings (`#`), blank lines and HTML
comments (`<!-- ... -->`, also over several lines) are ignored, so a person can title and
annotate the file. Nothing in the file is ever rewritten: the parser is lenient and says what
it did, a plain text line outside a list becomes its own entry (with a warning), and an
unclosed comment hides nothing (with a warning).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

_ITEM: Final = re.compile(r"^(?:[-*+]|\d{1,9}[.)])(?:\s+|$)")
_HEADING: Final = re.compile(r"^#{1,6}(?:\s|$)")


@attrs.frozen(kw_only=True)
class StandingFile:
    entries: tuple[str, ...]
    warnings: tuple[str, ...]


_COMMENT: Final = re.compile(r"<!--.*?-->", re.DOTALL)


def _strip_comments(text: str, name: str, warnings: list[str]) -> str:
    """Closed comments blanked out, line breaks kept (line numbers stay true). An unclosed
    `<!--` hides nothing: the text after it is read as instructions, with a warning."""
    bare = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    opened = bare.find("<!--")
    if opened >= 0:
        line = bare.count("\n", 0, opened) + 1
        warnings.append(
            f"{name}: the comment opened on line {line} is never closed (-->); the text after "
            "it was read as instructions"
        )
    return bare


def parse_standing(text: str, *, name: str = "STANDING.md") -> StandingFile:
    """The entries of a STANDING.md, in file order, each on one line (inner whitespace
    collapsed), and the warnings about lines it had to guess about."""
    warnings: list[str] = []
    lines = _strip_comments(text.lstrip("\ufeff"), name, warnings).splitlines()
    entries: list[list[str]] = []
    loose: list[int] = []
    in_item = False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            in_item = False  # a blank line ends an item
            continue
        stripped = line.strip()
        if _HEADING.match(stripped) and not line[:1].isspace():
            in_item = False
            continue
        item = _ITEM.match(stripped)
        if item and not line[:1].isspace():
            entries.append([stripped[item.end() :]])
            in_item = True
        elif line[:1].isspace() and in_item:
            entries[-1].append(stripped)
        elif item:  # an indented item: a nested list item reads as its own entry
            entries.append([stripped[item.end() :]])
            in_item = True
        else:
            entries.append([stripped])
            in_item = True
            loose.append(number)
    if loose:
        shown = ", ".join(map(str, loose[:5])) + (" ..." if len(loose) > 5 else "")
        warnings.append(
            f"{name}: line{'s' if len(loose) > 1 else ''} {shown} "
            f"{'are' if len(loose) > 1 else 'is'} not a list item (- ...); each was read as "
            "its own instruction"
        )
    texts = tuple(" ".join(" ".join(parts).split()) for parts in entries)
    return StandingFile(entries=tuple(t for t in texts if t), warnings=tuple(warnings))
