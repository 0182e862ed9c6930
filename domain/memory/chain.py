"""SupersedeChain: the versions of one fact, oldest first, ending at its active head.

A replace turns A into history pointing at B (A→B); replacing B gives A→B→C. A replace into an
existing text points the old row at that canonical active row, so several chains can join.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import MemoryEntry


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


def chain_of(doc: MemoryDocument, entry_id: str) -> tuple[MemoryEntry, ...]:
    """`chain_in` over the rows of one document."""
    return chain_in(doc.all_entries(), entry_id)


def chain_in(rows: Iterable[MemoryEntry], entry_id: str) -> tuple[MemoryEntry, ...]:
    """Every version of the fact `entry_id` belongs to, oldest first, ending with its active
    head when it has one (ADR 0028): the rows whose successor path reaches the same head.
    `rows` may span documents (ids are unique in a store: a merge into another document is
    followed both ways). Empty when `entry_id` is not among `rows`. O(rows), memoised heads."""
    by_id = {e.id: e for e in rows}
    if entry_id not in by_id:
        return ()
    heads: dict[str, tuple[str, int]] = {}  # id -> (head id, distance to it)

    def head_of(entry: MemoryEntry) -> tuple[str, int]:
        path: list[str] = []
        current: MemoryEntry | None = entry
        found: tuple[str, int] | None = None
        while current is not None:
            if current.id in heads:
                found = heads[current.id]
                break
            if current.id in path:
                raise InvariantViolation(f"supersede cycle through {current.id}")
            path.append(current.id)
            successor = current.superseded_by
            if successor is None:
                found = (current.id, 0)
                path.pop()
                heads[current.id] = found
                break
            current = by_id.get(successor)
            if current is None:
                found = (successor, 0)  # a head that left this document
        assert found is not None
        head, distance = found
        for step, entry_id in enumerate(reversed(path), start=1):
            heads[entry_id] = (head, distance + step)
        return heads[entry.id]

    head, _ = head_of(by_id[entry_id])
    members = [e for e in by_id.values() if head_of(e)[0] == head]
    return tuple(
        sorted(
            members,
            key=lambda e: (
                e.superseded_by is None,
                e.superseded_at or e.created,
                -head_of(e)[1],
                e.id,
            ),
        )
    )
