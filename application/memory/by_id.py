"""Entries by id across the four documents: get, history, and where an id lives (ADR 0028).

Ids are unique per store, so an id names at most one row; the caller need not know its target.
History is the supersede chain (oldest first, the current version last), followed across a
merge into another document (a move onto an equal entry).
"""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.memory.chain import chain_in
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.memory.service import MemoryService, entry_view
from pi_hermes_memory.results import EntryView, WriteResult


@attrs.frozen(kw_only=True)
class Located:
    """Where an id lives: the row (None when it left every document) and its target."""

    target: Target
    entry: MemoryEntry | None


def locate(service: MemoryService, entry_id: str) -> Located | None:
    """The visible row with this id, else the document it was removed from; None: unknown."""
    gone: Target | None = None
    for target in Target:
        doc = service.document(target)
        entry = doc.find(entry_id)
        if entry is not None:
            if service.settings.scope.visible(entry):
                return Located(target=target, entry=entry)
            return None
        if gone is None and doc.was_removed(entry_id):
            gone = target
    return None if gone is None else Located(target=gone, entry=None)


def get(service: MemoryService, entry_id: str) -> EntryView | None:
    """The entry (active or an old version) with this id that this session may see."""
    found = locate(service, entry_id)
    return entry_view(found.entry) if found is not None and found.entry is not None else None


def history(service: MemoryService, entry_id: str) -> list[EntryView]:
    """Every version of the fact `entry_id` belongs to, oldest first (the current one last),
    across the documents (a promote/demote merge continues a chain in another one); empty when
    this session sees no row with that id."""
    found = locate(service, entry_id)
    if found is None or found.entry is None:
        return []
    rows = [e for t in Target for e in service.document(t).all_entries()]
    scope = service.settings.scope
    return [entry_view(e) for e in chain_in(rows, entry_id) if scope.visible(e)]


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


__all__ = ["Located", "get", "gone_id", "history", "locate", "unknown_id"]
