"""The small YAML subset of SKILL.md frontmatter: a tolerant reader and a safe scalar writer.

Only what a frontmatter needs: top-level ``key: value`` entries whose values are plain,
single-quoted, double-quoted (JSON-style escapes) or block (``|``/``>``) scalars. Anything else
(nested mappings, lists, flow collections, anchors) is never interpreted: the reader hands back
the raw lines of every entry so the caller can keep the keys it does not own verbatim.

PyYAML is not used (the domain imports the standard library and attrs only); every malformed
input ends in one `SkillFormatError`, never another exception.
"""

from __future__ import annotations

import re

import attrs
from pi_hermes_memory.domain.errors import SkillFormatError


@attrs.frozen(kw_only=True)
class Entry:
    """One top-level frontmatter entry: its key (None for stray lines before any key), the
    comment/blank lines just above it (`lead`) and its own lines (the key line first)."""

    key: str | None
    lead: tuple[str, ...]
    lines: tuple[str, ...]


_FENCE = re.compile(r"---[ \t]*")


def split_frontmatter(text: str) -> tuple[list[str], str]:
    """(frontmatter lines, body text) of a SKILL.md text (BOM, CRLF and CR tolerated)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start == len(lines) or not _FENCE.fullmatch(lines[start]):
        raise SkillFormatError(
            "the file has no YAML frontmatter: its first line must be '---', followed by "
            "'name:' and 'description:' lines and a closing '---' line"
        )
    for end in range(start + 1, len(lines)):
        if _FENCE.fullmatch(lines[end]):
            return lines[start + 1 : end], "\n".join(lines[end + 1 :])
    raise SkillFormatError("the YAML frontmatter is not closed: add a line holding only '---'")


_KEY_QUOTED = re.compile(r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*')[ \t]*:(?=[ \t]|$)")
#: the colon that ends a plain key (searched, not matched lazily: linear on long lines)
_KEY_COLON = re.compile(r":(?=[ \t]|$)")
_NOT_KEY_START = frozenset(" \t#'\"-?:,[]{}&*!|>%@`")


def _key_of(line: str) -> tuple[str, str] | None:
    """(key, rest of the line after the colon) when `line` starts a top-level entry."""
    if not line or line[0] in _NOT_KEY_START:
        match = _KEY_QUOTED.match(line)
        if match is None:
            return None
        raw = match.group(1)
        if raw[0] == "'":
            return raw[1:-1].replace("''", "'"), line[match.end() :]
        try:
            key = _double_quoted(raw, "a key")[0]
        except SkillFormatError:
            key = raw[1:-1]
        return key, line[match.end() :]
    colon = _KEY_COLON.search(line)
    if colon is None:
        return None
    return line[: colon.start()].rstrip(" \t"), line[colon.end() :]


def _is_blank_or_comment(line: str) -> bool:
    return not line.strip() or line.startswith("#")


def entries(lines: list[str]) -> list[Entry]:
    """Split frontmatter lines into top-level entries.

    A line at column 0 of the form ``key: ...`` starts an entry; indented lines, list items
    at column 0 (``- x``, a sequence under the key above) and other stray lines continue it.
    Blank lines and column-0 comments belong to the next entry (its `lead`), unless more
    lines of the current entry follow them (a blank line inside a block scalar)."""
    out: list[Entry] = []
    key: str | None = None
    lead: list[str] = []
    own: list[str] = []
    pending: list[str] = []
    started = False
    for line in lines:
        if _is_blank_or_comment(line):
            pending.append(line)
            continue
        found = _key_of(line) if line[0] not in " \t" else None
        if found is None:  # a continuation line (or a stray line before any key)
            own.extend(pending)
            pending = []
            own.append(line)
            started = True
            continue
        if started:
            out.append(Entry(key=key, lead=tuple(lead), lines=tuple(own)))
        key, lead, own, pending, started = found[0], pending, [line], [], True
    if started:
        out.append(Entry(key=key, lead=tuple(lead), lines=tuple(own)))
    if pending:
        out.append(Entry(key=None, lead=tuple(pending), lines=()))
    return out


def rest_of(entry: Entry) -> str:
    """The text after ``key:`` on the entry's key line."""
    found = _key_of(entry.lines[0]) if entry.lines else None
    return found[1] if found else ""


# -- scalars -------------------------------------------------------------------------------

_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BLOCK_HEADER = re.compile(r"([|>])(?:([+-])([1-9])?|([1-9])([+-])?)?[ \t]*(?:#.*)?")
_SIMPLE_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX = re.compile(r"[0-9A-Fa-f]+")


def scalar(entry: Entry) -> str | None:
    """The string value of an entry (None for a null or empty value).

    Values that are not scalars (a nested mapping, a flow list) come back as their raw text
    folded like a plain scalar: the caller owns only scalar keys."""
    first = rest_of(entry).strip()
    more = list(entry.lines[1:])
    label = repr(entry.key)
    if first.startswith('"'):
        return _double_quoted("\n".join([first, *more]), label)[0]
    if first.startswith("'"):
        return _single_quoted("\n".join([first, *more]), label)
    header = _BLOCK_HEADER.fullmatch(first)
    if header is not None:
        chomp = header.group(2) or header.group(5) or ""
        indent = int(header.group(3) or header.group(4) or 0)
        return _block(more, literal=header.group(1) == "|", chomp=chomp, indent=indent)
    value = _plain([first, *more])
    return None if value in _NULLS else value


