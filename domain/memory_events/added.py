"""`MemoryAdded`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event, Origin
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target


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
