"""The Markdown body of a SKILL.md: the structured sections and the patch rules.

A structured body has four level-2 sections::

    ## When to Use      free text
    ## Procedure        numbered steps (1. 2. ...)
    ## Pitfalls         bullets ("- No notable pitfalls recorded yet." when there are none)
    ## Verification     numbered steps

A patch replaces one section's content. Headers inside fenced code blocks (``` or ~~~) are
code, not headers: they neither delimit sections nor count as a header in patch content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

WHEN_TO_USE = "When to Use"
PROCEDURE = "Procedure"
PITFALLS = "Pitfalls"
VERIFICATION = "Verification"
CANONICAL_SECTIONS = (WHEN_TO_USE, PROCEDURE, PITFALLS, VERIFICATION)
#: sections whose list content is numbered; every other section gets bullets
NUMBERED_SECTIONS = frozenset({PROCEDURE.casefold(), VERIFICATION.casefold()})
NO_PITFALLS = "No notable pitfalls recorded yet."
NO_VERIFICATION = "No verification steps recorded yet."

_HEADER = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def clean_body(text: str) -> str:
    """The stored form of a body: LF line ends, no leading blank lines, no trailing space."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    return "\n".join(lines[start:]).rstrip()


def _code_lines(lines: Sequence[str]) -> list[bool]:
    """Which lines are inside a fenced code block (the fence lines included)."""
    flags: list[bool] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            flags.append(fence is not None)
        else:
            flags.append(True)
            if (
                match
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
                and not line[match.end() :].strip()
            ):
                fence = None
    return flags


def _header(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX header line; the optional closing #'s are dropped."""
    match = _HEADER.fullmatch(line)
    if match is None:
        return None
    title = (match.group(2) or "").strip(" \t")
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):  # a closing sequence: "## A ##"
        title = bare.rstrip(" \t")
    return len(match.group(1)), title


def has_header_line(text: str) -> bool:
    """Whether `text` holds a Markdown header line (``#`` .. ``######`` + space) outside code."""
    lines = text.split("\n")
    return any(
        not code and _header(line) is not None
        for line, code in zip(lines, _code_lines(lines), strict=True)
    )


def section_span(body: str, name: str) -> tuple[int, int] | None:
    """(header line, end line) of the first ``## name`` section (case-insensitive); the
    section ends before the next level-1 or level-2 header outside code."""
    lines = body.split("\n")
    code = _code_lines(lines)
    wanted = name.casefold()
    start: int | None = None
    for i, line in enumerate(lines):
        if code[i]:
            continue
        found = _header(line)
        if found is None:
            continue
        level, title = found
        if start is not None and level <= 2:
            return start, i
        if start is None and level == 2 and title.casefold() == wanted:
            start = i
    return None if start is None else (start, len(lines))


def section_names(body: str) -> tuple[str, ...]:
    lines = body.split("\n")
    code = _code_lines(lines)
    names: list[str] = []
    for line, in_code in zip(lines, code, strict=True):
        found = None if in_code else _header(line)
        if found is not None and found[0] == 2:
            names.append(found[1])
    return tuple(names)


def render_items(items: Sequence[str], *, numbered: bool) -> str:
    """Items as a Markdown list; an item's later lines are indented under its marker."""
    out: list[str] = []
    for n, item in enumerate(items, start=1):
        marker = f"{n}. " if numbered else "- "
        first, *rest = clean_body(item).split("\n")
        out.append(marker + first)
        out.extend((" " * len(marker) + line) if line.strip() else "" for line in rest)
    return "\n".join(out)


def build_body(
    when_to_use: str,
    procedure_steps: Sequence[str],
    pitfalls: Sequence[str] = (),
    verification_steps: Sequence[str] = (),
) -> str:
    """The structured body. Inputs are expected to be checked (`structured_problem`)."""
    pitfall_text = render_items(pitfalls, numbered=False) if pitfalls else f"- {NO_PITFALLS}"
    checks = (
        render_items(verification_steps, numbered=True)
        if verification_steps
        else f"- {NO_VERIFICATION}"
    )
    return "\n\n".join(
        [
            f"## {WHEN_TO_USE}",
            clean_body(when_to_use),
            f"## {PROCEDURE}",
            render_items(procedure_steps, numbered=True),
            f"## {PITFALLS}",
            pitfall_text,
            f"## {VERIFICATION}",
            checks,
        ]
    )


