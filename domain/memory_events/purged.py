"""`MemoryPurged`: an event of a memory stream (ADR 0111: each kind's
class is built when a process first uses it; `domain.memory.events` hands it out)."""

from __future__ import annotations

from typing import ClassVar

import attrs
from pi_hermes_memory.domain.memory.events import Event, Origin


@attrs.frozen(kw_only=True)
class MemoryPurged(Event):
    """These entries (one supersede chain's versions that this stream holds) are erased: they
    leave the document's rows, history and removals for good, and the text fields of the
    earlier events naming them were blanked in place (ADR 0026). Ids stay, text never comes
    back: a purged entry cannot be restored."""

    TAG: ClassVar[str] = "memory.purged.v1"

    entry_ids: tuple[str, ...]
    origin: Origin = Origin.TOOL
