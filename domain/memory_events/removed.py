"""`MemoryRemoved`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event, RemovalReason


@attrs.frozen(kw_only=True)
class MemoryRemoved(Event):
    """The active entry is deleted; no supersede node is created."""

    TAG: ClassVar[str] = "memory.removed.v1"

    entry_id: str
    reason: RemovalReason
