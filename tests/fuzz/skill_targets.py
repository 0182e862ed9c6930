"""Fuzz targets of the skill readers: plain functions of bytes (ADR 0009, oss-fuzz layout).

- `fuzz_skill_md`: `parse_skill(text)` raises nothing but `SkillFormatError`; what it reads is
  clean (LF only, stripped values, a revision >= 1) and renders to a SKILL.md that reads back
  as the same skill.
- `fuzz_skill_folder`: the bytes become a skill folder (a SKILL.md and support files at
  paths valid or not) and a state (no skill, or a live one). `import_folder` raises nothing but
  `SkillFolderProblem`; its events fold onto the state; nothing the content scanner refuses is
  stored; importing the rendered result again changes nothing. `person_edit` (the three-way
  merge of a folder against the state it was recorded as) never raises, and what it returns
  imports like any folder.
- `fuzz_skill_pack`: `unpack` raises nothing but `InvariantViolation`, and what it reads packs
  back to bytes that unpack to the same files.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.skills.body import clean_body
from pi_hermes_memory.domain.skills.bundle import pack, unpack
from pi_hermes_memory.domain.skills.checks import scan_long
from pi_hermes_memory.domain.skills.hand_edits import import_folder, person_edit
from pi_hermes_memory.domain.skills.skill import SkillState, fold, skill_stream
from pi_hermes_memory.domain.skills.skill_md import (
    SKILL_FILE,
    SkillFormatError,
    clean_extra,
    parse_skill,
    render_skill,
)
from pi_hermes_memory.errors import SkillFolderProblem

__all__ = [
    "SKILL_PATHS",
    "check_skill_folder",
    "check_skill_md",
    "folder_of",
    "fuzz_skill_folder",
    "fuzz_skill_md",
    "fuzz_skill_pack",
    "live_skill",
]

T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
STREAM = skill_stream("project:web:deploy")
#: support paths the fuzzer picks by number (valid ones, and ones a skill may not hold)
SKILL_PATHS = (
    "references/a.md",
    "references/deep/b.md",
    "scripts/run.sh",
    "templates/t.txt",
    "assets/x.bin",
    "README.md",
    "references/.hidden",
    "references/SKILL.md",
    "notes/c.md",
)


def live_skill() -> SkillState:
    """A skill with a support file, as the fuzzed folders' counterpart."""
    empty = SkillState.empty(STREAM)
    text = "---\nname: deploy\ndescription: Deploy the site\nlicense: MIT\n---\n\n## Steps\n\nGo.\n"
    events = import_folder(
        empty,
        {SKILL_FILE: text.encode(), "references/a.md": b"notes"},
        at=T0,
        where="w",
    ).events
    return fold(empty, events)


# --- SKILL.md ---------------------------------------------------------------------------------


def fuzz_skill_md(data: bytes) -> None:
    check_skill_md(data.decode("utf-8", errors="replace"))


def check_skill_md(text: str) -> None:
    try:
        parsed = parse_skill(text)
    except SkillFormatError:
        return
    assert parsed.revision >= 1
    assert parsed.body == clean_body(parsed.body)
    assert parsed.extra_frontmatter == clean_extra(parsed.extra_frontmatter)
    for value in (parsed.name, parsed.display_name, parsed.description):
        assert value is None or ("\r" not in value and value == value.strip()), repr(value)
    state = attrs.evolve(
        SkillState.empty(STREAM),
        display_name=parsed.display_name,
        description=parsed.description or "",
        body=parsed.body,
        extra_frontmatter=parsed.extra_frontmatter,
        revision=parsed.revision,
        exists=True,
    )
    once = render_skill(state)
    again = parse_skill(once)
    assert again.revision == parsed.revision
    assert (
        render_skill(
            attrs.evolve(
                state,
                display_name=again.display_name,
                description=again.description or "",
                body=again.body,
                extra_frontmatter=again.extra_frontmatter,
            )
        )
        == once
    )


# --- a skill folder -----------------------------------------------------------------------------


def folder_of(data: bytes) -> tuple[SkillState, dict[str, bytes]]:
    """A state and a folder from bytes: the first byte picks the state (bit 0) and whether
    there is a SKILL.md (bit 1); the rest, split at NUL bytes, is the SKILL.md and then
    (path, content) pairs, a path's first byte choosing one of `SKILL_PATHS` (below 0x80) or
    being the path itself."""
    head, rest = (data[0], data[1:]) if data else (0, b"")
    state = live_skill() if head & 1 else SkillState.empty(STREAM)
    pieces = rest.split(b"\0")
    files: dict[str, bytes] = {}
    if not head & 2:
        files[SKILL_FILE] = pieces[0]
    pairs = pieces[1:]
    for raw_path, content in zip(pairs[::2], pairs[1::2], strict=False):
        if raw_path[:1] and raw_path[0] < 0x80:
            path = SKILL_PATHS[raw_path[0] % len(SKILL_PATHS)]
        else:
            path = raw_path.decode("utf-8", "surrogateescape") or "references/empty"
        files[path] = content
    return state, files


def fuzz_skill_folder(data: bytes) -> None:
    state, files = folder_of(data)
    check_skill_folder(state, files)


def check_skill_folder(state: SkillState, files: Mapping[str, bytes]) -> None:
    after = _imports(state, files)
    if after is not None and after.exists:
        rendered = {path: text.encode() for path, text in after.files}
        rendered[SKILL_FILE] = render_skill(after).encode()
        again = import_folder(after, rendered, at=T0, where="w")
        assert again.events == (), again.events
        assert person_edit(after, after, rendered) is None
    for base in (SkillState.empty(STREAM), live_skill()):
        merged = person_edit(base, state, files)
        if merged is not None:
            _imports(state, merged)


def _imports(state: SkillState, files: Mapping[str, bytes]) -> SkillState | None:
    try:
        result = import_folder(state, files, at=T0, where="w")
    except SkillFolderProblem:
        return None
    after = fold(state, result.events)
    assert after.version == state.version + len(result.events)
    stored = [after.display_name or "", after.description, after.body, after.extra_frontmatter]
    for text in (*stored, *(content for _, content in after.files)):
        assert not scan_long(text).blocked, text
    return after


# --- the packed form --------------------------------------------------------------------------


def fuzz_skill_pack(data: bytes) -> None:
    try:
        files = unpack(data)
    except InvariantViolation:
        return
    assert unpack(pack(files)) == files
