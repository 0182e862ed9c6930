"""`RemoveMemory`: see `pi_hermes_memory.domain.memory.commands` (ADR 0111)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.model import Target


@attrs.frozen(kw_only=True)
class RemoveMemory:
    action: ClassVar[str] = "remove"
    target: Target
    old_text: str
    at: datetime
    namespace: str | None = None
    #: the entry to remove, by id instead of old_text (ADR 0028)
    old_id: str | None = None
