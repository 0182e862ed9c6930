"""Commands: what a caller asks the memory to do. Time and new ids arrive inside them.

`AddMemory` is defined here; the other kinds live one per module in
`pi_hermes_memory.domain.memory_commands` and are handed out from here on first use (ADR
0111), so that a process that adds an entry builds one command class, not four."""

from __future__ import annotations

import enum
import importlib
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, TypeAlias

import attrs
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target

if TYPE_CHECKING:
    from pi_hermes_memory.domain.memory_commands.move import MoveMemory as MoveMemory
    from pi_hermes_memory.domain.memory_commands.remove import RemoveMemory as RemoveMemory
    from pi_hermes_memory.domain.memory_commands.replace import ReplaceMemory as ReplaceMemory


class MoveDirection(enum.StrEnum):
    PROMOTE = "promote"
    DEMOTE = "demote"


@attrs.frozen(kw_only=True)
class AddMemory:
    #: the tool action the command answers (a result's `action`)
    action: ClassVar[str] = "add"
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


if TYPE_CHECKING:
    MemoryCommand: TypeAlias = AddMemory | ReplaceMemory | RemoveMemory

#: the module (under `pi_hermes_memory.domain.memory_commands`) of each other kind
KIND_MODULES: dict[str, str] = {
    "ReplaceMemory": "replace",
    "RemoveMemory": "remove",
    "MoveMemory": "move",
}


def __getattr__(name: str) -> object:
    """A command kind's class, imported (built) on first use; `MemoryCommand` (the union of
    the three that `decide` takes) builds them. Each is stored here for the next read."""
    module = KIND_MODULES.get(name)
    if module is not None:
        found: object = getattr(
            importlib.import_module(f"pi_hermes_memory.domain.memory_commands.{module}"), name
        )
    elif name == "MemoryCommand":
        replace, remove = __getattr__("ReplaceMemory"), __getattr__("RemoveMemory")
        found = AddMemory | replace | remove
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = found
    return found
