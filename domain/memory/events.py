"""Domain events. Each has a stable, versioned wire tag (see ADR 0007).

Events are facts about one stream (one Markdown document). Every event carries its stream id,
its version in that stream and the time it happened. Decisions build their events unversioned
(`version` left at `UNSTAMPED`); `stamp` is the one place that numbers them in their stream.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from datetime import date, datetime
from typing import ClassVar, TypeAlias, TypeVar, get_args

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target


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


@attrs.frozen(kw_only=True)
class MemoryAdded(Event):
    TAG: ClassVar[str] = "memory.added.v1"

    entry_id: str
    target: Target
    text: str
    project: str | None
    category: FailureCategory | None
    created: date
    last_referenced: date
    origin: Origin = Origin.TOOL
    namespace: str | None = None
    #: the content-scan finding of hand-edited text: the row is kept out of search until its
    #: text is fixed (None: clean, or written through the tool, which refuses such text)
    flagged: str | None = None
    #: the second seed's fields (ADR 0045): absent from older events and from events of entries
    #: without them (the codec leaves a None out of the payload)
    importance: float | None = None
    kind: MemoryKind | None = None
    #: ADR 0074: an import recreating a version of an exported memory carries its stable id
    #: and version number; absent otherwise (an add starts a memory of its own id)
    memory_id: str | None = None
    version_no: int | None = None


@attrs.frozen(kw_only=True)
class MemoryReplaced(Event):
    """`old_id` becomes superseded history; `new_id` is the new active entry."""

    TAG: ClassVar[str] = "memory.replaced.v1"

    old_id: str
    new_id: str
    text: str
    project: str | None
    category: FailureCategory | None
    created: date
    last_referenced: date
    origin: Origin = Origin.TOOL
    flagged: str | None = None
    #: ADR 0045: None keeps the old version's value
    importance: float | None = None
    kind: MemoryKind | None = None


@attrs.frozen(kw_only=True)
class MemorySuperseded(Event):
    """`old_id` is merged into the already active `by_id` (same text); no new entry appears."""

    TAG: ClassVar[str] = "memory.superseded.v1"

    old_id: str
    by_id: str
    on: date
    origin: Origin = Origin.TOOL


@attrs.frozen(kw_only=True)
class MemoryRemoved(Event):
    """The active entry is deleted; no supersede node is created."""

    TAG: ClassVar[str] = "memory.removed.v1"

    entry_id: str
    reason: RemovalReason


@attrs.frozen(kw_only=True)
class MemoryReferenced(Event):
    """The entry's `last_referenced` date moves to `on`."""

    TAG: ClassVar[str] = "memory.referenced.v1"

    entry_id: str
    on: date


@attrs.frozen(kw_only=True)
class MemoryMovedOut(Event):
    """The active entry left this document for `to_stream` (promote/demote); same id there."""

    TAG: ClassVar[str] = "memory.moved_out.v1"

    entry_id: str
    to_stream: str


@attrs.frozen(kw_only=True)
class MemoryMovedIn(Event):
    """The entry arrived from `from_stream` keeping its id and created date."""

    TAG: ClassVar[str] = "memory.moved_in.v1"

    entry_id: str
    from_stream: str
    target: Target
    text: str
    project: str | None
    category: FailureCategory | None
    created: date
    last_referenced: date
    flagged: str | None = None
    importance: float | None = None  # ADR 0045
    kind: MemoryKind | None = None
    #: the stable id and version number the entry had (ADR 0074); absent from older events:
    #: the entry then is the first version of a memory with its own id
    memory_id: str | None = None
    version_no: int | None = None


@attrs.frozen(kw_only=True)
class MemoryMergedInto(Event):
    """The active entry became history pointing at `into_id`, an equal entry in `into_stream`."""

    TAG: ClassVar[str] = "memory.merged_into.v1"

    entry_id: str
    into_stream: str
    into_id: str
    on: date


@attrs.frozen(kw_only=True)
class MemoryRetagged(Event):
    """A hand edit changed only the metadata of an active entry (project, created, scope,
    category): the entry keeps its id and text. `text` and `flagged` repeat the entry's so a
    read model can add a row that had none (a project entry that gains its attribution)."""

    TAG: ClassVar[str] = "memory.retagged.v1"

    entry_id: str
    text: str
    project: str | None
    category: FailureCategory | None
    created: date
    last_referenced: date
    namespace: str | None
    flagged: str | None = None
    origin: Origin = Origin.MARKDOWN
    #: ADR 0045: a hand edit of `importance=`/`kind=`; None keeps the entry's value
    importance: float | None = None
    kind: MemoryKind | None = None


@attrs.frozen(kw_only=True)
class MemoryRestored(Event):
    """A removed entry (by hand edit, the tool or eviction) is active again with its old id."""

    TAG: ClassVar[str] = "memory.restored.v1"

    entry_id: str
    target: Target
    text: str
    project: str | None
    category: FailureCategory | None
    created: date
    last_referenced: date
    namespace: str | None = None
    flagged: str | None = None
    importance: float | None = None  # ADR 0045
    kind: MemoryKind | None = None
    #: the stable id and version number the entry had (ADR 0074); absent from older events:
    #: the entry then is the first version of a memory with its own id
    memory_id: str | None = None
    version_no: int | None = None


@attrs.frozen(kw_only=True)
class MemoryPurged(Event):
    """These entries (one supersede chain's versions that this stream holds) are erased: they
    leave the document's rows, history and removals for good, and the text fields of the
    earlier events naming them were blanked in place (ADR 0026). Ids stay, text never comes
    back: a purged entry cannot be restored."""

    TAG: ClassVar[str] = "memory.purged.v1"

    entry_ids: tuple[str, ...]
    origin: Origin = Origin.TOOL


#: event fields added after their tag's first version: left out of a payload when None, so an
#: event without them encodes exactly as before they existed (ADR 0045)
OPTIONAL_EVENT_FIELDS: tuple[str, ...] = ("importance", "kind", "memory_id", "version_no")

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

MEMORY_EVENT_TYPES: tuple[type[MemoryEvent], ...] = get_args(MemoryEvent)
#: every event class the codec decodes, derived from the union so the two never drift
EVENT_TYPES: tuple[type[Event], ...] = get_args(DomainEvent)


def as_memory_event(event: Event) -> MemoryEvent:
    """`event` as a member of the memory union; a bug or a foreign stream's event otherwise."""
    if not isinstance(event, MEMORY_EVENT_TYPES):
        raise InvariantViolation(f"{type(event).__name__} of {event.stream} is not a memory event")
    return event


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