def _after_quote(tail: str, label: str) -> None:
    tail = tail.strip()
    if tail and not tail.startswith("#"):
        raise SkillFormatError(f"the value of {label} has text after its closing quote")


def _fold_break(text: str, i: int, out: list[str]) -> int:
    """Fold the raw line break at text[i] inside a quoted scalar; returns the next index."""
    while out and out[-1] in (" ", "\t"):
        out.pop()
    blanks = 0
    i += 1
    while True:
        j = i
        while j < len(text) and text[j] in " \t":
            j += 1
        if j < len(text) and text[j] == "\n":
            blanks += 1
            i = j + 1
            continue
        out.append("\n" * blanks if blanks else " ")
        return j


def _double_quoted(text: str, label: str) -> tuple[str, int]:
    """Decode the double-quoted scalar at the start of `text`; (value, index after it)."""
    out: list[str] = []
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            _after_quote(text[i + 1 :], label)
            return "".join(out), i + 1
        if ch == "\n":
            i = _fold_break(text, i, out)
            continue
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= len(text):
            break
        esc = text[i + 1]
        if esc == "\n":  # an escaped line break joins the lines without a space
            i += 2
            while i < len(text) and text[i] in " \t":
                i += 1
            continue
        if esc in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[esc])
            i += 2
            continue
        width = _HEX_ESCAPES.get(esc)
        digits = text[i + 2 : i + 2 + width] if width else ""
        if not width or len(digits) != width or not _HEX.fullmatch(digits):
            raise SkillFormatError(f"the value of {label} has an unknown escape '\\{esc}'")
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise SkillFormatError(f"the value of {label} escapes a code point beyond U+10FFFF")
        out.append(chr(code))
        i += 2 + width
    raise SkillFormatError(f"the value of {label} has an unclosed double quote")


def _single_quoted(text: str, label: str) -> str:
    out: list[str] = []
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == "'":
            if text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            _after_quote(text[i + 1 :], label)
            return "".join(out)
        if ch == "\n":
            i = _fold_break(text, i, out)
            continue
        out.append(ch)
        i += 1
    raise SkillFormatError(f"the value of {label} has an unclosed single quote")


_COMMENT = re.compile(r"(?:^|[ \t])#")


def _plain(lines: list[str]) -> str:
    """A plain (possibly multi-line) scalar: lines folded with spaces, blank lines kept as
    line breaks; a comment ends it."""
    parts: list[str] = []
    blanks = 0
    for line in lines:
        comment = _COMMENT.search(line)
        piece = (line[: comment.start()] if comment else line).strip()
        if piece:
            if parts:
                parts.append("\n" * blanks if blanks else " ")
            parts.append(piece)
            blanks = 0
        elif parts and not comment:
            blanks += 1
        if comment:
            break
    return "".join(parts)


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list[str], *, literal: bool, chomp: str, indent: int) -> str:
    """A `|` (literal) or `>` (folded) block scalar with its chomping indicator."""
    if not indent:
        indent = next((_indent_of(x) for x in lines if x.strip()), 0)
    body = [x[min(indent, _indent_of(x)) :] if x.strip() else "" for x in lines]
    while body and not body[-1]:
        body.pop()
    trailing = len(lines) - len(body)
    if literal:
        text = "\n".join(body)
    else:
        parts: list[str] = []
        prev: str | None = None
        blanks = 0
        for line in body:
            if not line:
                blanks += 1
                continue
            kind = "more" if line[0] in " \t" else "normal"
            if prev is None:
                parts.append("\n" * blanks)
            elif prev == "normal" and kind == "normal":
                parts.append("\n" * blanks if blanks else " ")
            else:
                parts.append("\n" * (blanks + 1))
            parts.append(line)
            prev, blanks = kind, 0
        text = "".join(parts)
    if not text or chomp == "-":
        return text
    return text + "\n" * (1 + trailing if chomp == "+" else 1)


# -- writing -------------------------------------------------------------------------------

_SPECIAL_WORDS = frozenset(
    {"null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".nan", ".inf"}
)
_BAD_FIRST = frozenset("-?:,[]{}#&*!|>'\"%@`+.0123456789 \t")


def _printable(ch: str) -> bool:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return False
    return not (0xD800 <= code <= 0xDFFF or ch in "\u2028\u2029\ufeff\ufffe\uffff")


def _needs_quotes(value: str) -> bool:
    return (
        not value
        or value[0] in _BAD_FIRST
        or value != value.strip()
        or value.lower() in _SPECIAL_WORDS
        or ": " in value
        or " #" in value
        or value.endswith(":")
        or not all(_printable(ch) for ch in value)
    )


_WRITE_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote(value: str) -> str:
    """`value` as a YAML scalar on one line: plain when that reads back unchanged, else
    double-quoted with JSON-style escapes (newlines become ``\\n``)."""
    if not _needs_quotes(value):
        return value
    out: list[str] = ['"']
    for ch in value:
        if ch in _WRITE_ESCAPES:
            out.append(_WRITE_ESCAPES[ch])
        elif _printable(ch):
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


__all__ = [
    "Entry",
    "SkillFormatError",
    "entries",
    "quote",
    "rest_of",
    "scalar",
    "split_frontmatter",
]
