"""Decisions that change or remove an existing skill: patch, update/edit, delete, support
files, and the import of a hand-edited SKILL.md.

Each decision is pure: it gets the current `SkillState` and the time, and returns a
`SkillDecision` holding the events to append, or a refusal holding none (a refusal never
changes the revision). Decisions never raise on any text argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.events import Origin
from pi_hermes_memory.domain.skills.body import (
    clean_body,
    patch_text,
    replace_section,
    section_title,
)
from pi_hermes_memory.domain.skills.checks import (
    MAX_SECTION_CHARS,
    body_problem,
    description_problem,
    has_control,
    missing,
    refuse,
    scan_fields,
)
from pi_hermes_memory.domain.skills.events import (
    SkillDeleted,
    SkillFileRemoved,
    SkillFileWritten,
    SkillRevised,
)
from pi_hermes_memory.domain.skills.rules import (
    MAX_SUPPORT_FILES,
    normalize_support_path,
    support_content_problem,
    support_path_problem,
)
from pi_hermes_memory.domain.skills.skill import SkillDecision, SkillState, stamp
from pi_hermes_memory.domain.skills.skill_md import clean_value
from pi_hermes_memory.domain.status import Status


def _revise(
    state: SkillState,
    status: Status,
    what: str,
    *,
    at: datetime,
    origin: Origin,
    notes: tuple[str, ...],
    description: str | None = None,
    body: str | None = None,
    display_name: str | None = None,
    extra: str | None = None,
) -> SkillDecision:
    event = SkillRevised(
        stream=state.stream,
        version=0,
        at=at,
        description=state.description if description is None else description,
        body=state.body if body is None else body,
        display_name=state.display_name if display_name is None else display_name or None,
        extra_frontmatter=state.extra_frontmatter if extra is None else extra,
        origin=origin,
    )
    if (event.description, event.body, event.display_name, event.extra_frontmatter) == (
        state.description,
        state.body,
        state.display_name,
        state.extra_frontmatter,
    ):
        return SkillDecision(
            status=Status.NOOP,
            message=f"Skill {state.skill_id} already says that; nothing changed.",
            skill_id=state.skill_id,
            notes=notes,
        )
    return SkillDecision(
        status=status,
        message=f"{what} skill {state.skill_id} (version {state.revision + 1}).",
        events=stamp(state.stream, state.version, [event]),
        skill_id=state.skill_id,
        notes=notes,
    )


def decide_patch(
    state: SkillState,
    *,
    section: str,
    content: str | Sequence[str],
    at: datetime,
    origin: Origin = Origin.TOOL,
) -> SkillDecision:
    """Replace the content of one ``## section`` of the body (appended when missing)."""
    if not state.exists:
        return missing(state)
    title = section_title(section)
    if not title:
        return refuse(Status.INVALID, "section is required (e.g. 'Pitfalls')", state.skill_id)
    if has_control(title) or len(title) > MAX_SECTION_CHARS:
        return refuse(
            Status.INVALID,
            f"section must be one line of at most {MAX_SECTION_CHARS} characters",
            state.skill_id,
        )
    text, problem = patch_text(title, content)
    if text is None:
        return refuse(Status.INVALID, problem, state.skill_id)
    scanned = scan_fields([("section name", title), ("content", text)])
    if isinstance(scanned, SkillDecision):
        return attrs.evolve(scanned, skill_id=state.skill_id)
    (clean_title, clean_text), notes = scanned
    clean_title, clean_text = section_title(clean_title), clean_body(clean_text)
    if not clean_title or not clean_text:  # nothing left once invisible characters went
        return refuse(Status.INVALID, "section and content must be visible text", state.skill_id)
    body = replace_section(state.body, clean_title, clean_text)
    too_long = body_problem(body)
    if too_long:
        return refuse(Status.INVALID, too_long, state.skill_id)
    return _revise(state, Status.PATCHED, "Patched", at=at, origin=origin, notes=notes, body=body)


