"""`MemorySuperseded`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event, Origin


@attrs.frozen(kw_only=True)
class MemorySuperseded(Event):
    """`old_id` is merged into the already active `by_id` (same text); no new entry appears."""

    TAG: ClassVar[str] = "memory.superseded.v1"

    old_id: str
    by_id: str
    on: date
    origin: Origin = Origin.TOOL
