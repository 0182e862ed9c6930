"""The Skill aggregate: one procedural skill (SKILL.md plus support files) and its stream.

Ids: ``global:<slug>`` and ``project:<project>:<slug>``; the stream of a skill is
``skill:<skill_id>``. State is rebuilt by folding events (`fold`); decisions live in
`pi_hermes_memory.domain.skills.decide` and number their events with `stamp`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import assert_never

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.errors import (
    InvalidSkillId,
    InvariantViolation,
    VersionConflict,
)
from pi_hermes_memory.domain.memory.events import stamp
from pi_hermes_memory.domain.memory.model import is_safe_project_name
from pi_hermes_memory.domain.skills.events import (
    SkillCreated,
    SkillDeleted,
    SkillEvent,
    SkillFileRemoved,
    SkillFileWritten,
    SkillRevised,
    SkillScope,
)
from pi_hermes_memory.domain.skills.skill_md import is_slug
from pi_hermes_memory.domain.status import SUCCESS, Status

STREAM_PREFIX = "skill:"


def skill_stream(skill_id: str) -> str:
    return f"{STREAM_PREFIX}{skill_id}"


def skill_id_for(scope: SkillScope, project: str | None, slug: str) -> str:
    """The id of a skill; raises `InvalidSkillId` for a bad slug or project name."""
    if not is_slug(slug):
        raise InvalidSkillId(f"{shown(slug)} is not a skill slug (a-z, 0-9 and '-')")
    if scope is SkillScope.GLOBAL:
        return f"global:{slug}"
    if project is None or not is_safe_project_name(project):
        raise InvalidSkillId(f"{shown(project)} is not a project name")
    return f"project:{project}:{slug}"


def parse_skill_id(text: str) -> tuple[SkillScope, str | None, str]:
    """(scope, project, slug) of a skill id; raises `InvalidSkillId` when it is not one."""
    kind, _, rest = text.partition(":")
    if kind == SkillScope.GLOBAL.value and is_slug(rest):
        return SkillScope.GLOBAL, None, rest
    if kind == SkillScope.PROJECT.value:
        project, colon, slug = rest.rpartition(":")
        if colon and is_safe_project_name(project) and is_slug(slug):
            return SkillScope.PROJECT, project, slug
    raise InvalidSkillId(
        f"{shown(text)} is not a skill id: use global:<slug> or project:<project>:<slug>"
    )


@attrs.frozen(kw_only=True)
class SkillState:
    """A skill as its events left it. `exists` is False before the first create and after a
    delete (`deleted` tells the two apart); `revision` is the frontmatter ``version``."""

    stream: str
    version: int = 0
    skill_id: str
    scope: SkillScope
    project: str | None
    slug: str
    display_name: str | None = None
    description: str = ""
    body: str = ""
    extra_frontmatter: str = ""
    revision: int = 0
    created: datetime | None = None
    updated: datetime | None = None
    #: (path, content) of every support file, sorted by path
    files: tuple[tuple[str, str], ...] = ()
    deleted: bool = False
    exists: bool = False

    @classmethod
    def empty(cls, stream: str) -> SkillState:
        """The state before any event; raises `InvalidSkillId` if `stream` is not a skill's."""
        if not stream.startswith(STREAM_PREFIX):
            raise InvalidSkillId(f"{shown(stream)} is not a skill stream (skill:<skill_id>)")
        skill_id = stream.removeprefix(STREAM_PREFIX)
        scope, project, slug = parse_skill_id(skill_id)
        return cls(stream=stream, skill_id=skill_id, scope=scope, project=project, slug=slug)

    @property
    def name(self) -> str:
        """The human name: the display name when there is one, else the slug."""
        return self.display_name or self.slug

    def file(self, path: str) -> str | None:
        for name, content in self.files:
            if name == path:
                return content
        return None


def _require(state: SkillState, event: SkillEvent) -> None:
    if not state.exists:
        raise InvariantViolation(f"{state.stream}: {type(event).__name__} on a missing skill")


def apply(state: SkillState, event: SkillEvent) -> SkillState:
    """`state` after one event; raises VersionConflict on a gap or a repeat."""
    if event.stream != state.stream:
        raise InvariantViolation(f"event of {event.stream} applied to {state.stream}")
    if event.version != state.version + 1:
        raise VersionConflict(state.stream, state.version + 1, event.version)
    match event:
        case SkillCreated():
            if state.exists or event.skill_id != state.skill_id or event.revision < 1:
                raise InvariantViolation(f"{state.stream}: cannot create {event.skill_id}")
            return attrs.evolve(
                state,
                version=event.version,
                scope=event.scope,
                project=event.project,
                slug=event.slug,
                display_name=event.display_name,
                description=event.description,
                body=event.body,
                extra_frontmatter=event.extra_frontmatter,
                revision=event.revision,
                created=event.at,
                updated=event.at,
                files=(),
                deleted=False,
                exists=True,
            )
        case SkillRevised():
            _require(state, event)
            return attrs.evolve(
                state,
                version=event.version,
                display_name=event.display_name,
                description=event.description,
                body=event.body,
                extra_frontmatter=event.extra_frontmatter,
                revision=state.revision + 1,
                updated=event.at,
            )
        case SkillFileWritten():
            _require(state, event)
            written = dict(state.files)
            written[event.path] = event.content
            return attrs.evolve(state, version=event.version, files=tuple(sorted(written.items())))
        case SkillFileRemoved():
            _require(state, event)
            if state.file(event.path) is None:
                raise InvariantViolation(f"{state.stream}: no support file {event.path!r}")
            files = tuple(f for f in state.files if f[0] != event.path)
            return attrs.evolve(state, version=event.version, files=files)
        case SkillDeleted():
            _require(state, event)
            return attrs.evolve(state, version=event.version, files=(), deleted=True, exists=False)
        case _:
            assert_never(event)


def fold(state: SkillState, events: Iterable[SkillEvent]) -> SkillState:
    """Apply `events` in order; raises VersionConflict on a version gap or a repeat."""
    for event in events:
        state = apply(state, event)
    return state


@attrs.frozen(kw_only=True)
class SkillDecision:
    """The outcome of a skill decision: the events to append (none on a refusal)."""

    status: Status
    message: str
    events: tuple[SkillEvent, ...] = ()
    skill_id: str | None = None
    #: ids of the skills a refusal points at (the duplicate, the similar global skill)
    matches: tuple[str, ...] = ()
    #: content-scanner warnings and removed invisible characters
    notes: tuple[str, ...] = ()

    @property
    def success(self) -> bool:
        return self.status in SUCCESS


def shadow_message(path: str) -> str:
    """The refusal (`Status.NAME_COLLISION`) when the host agent's own skill root already has
    a skill directory of that name: the service finds it (I/O), the wording lives here."""
    return (
        f"The agent already loads a skill of this name from {shown(path)}; a new skill with "
        "the same name would shadow it (or be shadowed). Choose another name, or change "
        "that skill where it lives."
    )


__all__ = [
    "STREAM_PREFIX",
    "InvalidSkillId",
    "SkillDecision",
    "SkillScope",
    "SkillState",
    "apply",
    "fold",
    "parse_skill_id",
    "shadow_message",
    "skill_id_for",
    "skill_stream",
    "stamp",
]