def structured_problem(
    when_to_use: str | None,
    procedure_steps: Sequence[str],
    pitfalls: Sequence[str],
    verification_steps: Sequence[str],
) -> str | None:
    """Why the structured fields cannot make a body, or None."""
    if when_to_use is None or not when_to_use.strip():
        return "when_to_use is required with structured fields (say when the skill applies)"
    if not procedure_steps:
        return "procedure_steps needs at least one step"
    if has_header_line(when_to_use):
        return "when_to_use cannot hold a Markdown header line ('#' .. '######')"
    for field, items in (
        ("procedure_steps", procedure_steps),
        ("pitfalls", pitfalls),
        ("verification_steps", verification_steps),
    ):
        for n, item in enumerate(items, start=1):
            if not item.strip():
                return f"{field} item {n} is empty"
            if has_header_line(item):
                return f"{field} item {n} cannot hold a Markdown header line ('#' .. '######')"
    return None


def section_title(name: str) -> str:
    """The header text for a section: the canonical spelling of a known section, else `name`
    without leading '#'s."""
    bare = name.strip().lstrip("#").strip()
    for canonical in CANONICAL_SECTIONS:
        if canonical.casefold() == bare.casefold():
            return canonical
    return bare


def patch_text(section: str, content: str | Sequence[str]) -> tuple[str | None, str]:
    """(section text, problem): the Markdown a patch puts under `section`.

    A list (or content that is a JSON array of strings) becomes a numbered list for Procedure
    and Verification, bullets elsewhere. Blank content, a JSON object or a non-string array,
    and content holding a header line are refused."""
    items: Sequence[str] | None = None
    if isinstance(content, str):
        stripped = content.strip()
        if stripped[:1] in ("[", "{"):
            try:
                decoded = json.loads(stripped)
            except (ValueError, RecursionError):
                decoded = None  # Markdown that merely starts with '[' (a link, a checkbox)
            if isinstance(decoded, dict):
                return None, "content is a JSON object: give Markdown text or a list of strings"
            if isinstance(decoded, list):
                if not all(isinstance(x, str) for x in decoded):
                    return None, "content is a JSON array that holds something other than strings"
                items = decoded
    else:
        items = content
    if items is not None:
        if not items or not all(x.strip() for x in items):
            return None, "content is an empty list or holds an empty item"
        if any(has_header_line(x) for x in items):
            return None, "content cannot hold a Markdown header line ('#' .. '######')"
        numbered = section_title(section).casefold() in NUMBERED_SECTIONS
        return render_items(items, numbered=numbered), ""
    text = clean_body(content) if isinstance(content, str) else ""
    if not text:
        return None, "content is empty: give the new text of the section"
    if has_header_line(text):
        return None, (
            "content cannot hold a Markdown header line ('#' .. '######'): patch one section "
            "at a time, or use update to replace the whole body"
        )
    return text, ""


def replace_section(body: str, section: str, text: str) -> str:
    """`body` with the content of `## section` replaced by `text` (appended when missing)."""
    title = section_title(section)
    span = section_span(body, title)
    if span is None:
        head = clean_body(body)
        return clean_body(f"{head}\n\n## {title}\n\n{text}" if head else f"## {title}\n\n{text}")
    lines = body.split("\n")
    start, end = span
    after = lines[end:]
    return clean_body("\n".join([*lines[: start + 1], "", text, *([""] if after else []), *after]))


__all__ = [
    "CANONICAL_SECTIONS",
    "NO_PITFALLS",
    "NO_VERIFICATION",
    "NUMBERED_SECTIONS",
    "PITFALLS",
    "PROCEDURE",
    "VERIFICATION",
    "WHEN_TO_USE",
    "build_body",
    "clean_body",
    "has_header_line",
    "patch_text",
    "render_items",
    "replace_section",
    "section_names",
    "section_span",
    "section_title",
    "structured_problem",
]
