"""The decision that brings a skill into being through the tool: create. (A skill folder
written by hand or by another tool is imported by `domain/skills/hand_edits.py`.)

Each decision is pure: it gets the current `SkillState` and the time, and returns a
`SkillDecision` holding the events to append, or a refusal holding none. Decisions never raise
on any text argument; they raise `InvariantViolation` only when the caller hands them the
state of another skill.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.events import Origin
from pi_hermes_memory.domain.memory.model import is_safe_project_name
from pi_hermes_memory.domain.search.similarity import jaccard, token_set
from pi_hermes_memory.domain.skills.body import build_body, clean_body, structured_problem
from pi_hermes_memory.domain.skills.checks import (
    body_problem,
    description_problem,
    name_problem,
    refuse,
    scan_fields,
)
from pi_hermes_memory.domain.skills.events import SkillCreated, SkillScope
from pi_hermes_memory.domain.skills.skill import SkillDecision, SkillState, skill_id_for, stamp
from pi_hermes_memory.domain.skills.skill_md import SLUG_EMPTY_MESSAGE, clean_value, slugify
from pi_hermes_memory.domain.status import Status

#: create refuses a global skill whose name tokens overlap an existing one's by more than this
NAME_JACCARD = 0.7
#: ... and calls it `similar` (patch it) when the descriptions overlap by more than this too
DESCRIPTION_JACCARD = 0.75


def new_skill_id(
    *, scope: SkillScope | str | None, project: str | None, name: str
) -> str | SkillDecision:
    """The id a create would use (so the caller can load that stream), or the refusal.

    `project` is the session's current project; only a project skill uses it."""
    if scope is None or (isinstance(scope, str) and not scope.strip()):
        return refuse(
            Status.INVALID,
            "scope is required: global for a procedure that works in any repository, project "
            "for one that depends on this repository's paths, scripts, architecture or release",
        )
    try:
        kind = SkillScope(scope)
    except ValueError:
        return refuse(Status.INVALID, f"scope {shown(scope)} is not global or project")
    problem = name_problem(name)
    if problem:
        return refuse(Status.INVALID, problem)
    slug = slugify(name)
    if not slug:
        return refuse(Status.INVALID, SLUG_EMPTY_MESSAGE)
    if kind is SkillScope.PROJECT:
        if project is None:
            return refuse(Status.INVALID, "a project skill needs a current project")
        if not is_safe_project_name(project):
            return refuse(Status.INVALID, f"{shown(project)} is not a usable project name")
        return skill_id_for(kind, project, slug)
    return skill_id_for(kind, None, slug)


def _conflict(slug: str, description: str, others: Sequence[SkillState]) -> SkillDecision | None:
    """`similar` or `name-collision` against the existing global skills, or None."""
    name_tokens = token_set(slug)
    description_tokens = token_set(description)
    best: tuple[float, float, str] | None = None
    for other in others:
        if not other.exists or other.scope is not SkillScope.GLOBAL or other.slug == slug:
            continue
        by_name = jaccard(name_tokens, token_set(other.slug))
        if by_name <= NAME_JACCARD:
            continue
        by_description = jaccard(description_tokens, token_set(other.description))
        if best is None or (by_description, by_name) > best[:2]:
            best = (by_description, by_name, other.skill_id)
    if best is None:
        return None
    by_description, by_name, other_id = best
    if by_description > DESCRIPTION_JACCARD:
        return SkillDecision(
            status=Status.SIMILAR,
            message=(
                f"Global skill {other_id} already does this (name overlap {by_name:.2f}, "
                f"description overlap {by_description:.2f}): patch or update it instead."
            ),
            matches=(other_id,),
        )
    return SkillDecision(
        status=Status.NAME_COLLISION,
        message=(
            f"Global skill {other_id} has nearly the same name (overlap {by_name:.2f}) but "
            "another purpose: choose a name that says how this skill differs."
        ),
        matches=(other_id,),
    )


def decide_create(
    state: SkillState,
    *,
    scope: SkillScope | str | None,
    project: str | None,
    name: str,
    description: str,
    content: str | None = None,
    when_to_use: str | None = None,
    procedure_steps: Sequence[str] = (),
    pitfalls: Sequence[str] = (),
    verification_steps: Sequence[str] = (),
    at: datetime,
    origin: Origin = Origin.TOOL,
    global_skills: Sequence[SkillState] = (),
) -> SkillDecision:
    """Create a skill from `content` (the Markdown body) or from the structured fields.

    `state` is the stream of `new_skill_id(...)`; `global_skills` the existing global skills
    (checked for a global create only)."""
    planned = new_skill_id(scope=scope, project=project, name=name)
    if isinstance(planned, SkillDecision):
        return planned
    if planned != state.skill_id:
        raise InvariantViolation(f"create of {planned} decided on {state.skill_id}")
    problem = description_problem(clean_value(description))
    if problem:
        return refuse(Status.INVALID, problem)
    # a blank field counts as not given: tool layers often send "" for an absent argument
    structured = bool(when_to_use and when_to_use.strip()) or any(
        (procedure_steps, pitfalls, verification_steps)
    )
    given = content is not None and bool(content.strip())
    if structured and given:
        return refuse(Status.INVALID, "give content or the structured fields, not both")
    if given and content is not None:
        body = clean_body(content)
    elif structured:
        problem = structured_problem(when_to_use, procedure_steps, pitfalls, verification_steps)
        if problem:
            return refuse(Status.INVALID, problem)
        body = build_body(when_to_use or "", procedure_steps, pitfalls, verification_steps)
    else:
        return refuse(
            Status.INVALID,
            "the skill needs a body: when_to_use and procedure_steps (with pitfalls and "
            "verification_steps), or content",
        )
    problem = body_problem(body)
    if problem:
        return refuse(Status.INVALID, problem)
    scanned = scan_fields([("name", name), ("description", description), ("body", body)])
    if isinstance(scanned, SkillDecision):
        return attrs.evolve(scanned, skill_id=state.skill_id)
    (clean_name, clean_description, clean_text), notes = scanned
    clean_name, clean_description = clean_value(clean_name), clean_value(clean_description)
    clean_text = clean_body(clean_text)
    problem = description_problem(clean_description) or body_problem(clean_text)
    if problem:  # the text was nothing but invisible characters the scanner removed
        return refuse(Status.INVALID, problem, state.skill_id)
    if state.exists:
        return SkillDecision(
            status=Status.DUPLICATE,
            message=f"Skill {state.skill_id} already exists: patch or update it instead.",
            skill_id=state.skill_id,
            matches=(state.skill_id,),
        )
    if state.scope is SkillScope.GLOBAL:
        conflict = _conflict(state.slug, clean_description, global_skills)
        if conflict is not None:
            return attrs.evolve(conflict, skill_id=state.skill_id)
    event = SkillCreated(
        stream=state.stream,
        version=0,
        at=at,
        skill_id=state.skill_id,
        scope=state.scope,
        project=state.project,
        slug=state.slug,
        display_name=clean_name if clean_name != state.slug else None,
        description=clean_description,
        body=clean_text,
        extra_frontmatter="",
        origin=origin,
    )
    return SkillDecision(
        status=Status.CREATED,
        message=f"Created skill {state.skill_id} (version 1).",
        events=stamp(state.stream, state.version, [event]),
        skill_id=state.skill_id,
        notes=notes,
    )


__all__ = ["DESCRIPTION_JACCARD", "NAME_JACCARD", "decide_create", "new_skill_id"]
