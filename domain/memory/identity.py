"""Stable memory ids (ADR 0074): which row a reference names.

A *memory* is one supersede chain; its stable id is the id of its first version and every later
version carries it (`MemoryEntry.memory_id`, derived when events are folded). Each version keeps
its own row id (its *version id*) and a number, 1 for the first. A reference is one of:

- a stable id: the memory, that is its current version (its head), wherever it lives now;
- `ID@N`: version N of the memory ID;
- a version id (a row id that is not a stable id): that version.

Where two chains joined (a replace into an equal existing text, a move onto an equal entry),
the absorbed chain's stable id still names its own rows, and following their supersede links
leads to the survivor's head: the absorbed id is an alias of the survivor.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from pi_hermes_memory.domain.memory.chain import chain_in
from pi_hermes_memory.domain.memory.model import MemoryEntry

__all__ = ["Reference", "Resolution", "parse_reference", "resolve"]


@attrs.frozen(kw_only=True)
class Reference:
    """A parsed reference: `id`, and `version` when it was `ID@N`."""

    id: str
    version: int | None = None

    def __str__(self) -> str:
        return self.id if self.version is None else f"{self.id}@{self.version}"


def parse_reference(text: str) -> Reference:
    """`ID@N` (N a positive decimal) as id and version; anything else as an id."""
    head, sep, number = text.rpartition("@")
    if sep and head and number.isdecimal() and number.isascii() and int(number) >= 1:
        return Reference(id=head, version=int(number))
    return Reference(id=text)


@attrs.frozen(kw_only=True)
class Resolution:
    """What a reference names. `row`: the version named, or for a memory its active head (None
    when the memory's last version was removed or left every document: `last` is then the
    newest row it had). `pinned`: the reference named one version (`ID@N` or a version id), so
    a write through it applies only while that version is the head."""

    memory_id: str
    row: MemoryEntry | None
    last: MemoryEntry
    pinned: bool


def resolve(rows: Iterable[MemoryEntry], reference: str | Reference) -> Resolution | None:
    """What `reference` names among `rows` (every row of a store: ids are unique in it); None
    when nothing does. A stable id takes precedence over the equal id of its first version:
    both name the same chain, and the memory is what a client that kept the id means."""
    ref = parse_reference(reference) if isinstance(reference, str) else reference
    rows = tuple(rows)
    of_memory = [r for r in rows if r.stable_id == ref.id]
    if ref.version is not None:
        named = next((r for r in of_memory if r.version_no == ref.version), None)
        if named is None:
            return None
        return Resolution(memory_id=named.stable_id, row=named, last=named, pinned=True)
    if of_memory:
        chain = chain_in(rows, of_memory[0].id)
        last = chain[-1]
        head = last if last.superseded_by is None else None
        return Resolution(memory_id=ref.id, row=head, last=last, pinned=False)
    named = next((r for r in rows if r.id == ref.id), None)
    if named is None:
        return None
    return Resolution(memory_id=named.stable_id, row=named, last=named, pinned=True)
