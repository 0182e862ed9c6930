"""SupersedeChain: the versions of one fact, oldest first, ending at its active head.

A replace turns A into history pointing at B (A→B); replacing B gives A→B→C. A replace into an
existing text points the old row at that canonical active row, so several chains can join.
"""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.document import MemoryDocument
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.model import MemoryEntry


@attrs.frozen(kw_only=True)
class SupersedeChain:
    """`head` is the active row, or None when the chain's last version was removed."""

    head: MemoryEntry | None
    head_id: str
    ancestors: tuple[MemoryEntry, ...]  # every history row whose successor path reaches head

    @classmethod
    def of(cls, doc: MemoryDocument, entry_id: str) -> SupersedeChain:
        """The chain containing `entry_id` (history or active)."""
        entry = doc.find(entry_id)
        if entry is None:
            raise KeyError(entry_id)
        head_id = resolve_head(doc, entry)
        ancestors = tuple(e for e in doc.history if resolve_head(doc, e) == head_id)
        active = {e.id: e for e in doc.active}
        return cls(
            head=active.get(head_id),
            head_id=head_id,
            ancestors=tuple(sorted(ancestors, key=_age)),
        )


def _age(entry: MemoryEntry) -> tuple[object, str]:
    return (entry.superseded_at, entry.id)


def resolve_head(doc: MemoryDocument, entry: MemoryEntry) -> str:
    """Follow superseded_by links to the head's id (active, or removed).

    A cycle, or a link to an id that is neither a row nor a removed row, is a violation.
    """
    by_id = {e.id: e for e in doc.all_entries()}
    seen: set[str] = set()
    current = entry
    while current.superseded_by is not None:
        if current.id in seen:
            raise InvariantViolation(f"supersede cycle through {current.id}")
        seen.add(current.id)
        successor = current.superseded_by
        nxt = by_id.get(successor)
        if nxt is None:
            if successor in doc.removed:
                return successor
            raise InvariantViolation(f"{current.id} points at missing {successor}")
        current = nxt
    return current.id


def check_chains(doc: MemoryDocument) -> None:
    """Every history row reaches one head that is active or removed; no cycles."""
    active_ids = {e.id for e in doc.active}
    for entry in doc.history:
        head = resolve_head(doc, entry)
        if head not in active_ids and head not in doc.removed:
            raise InvariantViolation(f"{entry.id} does not reach an active or removed head")
