"""`MemoryReferenced`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event


@attrs.frozen(kw_only=True)
class MemoryReferenced(Event):
    """The entry's `last_referenced` date moves to `on`."""

    TAG: ClassVar[str] = "memory.referenced.v1"

    entry_id: str
    on: date