def decide_update(
    state: SkillState,
    *,
    description: str | None = None,
    body: str | None = None,
    at: datetime,
    origin: Origin = Origin.TOOL,
) -> SkillDecision:
    """Replace the description and/or the whole body (update and edit); an empty or missing
    value keeps the old one."""
    if not state.exists:
        return missing(state)
    new_description = clean_value(description or "")
    new_body = clean_body(body or "")
    if not new_description and not new_body:
        return refuse(
            Status.INVALID,
            "give a new description and/or body (an empty one keeps the old)",
            state.skill_id,
        )
    fields: list[tuple[str, str]] = []
    if new_description:
        problem = description_problem(new_description)
        if problem:
            return refuse(Status.INVALID, problem, state.skill_id)
        fields.append(("description", new_description))
    if new_body:
        problem = body_problem(new_body)
        if problem:
            return refuse(Status.INVALID, problem, state.skill_id)
        fields.append(("body", new_body))
    scanned = scan_fields(fields)
    if isinstance(scanned, SkillDecision):
        return attrs.evolve(scanned, skill_id=state.skill_id)
    texts, notes = scanned
    cleaned = dict(zip((label for label, _ in fields), texts, strict=True))
    description = clean_value(cleaned["description"]) if "description" in cleaned else None
    body = clean_body(cleaned["body"]) if "body" in cleaned else None
    if description == "" or body == "":  # nothing left once invisible characters went
        return refuse(Status.INVALID, "the new text must be visible text", state.skill_id)
    return _revise(
        state,
        Status.UPDATED,
        "Updated",
        at=at,
        origin=origin,
        notes=notes,
        description=description,
        body=body,
    )


def decide_delete(
    state: SkillState, *, at: datetime, origin: Origin = Origin.TOOL
) -> SkillDecision:
    if not state.exists:
        return missing(state)
    event = SkillDeleted(stream=state.stream, version=0, at=at, origin=origin)
    return SkillDecision(
        status=Status.DELETED,
        message=f"Deleted skill {state.skill_id} and its {len(state.files)} support file(s).",
        events=stamp(state.stream, state.version, [event]),
        skill_id=state.skill_id,
    )


def decide_write_file(state: SkillState, *, path: str, content: str, at: datetime) -> SkillDecision:
    """Create or replace a support file under references/, templates/, scripts/, assets/."""
    if not state.exists:
        return missing(state)
    path = normalize_support_path(path)
    problem = support_path_problem(path) or support_content_problem(content)
    if problem:
        return refuse(Status.INVALID, problem, state.skill_id)
    old = state.file(path)
    if old is None and len(state.files) >= MAX_SUPPORT_FILES:
        return refuse(
            Status.CAPACITY_EXCEEDED,
            f"skill {state.skill_id} has {len(state.files)} support files, the most one skill "
            "may hold: remove one first or merge files",
            state.skill_id,
        )
    scanned = scan_fields([(f"file {path}", content)])
    if isinstance(scanned, SkillDecision):
        return attrs.evolve(scanned, skill_id=state.skill_id)
    (text,), notes = scanned
    if old == text:
        return SkillDecision(
            status=Status.NOOP,
            message=f"{path} already holds that content; nothing changed.",
            skill_id=state.skill_id,
            notes=notes,
        )
    event = SkillFileWritten(stream=state.stream, version=0, at=at, path=path, content=text)
    return SkillDecision(
        status=Status.FILE_WRITTEN,
        message=f"{'Replaced' if old is not None else 'Wrote'} {path} of {state.skill_id}.",
        events=stamp(state.stream, state.version, [event]),
        skill_id=state.skill_id,
        notes=notes,
    )


def decide_remove_file(state: SkillState, *, path: str, at: datetime) -> SkillDecision:
    if not state.exists:
        return missing(state)
    path = normalize_support_path(path)
    problem = support_path_problem(path)
    if problem:
        return refuse(Status.INVALID, problem, state.skill_id)
    if state.file(path) is None:
        return refuse(
            Status.NOT_FOUND, f"skill {state.skill_id} has no file {shown(path)}", state.skill_id
        )
    event = SkillFileRemoved(stream=state.stream, version=0, at=at, path=path)
    return SkillDecision(
        status=Status.FILE_REMOVED,
        message=f"Removed {path} from {state.skill_id}.",
        events=stamp(state.stream, state.version, [event]),
        skill_id=state.skill_id,
    )


__all__ = [
    "decide_delete",
    "decide_patch",
    "decide_remove_file",
    "decide_update",
    "decide_write_file",
]
