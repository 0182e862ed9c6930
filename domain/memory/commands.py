"""Commands: what a caller asks the memory to do. Time and new ids arrive inside them."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime

import attrs
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target


class MoveDirection(enum.StrEnum):
    PROMOTE = "promote"
    DEMOTE = "demote"


@attrs.frozen(kw_only=True)
class AddMemory:
    target: Target
    text: str
    entry_id: str
    at: datetime
    category: FailureCategory | None = None
    force: bool = False
    namespace: str | None = None  # None: the global layer; else agent:/custom:/user: (ADR 0014)
    #: cosine of this text's vector with the current vectors of rows of its scope, by entry id,
    #: computed before the write (ADR 0015); None or a missing id: the token rule only
    cosines: Mapping[str, float] | None = attrs.field(default=None, hash=False, repr=False)
    #: the second seed's fields (ADR 0045); None: not set
    importance: float | None = None
    kind: MemoryKind | None = None


@attrs.frozen(kw_only=True)
class ReplaceMemory:
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


@attrs.frozen(kw_only=True)
class RemoveMemory:
    target: Target
    old_text: str
    at: datetime
    namespace: str | None = None
    #: the entry to remove, by id instead of old_text (ADR 0028)
    old_id: str | None = None


MemoryCommand = AddMemory | ReplaceMemory | RemoveMemory


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
