"""Shared checks of the skill decisions: text limits, the content scan, refusals.

Every text a skill decision would write passes `scan_fields` first; a refusal names the
scanner's finding and the field, never the text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import attrs
from pi_hermes_memory.domain.scanning.scanner import Finding, ScanResult, Severity, scan
from pi_hermes_memory.domain.skills.skill import SkillDecision, SkillState
from pi_hermes_memory.domain.status import Status

MAX_NAME_CHARS = 200
#: the Agent Skills limit on `description`
MAX_DESCRIPTION_CHARS = 1024
MAX_BODY_CHARS = 60_000
MAX_SECTION_CHARS = 100
#: texts longer than this are scanned in windows of whole lines (NFKC may grow a window, and
#: the scanner refuses more than 65,536 characters)
_SCAN_WINDOW = 32_768


def refuse(status: Status, message: str, skill_id: str | None = None) -> SkillDecision:
    return SkillDecision(status=status, message=message, skill_id=skill_id)


def missing(state: SkillState) -> SkillDecision:
    what = "was deleted" if state.deleted else "does not exist"
    return refuse(Status.NOT_FOUND, f"Skill {state.skill_id} {what}.", state.skill_id)


def has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text)


def scan_long(text: str) -> ScanResult:
    """The scan of a text of any length: whole lines in windows the scanner accepts, plus
    the seams between windows (a secret split across two windows is still seen)."""
    if len(text) <= _SCAN_WINDOW:
        return scan(text)
    limit = _SCAN_WINDOW
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + limit, len(text))
        if end < len(text):
            cut = text.rfind("\n", start, end)
            end = cut + 1 if cut > start else end
        pieces.append(text[start:end])
        start = end
    results = [scan(piece) for piece in pieces]
    seams = [scan(a[-2048:] + b[:2048]) for a, b in itertools.pairwise(pieces)]
    findings: list[Finding] = []
    offset = 0
    for piece, result in zip(pieces, results, strict=True):
        findings.extend(
            attrs.evolve(f, offset=None if f.offset is None else f.offset + offset)
            for f in result.findings
        )
        offset += len(piece)
    findings.extend(
        attrs.evolve(f, offset=None)
        for seam in seams
        for f in seam.findings
        if f.severity is Severity.BLOCK
    )
    stripped = tuple(dict.fromkeys(s for r in results for s in r.stripped))
    return ScanResult(
        text="".join(r.text for r in results), findings=tuple(findings), stripped=stripped
    )


def scan_fields(
    fields: Sequence[tuple[str, str]],
) -> tuple[list[str], tuple[str, ...]] | SkillDecision:
    """The scanner's cleaned text of each (label, text), and its notes; or the refusal."""
    texts: list[str] = []
    notes: list[str] = []
    for label, text in fields:
        result = scan_long(text)
        if result.blocked:
            return refuse(Status.BLOCKED, f"The {label} was refused. {result.message()}")
        if result.warnings or result.stripped:
            notes.append(f"{label}: {result.message()}")
        texts.append(result.text)
    return texts, tuple(notes)


def name_problem(name: str) -> str | None:
    if not name.strip():
        return "a name is required"
    if has_control(name):
        return "the name must be one line without control characters"
    if len(name.strip()) > MAX_NAME_CHARS:
        return f"the name is longer than {MAX_NAME_CHARS} characters"
    return None


def description_problem(description: str) -> str | None:
    if not description:
        return "a description is required (one or two sentences: what the skill does, when)"
    if len(description) > MAX_DESCRIPTION_CHARS:
        return f"the description is longer than {MAX_DESCRIPTION_CHARS} characters"
    return None


def body_problem(body: str) -> str | None:
    if not body:
        return "the body is empty"
    if len(body) > MAX_BODY_CHARS:
        return f"the body is longer than {MAX_BODY_CHARS:,} characters; move detail to references/"
    return None


__all__ = [
    "MAX_BODY_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SECTION_CHARS",
    "body_problem",
    "description_problem",
    "has_control",
    "missing",
    "name_problem",
    "refuse",
    "scan_fields",
    "scan_long",
]
