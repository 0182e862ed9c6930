"""Undoing removals: which removed entries a document can bring back, and the decision to.

Every removal (a hand edit deleting an entry, the tool's remove, an eviction) leaves the entry in
the journal; `restorable` reads it back from the stream's events, and `decide_restore` makes it
active again with its old id, text, dates and attribution (ADR 0022).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.decide import Decision
from pi_hermes_memory.domain.memory.document import MemoryDocument, removals
from pi_hermes_memory.domain.memory.events import Event, MemoryRestored, RemovalReason, stamp
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target, normalize_text
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.similarity import Candidate
from pi_hermes_memory.domain.status import Status


@attrs.frozen(kw_only=True)
class RemovedEntry:
    """An entry as it was when it was removed, and why and when it was removed."""

    entry: MemoryEntry
    reason: RemovalReason
    removed_at: datetime
    version: int  # the version of the removal event


def restorable(target: Target, events: Iterable[Event]) -> list[RemovedEntry]:
    """The entries of one stream (all its events, in order) whose last fate was a removal,
    most recently removed first."""
    found = [
        RemovedEntry(entry=entry, reason=event.reason, removed_at=event.at, version=event.version)
        for entry, event in removals(target, events).values()
    ]
    return sorted(found, key=lambda r: r.version, reverse=True)


def select_restorable(
    candidates: Iterable[RemovedEntry], query: str, scope: SessionScope
) -> list[RemovedEntry]:
    """The removed entries `query` names: an exact id (a version's, else a memory's stable id,
    ADR 0074), else those whose text contains it (case-insensitive), among the ones this
    session may see; one per text, newest removal."""
    visible = [c for c in candidates if scope.visible(c.entry)]
    by_id = [c for c in visible if c.entry.id == query.strip()]
    if by_id:
        return by_id
    # a memory's stable id (ADR 0074): its removed current version
    of_memory = [c for c in visible if c.entry.stable_id == query.strip()]
    if of_memory:
        return of_memory[:1]  # the newest removal (candidates come newest first)
    needle = query.strip().casefold()
    if not needle:
        return []
    seen: set[str] = set()
    out: list[RemovedEntry] = []
    for c in visible:
        if needle in c.entry.text.casefold() and c.entry.key not in seen:
            seen.add(c.entry.key)
            out.append(c)
    return out


def decide_restore(
    doc: MemoryDocument, found: list[RemovedEntry], query: str, at: datetime
) -> Decision:
    if not found and query.strip() in doc.purged:
        return Decision(
            status=Status.NOT_FOUND,
            message=f"The entry {query.strip()} was purged (ADR 0026): its text is erased and "
            "cannot be restored.",
        )
    if not found:
        return Decision(
            status=Status.NOT_FOUND,
            message=f"No removed {doc.target.value} entry matches {shown(query)}; nothing was "
            "restored.",
        )
    if len(found) > 1:
        return Decision(
            status=Status.AMBIGUOUS,
            message=f"{len(found)} removed entries match {shown(query)}; name one by its id.",
            matches=tuple(c.entry.id for c in found),
            candidates=tuple(
                Candidate(entry_id=c.entry.id, text=c.entry.text, score=1.0, basis="removed")
                for c in found
            ),
        )
    entry = found[0].entry
    key = normalize_text(entry.text)
    for active in doc.active:
        if active.key == key and (active.project, active.namespace) == (
            entry.project,
            entry.namespace,
        ):
            return Decision(
                status=Status.NOOP,
                message="An equal entry is already active; nothing was restored.",
                entry_id=active.id,
            )
    if entry.id not in doc.removed or doc.find(entry.id) is not None:
        return Decision(
            status=Status.NOT_FOUND,
            message=f"The entry {entry.id} is not a removed entry of {doc.target.value}.",
        )
    event = MemoryRestored(
        stream=doc.stream,
        at=at,
        entry_id=entry.id,
        target=entry.target,
        text=entry.text,
        project=entry.project,
        category=entry.category,
        created=entry.created,
        last_referenced=entry.last_referenced,
        namespace=entry.namespace,
        flagged=entry.flagged,
        importance=entry.importance,
        kind=entry.kind,
        memory_id=entry.memory_id,  # ADR 0074: the memory keeps its stable id
        version_no=entry.version_no if entry.memory_id is not None else None,
    )
    return Decision(
        status=Status.RESTORED,
        message=f"Restored: {entry.text}",
        events=stamp(doc.stream, doc.version, (event,)),
        entry_id=entry.id,
    )
