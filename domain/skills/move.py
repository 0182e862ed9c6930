"""Moving a skill between scopes (promote, demote, restore; ADR 0031): pure event building.

A move touches two streams: the destination gets the source's content and support files, the
source is deleted. `SkillContent` is what travels (and what a governance backup keeps);
`copy_events` brings a destination to a content, `delete_events` removes a skill. Events are
built unversioned; the write pipeline numbers them (`Batch.append`).

The destination of a move keeps its own stream history: an existing destination (a promote with
conflict strategy ``overwrite``, a restore of the global skill it replaced) is revised, its
frontmatter ``version`` grows by one and its support files are written or removed to match; a
missing one is created (revision 1, ``created`` = the time of the move).
"""

from __future__ import annotations

from datetime import datetime

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.events import Origin
from pi_hermes_memory.domain.skills.events import (
    SkillCreated,
    SkillDeleted,
    SkillEvent,
    SkillFileRemoved,
    SkillFileWritten,
    SkillRevised,
)
from pi_hermes_memory.domain.skills.skill import SkillState

__all__ = ["SkillContent", "copy_events", "delete_events"]


@attrs.frozen(kw_only=True)
class SkillContent:
    """Everything of a skill that a move carries: SKILL.md fields and support files."""

    slug: str
    display_name: str | None
    description: str
    body: str
    extra_frontmatter: str = ""
    #: (path, content), sorted by path
    files: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, state: SkillState) -> SkillContent:
        if not state.exists:
            raise InvariantViolation(f"{state.skill_id} does not exist; nothing to copy")
        return cls(
            slug=state.slug,
            display_name=state.display_name,
            description=state.description,
            body=state.body,
            extra_frontmatter=state.extra_frontmatter,
            files=tuple(sorted(state.files)),
        )

    def same_as(self, state: SkillState) -> bool:
        """The state holds exactly this content."""
        return state.exists and SkillContent.of(state) == self


def copy_events(
    dest: SkillState, content: SkillContent, *, at: datetime, origin: Origin
) -> tuple[SkillEvent, ...]:
    """The events that make `dest` hold `content` (none when it already does)."""
    if content.slug != dest.slug:
        raise InvariantViolation(f"cannot copy skill {content.slug!r} onto {dest.skill_id}")
    events: list[SkillEvent] = []
    if not dest.exists:
        events.append(
            SkillCreated(
                stream=dest.stream,
                at=at,
                skill_id=dest.skill_id,
                scope=dest.scope,
                project=dest.project,
                slug=dest.slug,
                display_name=content.display_name,
                description=content.description,
                body=content.body,
                extra_frontmatter=content.extra_frontmatter,
                origin=origin,
            )
        )
        current: dict[str, str] = {}
    else:
        wanted_fields = (
            content.description,
            content.body,
            content.display_name,
            content.extra_frontmatter,
        )
        if wanted_fields != (
            dest.description,
            dest.body,
            dest.display_name,
            dest.extra_frontmatter,
        ):
            events.append(
                SkillRevised(
                    stream=dest.stream,
                    at=at,
                    description=content.description,
                    body=content.body,
                    display_name=content.display_name,
                    extra_frontmatter=content.extra_frontmatter,
                    origin=origin,
                )
            )
        current = dict(dest.files)
    wanted = dict(content.files)
    for path in sorted(set(current) - set(wanted)):
        events.append(SkillFileRemoved(stream=dest.stream, at=at, path=path))
    for path, text in sorted(wanted.items()):
        if current.get(path) != text:
            events.append(SkillFileWritten(stream=dest.stream, at=at, path=path, content=text))
    return tuple(events)


def delete_events(state: SkillState, *, at: datetime, origin: Origin) -> tuple[SkillEvent, ...]:
    """The event that deletes `state` (none when it does not exist)."""
    if not state.exists:
        return ()
    return (SkillDeleted(stream=state.stream, at=at, origin=origin),)
