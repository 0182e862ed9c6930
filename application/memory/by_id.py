"""Entries by id across the four documents: get, history, and where an id lives (ADR 0028).

Ids are unique per store, so an id names at most one row; the caller need not know its target.
A reference is a memory's stable id, `ID@N` or a version id (ADR 0074, domain/memory/identity).
History is the supersede chain (oldest first, the current version last), followed across a
merge into another document (a move onto an equal entry).
"""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.memory.chain import chain_in
from pi_hermes_memory.domain.memory.identity import parse_reference, resolve
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.memory.service import MemoryService, entry_view
from pi_hermes_memory.results import EntryView, WriteResult


@attrs.frozen(kw_only=True)
class Located:
    """Where a reference leads: the row (None when it left every document) and its target.
    `memory_id`: the stable id of the memory (ADR 0074); `pinned`: the reference named one
    version (`ID@N` or a version id), not the memory."""

    target: Target
    entry: MemoryEntry | None
    memory_id: str = ""
    pinned: bool = False


def _rows(service: MemoryService) -> list[MemoryEntry]:
    return [e for t in Target for e in service.document(t).all_entries()]


def locate(service: MemoryService, reference: str) -> Located | None:
    """What `reference` (a stable id, `ID@N` or a version id) names that this session may
    see: for a memory its current version, else the document it was removed from; None:
    unknown or not visible."""
    rows = _rows(service)
    found = resolve(rows, reference)
    visible = service.settings.scope.visible
    if found is not None:
        if found.row is not None:
            if not visible(found.row):
                return None
            return Located(
                target=found.row.target,
                entry=found.row,
                memory_id=found.memory_id,
                pinned=found.pinned,
            )
        if not visible(found.last):
            return None
        gone = _removed_from(service, found.last.superseded_by or found.last.id)
        return Located(target=gone or found.last.target, entry=None, memory_id=found.memory_id)
    gone = _removed_from(service, parse_reference(reference).id)
    return None if gone is None else Located(target=gone, entry=None, memory_id=reference)


def write_reference(found: Located) -> str:
    """What a write command names for `found` (found.entry set): a memory's current version by
    its version id; a version named by `ID@N` as `ID@N`, so that the decision answers
    `superseded` unless it still is the head (ADR 0074)."""
    assert found.entry is not None
    if found.pinned:
        return f"{found.entry.stable_id}@{found.entry.version_no}"
    return found.entry.id


def _removed_from(service: MemoryService, entry_id: str) -> Target | None:
    for target in Target:
        if service.document(target).was_removed(entry_id):
            return target
    return None


def get(service: MemoryService, reference: str) -> EntryView | None:
    """The version a reference names (a memory: its current version; `ID@N` or a version id:
    that version, maybe an old one) that this session may see."""
    found = locate(service, reference)
    return entry_view(found.entry) if found is not None and found.entry is not None else None


def history(service: MemoryService, reference: str) -> list[EntryView]:
    """Every version of the memory `reference` names, oldest first (the current one last),
    across the documents (a promote/demote merge continues a chain in another one); empty when
    this session sees no row of it."""
    rows = _rows(service)
    found = resolve(rows, reference)
    if found is None or not service.settings.scope.visible(found.last):
        return []
    scope = service.settings.scope
    return [entry_view(e) for e in chain_in(rows, found.last.id) if scope.visible(e)]


def unknown_id(action: str) -> WriteResult:
    return WriteResult(
        success=False,
        status=Status.NOT_FOUND,
        message="No visible entry has this id; nothing was changed.",
        action=action,
    )


def gone_id(action: str, target: Target) -> WriteResult:
    return WriteResult(
        success=False,
        status=Status.GONE,
        message=f"The {target.value} entry with this id was removed (or moved); nothing was "
        "changed. `restore` brings a removed entry back.",
        target=target.value,
        action=action,
    )


__all__ = ["Located", "get", "gone_id", "history", "locate", "unknown_id", "write_reference"]
