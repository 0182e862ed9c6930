"""`MemoryMergedInto`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event


@attrs.frozen(kw_only=True)
class MemoryMergedInto(Event):
    """The active entry became history pointing at `into_id`, an equal entry in `into_stream`."""

    TAG: ClassVar[str] = "memory.merged_into.v1"

    entry_id: str
    into_stream: str
    into_id: str
    on: date
