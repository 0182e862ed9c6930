"""Events of the Skill aggregate (one stream per skill: ``skill:<skill_id>``).

Each event has a stable, versioned wire tag (`skill.<name>.v1`, ADR 0007) and only JSON-friendly
fields (str, int, enums, datetimes, None), so the one cattrs converter encodes them unchanged.
Decisions build events with ``version=0``; `pi_hermes_memory.domain.memory.events.stamp` numbers
them.
"""

from __future__ import annotations

import enum
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event, Origin


class SkillScope(enum.StrEnum):
    """Where a skill lives: the global skill root, or one project's skill root."""

    GLOBAL = "global"
    PROJECT = "project"


@attrs.frozen(kw_only=True)
class SkillCreated(Event):
    """A new skill (or a deleted one created again), without support files. Its revision is
    1, or the ``version`` a hand-written SKILL.md already says (imported as it is, so the
    version a person sees never goes down); a skill created again after a delete starts a
    new life and may start again at 1."""

    TAG: ClassVar[str] = "skill.created.v1"

    skill_id: str
    scope: SkillScope
    project: str | None
    slug: str
    display_name: str | None
    description: str
    body: str
    #: raw YAML lines of frontmatter keys we do not own, kept verbatim ("" when none)
    extra_frontmatter: str
    origin: Origin
    #: the frontmatter `version` it starts at (events stored before this field read as 1)
    revision: int = 1


@attrs.frozen(kw_only=True)
class SkillRevised(Event):
    """The SKILL.md content changed (patch, update/edit, a hand edit): the revision goes +1."""

    TAG: ClassVar[str] = "skill.revised.v1"

    description: str
    body: str
    display_name: str | None
    extra_frontmatter: str
    origin: Origin


@attrs.frozen(kw_only=True)
class SkillFileWritten(Event):
    """A support file (references/, templates/, scripts/, assets/) was created or replaced."""

    TAG: ClassVar[str] = "skill.file_written.v1"

    path: str
    content: str


@attrs.frozen(kw_only=True)
class SkillFileRemoved(Event):
    TAG: ClassVar[str] = "skill.file_removed.v1"

    path: str


@attrs.frozen(kw_only=True)
class SkillDeleted(Event):
    """The skill and its support files are gone; its id may be created again later."""

    TAG: ClassVar[str] = "skill.deleted.v1"

    origin: Origin


SkillEvent = SkillCreated | SkillRevised | SkillFileWritten | SkillFileRemoved | SkillDeleted

SKILL_EVENT_TYPES: tuple[type[Event], ...] = (
    SkillCreated,
    SkillRevised,
    SkillFileWritten,
    SkillFileRemoved,
    SkillDeleted,
)

__all__ = [
    "SKILL_EVENT_TYPES",
    "SkillCreated",
    "SkillDeleted",
    "SkillEvent",
    "SkillFileRemoved",
    "SkillFileWritten",
    "SkillRevised",
    "SkillScope",
]
