"""A skill folder changed by hand (or by another tool) as events (ADR 0030).

What the person changed in the folder (`person_edit`: relative to what it was last recorded
as holding) is their latest word on the skill: its SKILL.md content and support files become a
`SkillCreated`/`SkillRevised` and `SkillFileWritten`/`SkillFileRemoved` of origin `markdown`;
a folder emptied by hand is a `SkillDeleted`. Text the content scanner refuses, a
SKILL.md that cannot be read, or support files without a SKILL.md are never imported: the
folder is left as it is (`SkillFolderProblem`) and nothing is written to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs
from pi_hermes_memory.domain.errors import SkillFolderProblem, SkillFormatError
from pi_hermes_memory.domain.memory.events import Origin, stamp
from pi_hermes_memory.domain.skills.checks import scan_long
from pi_hermes_memory.domain.skills.events import (
    SkillCreated,
    SkillDeleted,
    SkillEvent,
    SkillFileRemoved,
    SkillFileWritten,
    SkillRevised,
)
from pi_hermes_memory.domain.skills.rules import support_path_problem
from pi_hermes_memory.domain.skills.skill import SkillState
from pi_hermes_memory.domain.skills.skill_md import (
    SKILL_FILE,
    ParsedSkill,
    parse_skill,
    render_skill,
)

__all__ = ["ImportedFolder", "SkillFolderProblem", "import_folder", "person_edit"]


#: what a SKILL.md says: description, body, display name, extra frontmatter
_Said = tuple[str, str, str | None, str]


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


def _content(parsed: ParsedSkill, slug: str) -> _Said:
    """(description, body, display name, extra frontmatter) a SKILL.md says: a `name` that
    is not the folder's counts as the display name when the file gives none."""
    display = parsed.display_name
    if display is None and parsed.name is not None and parsed.name != slug:
        display = parsed.name
    return parsed.description or "", parsed.body, display, parsed.extra_frontmatter


def _held(state: SkillState) -> _Said:
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


def person_edit(
    base: SkillState, state: SkillState, files: Mapping[str, bytes]
) -> dict[str, bytes] | None:
    """The person's edit of the folder `files`, laid over `state` (a three-way merge, ADR
    0022): `base` is what the folder was last recorded as holding (the ledger's version; it
    is `state` unless a render is behind the journal). A part of the skill (what SKILL.md
    says, each support file) that is as `base` or as `state` has it was not edited: `state`'s
    stays. A part that is neither is the person's and wins. None when the person edited
    nothing: the folder is a render cut short between two file writes (after the commit),
    or only spelled differently (CRLF, no version line); it is rendered again.

    Taking such a folder whole as the person's word would undo part of a committed change,
    or, with SKILL.md deleted first by a delete, leave support files that block the folder."""
    support = _support(files)
    theirs: dict[str, bytes | None] = {}
    paths = set(support) | {p for p, _ in base.files} | {p for p, _ in state.files}
    for path in sorted(paths):
        have = support.get(path)
        if have not in (base.file(path), state.file(path)):
            theirs[path] = None if have is None else files[path]
    said = _said(files.get(SKILL_FILE), state.slug)
    if all(said != _said_by(s) for s in (base, state)):
        theirs[SKILL_FILE] = _their_skill_md(base, state, files.get(SKILL_FILE), said)
    if not theirs:
        return None
    if not files:
        return {}  # the folder was deleted
    merged = _rendered(state)
    for path, data in theirs.items():
        if data is None:
            merged.pop(path, None)
        else:
            merged[path] = data
    if SKILL_FILE not in merged and SKILL_FILE in files and len(merged) > 0:
        merged[SKILL_FILE] = files[SKILL_FILE]  # support files edited in a deleted skill
    return merged


def _their_skill_md(
    base: SkillState, state: SkillState, data: bytes | None, said: _Said | bytes | None
) -> bytes | None:
    """The person's SKILL.md; when a render is behind the journal (`base` is not `state`)
    and both are skills, only the fields the person changed from `base` are theirs: a
    committed change of another field, not rendered yet, is kept."""
    if base == state or not (base.exists and state.exists) or not isinstance(said, tuple):
        return data
    old, ours = _held(base), _held(state)

    def pick(n: int) -> Any:
        return said[n] if said[n] != old[n] else ours[n]

    merged = attrs.evolve(
        state, description=pick(0), body=pick(1), display_name=pick(2), extra_frontmatter=pick(3)
    )
    return render_skill(merged).encode("utf-8")


def _said(data: bytes | None, slug: str) -> _Said | bytes | None:
    """What a SKILL.md says (None when there is none; its bytes when it cannot be read)."""
    if data is None:
        return None
    try:
        return _content(_parse(data, SKILL_FILE), slug)
    except SkillFolderProblem:
        return data


def _said_by(state: SkillState) -> _Said | None:
    return _held(state) if state.exists else None


def _rendered(state: SkillState) -> dict[str, bytes]:
    if not state.exists:
        return {}
    files = {path: content.encode("utf-8") for path, content in state.files}
    files[SKILL_FILE] = render_skill(state).encode("utf-8")
    return files


def _deleted(state: SkillState, at: datetime) -> SkillDeleted:
    return SkillDeleted(stream=state.stream, at=at, origin=Origin.MARKDOWN)
