"""`MemoryRetagged`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event, Origin
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind


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
