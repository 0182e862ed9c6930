"""`ReplaceMemory`: see `pi_hermes_memory.domain.memory.commands` (ADR 0111)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target


@attrs.frozen(kw_only=True)
class ReplaceMemory:
    action: ClassVar[str] = "replace"
    target: Target
    old_text: str
    text: str
    entry_id: str  # id of the new version
    at: datetime
    category: FailureCategory | None = None
    namespace: str | None = None
    #: the entry to replace, by id instead of old_text (ADR 0028)
    old_id: str | None = None
    #: ADR 0045: None keeps the old version's value
    importance: float | None = None
    kind: MemoryKind | None = None
