"""`MemoryMovedOut`, `MemoryMovedIn`: events of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target


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
