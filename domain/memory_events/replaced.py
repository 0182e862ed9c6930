"""`MemoryReplaced`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event, Origin
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind


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
