"""Domain events. Each has a stable, versioned wire tag (see ADR 0007).

Events are facts about one stream (one Markdown document). Every event carries its stream id,
its version in that stream and the time it happened. Decisions build their events unversioned
(`version` left at `UNSTAMPED`); `stamp` is the one place that numbers them in their stream.

Each kind's class lives in its own module of `pi_hermes_memory.domain.memory_events` and is
built on its first use (ADR 0111): building one frozen attrs class costs about 0.7 ms, and a
process that adds an entry uses one or two of the eleven kinds. This module hands them out by
name (`events.MemoryAdded`, `from … events import MemoryAdded`), so callers see one namespace;
`KIND_MODULES` names the module of each kind and `TAG_KINDS` the kind of each wire tag.
"""

from __future__ import annotations

import enum
import functools
import importlib
import operator
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar, cast

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation

if TYPE_CHECKING:
    from pi_hermes_memory.domain.memory_events.added import MemoryAdded as MemoryAdded
    from pi_hermes_memory.domain.memory_events.merged import MemoryMergedInto as MemoryMergedInto
    from pi_hermes_memory.domain.memory_events.moved import (
        MemoryMovedIn as MemoryMovedIn,
    )
    from pi_hermes_memory.domain.memory_events.moved import (
        MemoryMovedOut as MemoryMovedOut,
    )
    from pi_hermes_memory.domain.memory_events.purged import MemoryPurged as MemoryPurged
    from pi_hermes_memory.domain.memory_events.referenced import (
        MemoryReferenced as MemoryReferenced,
    )
    from pi_hermes_memory.domain.memory_events.removed import MemoryRemoved as MemoryRemoved
    from pi_hermes_memory.domain.memory_events.replaced import MemoryReplaced as MemoryReplaced
    from pi_hermes_memory.domain.memory_events.restored import MemoryRestored as MemoryRestored
    from pi_hermes_memory.domain.memory_events.retagged import MemoryRetagged as MemoryRetagged
    from pi_hermes_memory.domain.memory_events.superseded import (
        MemorySuperseded as MemorySuperseded,
    )


class Origin(enum.StrEnum):
    """Who caused a change: the memory tool, a hand edit of the Markdown, a migration, …"""

    TOOL = "tool"
    MARKDOWN = "markdown"
    MIGRATION = "migration"
    CONSOLIDATION = "consolidation"
    #: skill governance moved a skill between scopes: promote, demote, restore (ADR 0031)
    GOVERNANCE = "governance"


class RemovalReason(enum.StrEnum):
    TOOL = "tool"
    EVICTED = "evicted"
    MARKDOWN = "markdown"


#: the version of an event no `stamp` numbered yet (stored versions start at 1)
UNSTAMPED = 0


@attrs.frozen(kw_only=True)
class Event:
    TAG: ClassVar[str] = ""

    stream: str
    version: int = UNSTAMPED
    at: datetime


#: event fields added after their tag's first version: left out of a payload when None, so an
#: event without them encodes exactly as before they existed (ADR 0045)
OPTIONAL_EVENT_FIELDS: tuple[str, ...] = ("importance", "kind", "memory_id", "version_no")

if TYPE_CHECKING:
    #: every event of a memory stream; a projection or fold over it matches each member and ends
    #: with `case _: assert_never(event)` (style rule 28)
    MemoryEvent: TypeAlias = (
        MemoryAdded
        | MemoryReplaced
        | MemorySuperseded
        | MemoryRemoved
        | MemoryReferenced
        | MemoryMovedOut
        | MemoryMovedIn
        | MemoryMergedInto
        | MemoryRetagged
        | MemoryRestored
        | MemoryPurged
    )

    #: every event the journal stores (a skill union joins here: `MemoryEvent | SkillEvent`)
    DomainEvent: TypeAlias = MemoryEvent

    MEMORY_EVENT_TYPES: tuple[type[MemoryEvent], ...]
    #: every event class the codec decodes (the union's members)
    EVENT_TYPES: tuple[type[Event], ...]


def as_memory_event(event: Event) -> MemoryEvent:
    """`event` as a member of the memory union; a bug or a foreign stream's event otherwise."""
    if not isinstance(event, Event) or TAG_KINDS.get(event.TAG) != type(event).__name__:
        raise InvariantViolation(f"{type(event).__name__} of {event.stream} is not a memory event")
    return event  # type: ignore[return-value]  # the tag table names the union's members


E = TypeVar("E", bound=Event)


def stamp(stream: str, after: int, events: Iterable[E]) -> tuple[E, ...]:
    """The one place stream versions are assigned: `events`, built unversioned for `stream`,
    numbered `after + 1`, `after + 2`, … in order (`after`: the stream's version they follow).
    A stamped event or one of another stream is a bug and raises."""
    stamped: list[E] = []
    for version, event in enumerate(events, start=after + 1):
        if event.stream != stream or event.version != UNSTAMPED:
            raise InvariantViolation(
                f"cannot stamp {type(event).__name__} of {event.stream} v{event.version} "
                f"as {stream} v{version}"
            )
        stamped.append(attrs.evolve(event, version=version))
    return tuple(stamped)


#: the module (under `pi_hermes_memory.domain.memory_events`) of each memory event kind: the
#: whole union, in its order (`tests/unit/test_event_kinds.py` checks the two agree)
KIND_MODULES: dict[str, str] = {
    "MemoryAdded": "added",
    "MemoryReplaced": "replaced",
    "MemorySuperseded": "superseded",
    "MemoryRemoved": "removed",
    "MemoryReferenced": "referenced",
    "MemoryMovedOut": "moved",
    "MemoryMovedIn": "moved",
    "MemoryMergedInto": "merged",
    "MemoryRetagged": "retagged",
    "MemoryRestored": "restored",
    "MemoryPurged": "purged",
}
#: the kind of each wire tag (the classes' `TAG`s; the same test checks them): the codec finds
#: a stored event's class here without building the others
TAG_KINDS: dict[str, str] = {
    "memory.added.v1": "MemoryAdded",
    "memory.replaced.v1": "MemoryReplaced",
    "memory.superseded.v1": "MemorySuperseded",
    "memory.removed.v1": "MemoryRemoved",
    "memory.referenced.v1": "MemoryReferenced",
    "memory.moved_out.v1": "MemoryMovedOut",
    "memory.moved_in.v1": "MemoryMovedIn",
    "memory.merged_into.v1": "MemoryMergedInto",
    "memory.retagged.v1": "MemoryRetagged",
    "memory.restored.v1": "MemoryRestored",
    "memory.purged.v1": "MemoryPurged",
}


def __getattr__(name: str) -> object:
    """A kind's class, imported (and so built) on its first use; the unions and the tuples of
    all the classes, which build every kind. Each is stored here, so the next read is plain."""
    module = KIND_MODULES.get(name)
    if module is not None:
        found: object = getattr(
            importlib.import_module(f"pi_hermes_memory.domain.memory_events.{module}"), name
        )
    elif name in ("MEMORY_EVENT_TYPES", "EVENT_TYPES"):
        found = tuple(__getattr__(kind) for kind in KIND_MODULES)
    elif name in ("MemoryEvent", "DomainEvent"):
        members = cast("tuple[Any, ...]", __getattr__("MEMORY_EVENT_TYPES"))
        found = functools.reduce(operator.or_, members)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = found
    return found
