"""`MoveMemory`: see `pi_hermes_memory.domain.memory.commands` (ADR 0111)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import attrs
from pi_hermes_memory.domain.memory.commands import MoveDirection
from pi_hermes_memory.domain.memory.model import Target


@attrs.frozen(kw_only=True)
class MoveMemory:
    """promote (current project -> global memory) or demote (global memory -> current project)."""

    direction: MoveDirection
    old_text: str
    at: datetime
    force: bool = False
    #: the entry to move, by id instead of old_text (ADR 0028)
    old_id: str | None = None
    #: moved entry id -> {destination entry id -> cosine of their stored vectors}, for the
    #: pairs where both have a current vector (read from storage, never from the provider)
    cosines: Mapping[str, Mapping[str, float]] | None = None

    @property
    def source(self) -> Target:
        return Target.PROJECT if self.direction is MoveDirection.PROMOTE else Target.MEMORY

    @property
    def destination(self) -> Target:
        return Target.MEMORY if self.direction is MoveDirection.PROMOTE else Target.PROJECT
