"""A skill folder changed by hand (or by another tool) as events (ADR 0030).

The folder is the person's latest word on the skill: its SKILL.md content and support files
become a `SkillCreated`/`SkillRevised` and `SkillFileWritten`/`SkillFileRemoved` of origin
`markdown`; a folder emptied by hand is a `SkillDeleted`. Text the content scanner refuses, a
SKILL.md that cannot be read, or support files without a SKILL.md are never imported: the
folder is left as it is (`SkillFolderProblem`) and nothing is written to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import attrs
from pi_hermes_memory.domain.errors import DomainError
from pi_hermes_memory.domain.events import Origin, stamp
from pi_hermes_memory.domain.skill import SkillState
from pi_hermes_memory.domain.skill_checks import scan_long
from pi_hermes_memory.domain.skill_events import (
    SkillCreated,
    SkillDeleted,
    SkillEvent,
    SkillFileRemoved,
    SkillFileWritten,
    SkillRevised,
)
from pi_hermes_memory.domain.skill_md import SKILL_FILE, ParsedSkill, parse_skill
from pi_hermes_memory.domain.skill_rules import support_path_problem
from pi_hermes_memory.domain.skill_yaml import SkillFormatError

__all__ = ["ImportedFolder", "SkillFolderProblem", "import_folder", "interrupted_render"]


class SkillFolderProblem(DomainError):
    """The folder cannot be imported as this skill; it is left untouched."""


@attrs.frozen
class ImportedFolder:
    events: tuple[SkillEvent, ...]
    warnings: tuple[str, ...] = ()


def import_folder(
    state: SkillState, files: Mapping[str, bytes], *, at: datetime, where: str
) -> ImportedFolder:
    """The events that make `state` what the folder `files` (relative path -> bytes) holds."""
    if SKILL_FILE not in files:
        if files:
            raise SkillFolderProblem(
                f"{where} is missing while the skill's support files are there; it was left "
                "as it is. Restore SKILL.md, or delete the whole folder to delete the skill."
            )
        if not state.exists:
            return ImportedFolder(())
        return ImportedFolder(
            stamp(state.stream, state.version, [_deleted(state, at)]),
            (f"{where} was deleted by hand: skill {state.skill_id} was deleted",),
        )
    parsed = _parse(files[SKILL_FILE], where)
    description, body, display, extra = _content(parsed, state.slug)
    support = _support(files)
    for label, text in (
        ("its name", display or ""),
        ("its description", description),
        ("its body", body),
        ("its other frontmatter keys", extra),
        *((f"support file {p}", c) for p, c in sorted(support.items())),
    ):
        result = scan_long(text)
        if result.blocked:
            raise SkillFolderProblem(
                f"{where}: {label} holds text the content scanner refuses "
                f"({result.message()}); the skill was left as it is and is not offered to "
                "the model until the text is fixed"
            )
    warnings: list[str] = []
    if parsed.name is not None and parsed.name != state.slug:
        warnings.append(
            f"{where}: its name {parsed.name!r} is not its folder's ({state.slug}); the folder "
            "name is the skill's id"
        )
    events: list[SkillEvent] = []
    if not state.exists:
        events.append(
            SkillCreated(
                stream=state.stream,
                at=at,
                skill_id=state.skill_id,
                scope=state.scope,
                project=state.project,
                slug=state.slug,
                display_name=display,
                description=description,
                body=body,
                extra_frontmatter=extra,
                origin=Origin.MARKDOWN,
                revision=parsed.revision,
            )
        )
        old_files: dict[str, str] = {}
    else:
        old_files = dict(state.files)
        if (description, body, display, extra) != _held(state):
            events.append(
                SkillRevised(
                    stream=state.stream,
                    at=at,
                    description=description,
                    body=body,
                    display_name=display,
                    extra_frontmatter=extra,
                    origin=Origin.MARKDOWN,
                )
            )
    for path in sorted(support):
        if old_files.get(path) != support[path]:
            events.append(
                SkillFileWritten(stream=state.stream, at=at, path=path, content=support[path])
            )
    for path in sorted(set(old_files) - set(support)):
        events.append(SkillFileRemoved(stream=state.stream, at=at, path=path))
    return ImportedFolder(stamp(state.stream, state.version, events), tuple(warnings))


def _parse(data: bytes, where: str) -> ParsedSkill:
    try:
        return parse_skill(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SkillFolderProblem(
            f"{where} is not valid UTF-8 (byte {exc.start}); it was left untouched"
        ) from exc
    except SkillFormatError as exc:
        raise SkillFolderProblem(f"{where} cannot be read: {exc}; it was left untouched") from exc


def _content(parsed: ParsedSkill, slug: str) -> tuple[str, str, str | None, str]:
    """(description, body, display name, extra frontmatter) a SKILL.md says: a `name` that
    is not the folder's counts as the display name when the file gives none."""
    display = parsed.display_name
    if display is None and parsed.name is not None and parsed.name != slug:
        display = parsed.name
    return parsed.description or "", parsed.body, display, parsed.extra_frontmatter


def _held(state: SkillState) -> tuple[str, str, str | None, str]:
    return state.description, state.body, state.display_name, state.extra_frontmatter


def _support(files: Mapping[str, bytes]) -> dict[str, str]:
    """The support files of a folder: text files at paths a skill may hold (anything else in
    the folder is not part of the skill, never written or deleted either)."""
    support: dict[str, str] = {}
    for path, data in files.items():
        if path == SKILL_FILE or support_path_problem(path) is not None:
            continue
        try:
            support[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return support


def interrupted_render(before: SkillState, after: SkillState, files: Mapping[str, bytes]) -> bool:
    """Whether the folder `files` is a render from `before` to `after` cut short: each file
    of the skill is as one of the two states has it (SKILL.md compared by what it says, so a
    person's spelling of `before` counts as `before`), or missing where one lacks it.

    A render writes and deletes one file at a time, so a crash between two leaves such a mix.
    Imported as a hand edit, it would undo part of a committed change (or, with SKILL.md
    already deleted, block the folder); it is rendered again instead."""
    support = _support(files)
    paths = set(support) | {p for p, _ in before.files} | {p for p, _ in after.files}
    for path in paths:
        if support.get(path) not in (before.file(path), after.file(path)):
            return False
    data = files.get(SKILL_FILE)
    if data is None:
        return not (before.exists and after.exists)
    try:
        said = _content(_parse(data, SKILL_FILE), after.slug)
    except SkillFolderProblem:
        return False
    return any(s.exists and said == _held(s) for s in (before, after))


def _deleted(state: SkillState, at: datetime) -> SkillDeleted:
    return SkillDeleted(stream=state.stream, at=at, origin=Origin.MARKDOWN)
