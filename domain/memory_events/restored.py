"""`MemoryRestored`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target


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
