"""promote / demote: moving one entry between the current project and the global layer.

The seed's rules: the source is located like a replace (promote: the project layer, own rows
unless sharing lets the session see foreign ones; demote: unattributed global memory rows); the
destination decides like an add — an exact copy there turns the move into a merge (the source
becomes history pointing at the destination's canonical row), a near-duplicate blocks unless
``force``, and the destination's capacity rules apply. The entry keeps its id and created date;
its last date is refreshed; promote drops the project, demote records the current project.
Both documents' events commit in one transaction, so a crash cannot leave two copies or none.
"""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.memory.commands import MoveDirection, MoveMemory
from pi_hermes_memory.domain.memory.decide import (
    Decision,
    WritePolicy,
    capacity_events,
    exact,
    locate_one,
    preview,
    same_scope,
)
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.events import (
    Event,
    MemoryMergedInto,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryReferenced,
    stamp,
)
from pi_hermes_memory.domain.memory.model import MemoryEntry
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.similarity import near_duplicates
from pi_hermes_memory.domain.status import Status


@attrs.frozen(kw_only=True)
class MoveDecision:
    """The outcome plus the events of each document (source first, then destination)."""

    decision: Decision
    source_events: tuple[Event, ...] = ()
    destination_events: tuple[Event, ...] = ()


def move_subject(
    source: MemoryDocument, cmd: MoveMemory, scope: SessionScope
) -> MemoryEntry | Decision:
    """The entry `cmd` would move out of `source`, or why there is none (a demote moves only
    unattributed global rows)."""
    pool = source
    if cmd.direction is MoveDirection.DEMOTE:
        pool = attrs.evolve(
            source,
            active=tuple(e for e in source.active if e.project is None and e.namespace is None),
        )
    return locate_one(pool, scope, cmd.old_text, None, cmd.old_id)


def decide_move(
    source: MemoryDocument,
    destination: MemoryDocument,
    cmd: MoveMemory,
    destination_policy: WritePolicy,
) -> MoveDecision:
    scope = destination_policy.scope
    verb = cmd.direction.value
    if source.target is not cmd.source or destination.target is not cmd.destination:
        raise ValueError(f"{verb} needs the {cmd.source} and {cmd.destination} documents")
    if scope.project is None:
        return MoveDecision(
            decision=Decision(
                status=Status.INVALID,
                message=f"Refused: {verb} needs a current project (set projectName or run "
                "inside a project directory).",
            )
        )
    if not scope.can_use(None):
        return MoveDecision(
            decision=Decision(
                status=Status.FORBIDDEN,
                message=f"Refused: {verb} moves to or from the global layer, and this session "
                "has no access to scope 'global' (see scopes.agentAccess).",
            )
        )
    located = move_subject(source, cmd, scope)
    if isinstance(located, Decision):
        return MoveDecision(decision=located)
    entry = located
    new_project = scope.project if cmd.direction is MoveDirection.DEMOTE else None
    today = cmd.at.date()
    rows = same_scope(destination, scope, new_project)
    same = exact(rows, entry.key)
    if same is not None:
        merged = MemoryMergedInto(
            stream=source.stream,
            at=cmd.at,
            entry_id=entry.id,
            into_stream=destination.stream,
            into_id=same.id,
            on=today,
        )
        touched = MemoryReferenced(
            stream=destination.stream,
            at=cmd.at,
            entry_id=same.id,
            on=today,
        )
        return MoveDecision(
            decision=Decision(
                status=Status.MERGED,
                message=f"The {cmd.destination.value} layer already holds this text; the "
                "moved entry now points to it.",
                entry_id=same.id,
            ),
            source_events=stamp(source.stream, source.version, (merged,)),
            destination_events=stamp(destination.stream, destination.version, (touched,)),
        )
    if not cmd.force:
        cosines = None if cmd.cosines is None else cmd.cosines.get(entry.id)
        candidates = near_duplicates(
            entry.text, [(e.id, e.text) for e in rows if e.id != entry.id], cosines
        )
        if candidates:
            listing = "; ".join(f"[{i + 1}] {preview(c.text)}" for i, c in enumerate(candidates))
            return MoveDecision(
                decision=Decision(
                    status=Status.NEAR_DUPLICATE,
                    message=f"Not moved: similar entries exist in the {cmd.destination.value} "
                    f"layer. Replace one of them instead, or {verb} again with force: true. "
                    f"Similar: {listing}",
                    candidates=candidates,
                )
            )
    capacity = capacity_events(
        destination,
        destination_policy,
        adding=len(entry.text),
        replacing=None,
        command=cmd,
    )
    if isinstance(capacity, Decision):
        return MoveDecision(decision=capacity)
    evictions, evicted = capacity
    moved_out = MemoryMovedOut(
        stream=source.stream,
        at=cmd.at,
        entry_id=entry.id,
        to_stream=destination.stream,
    )
    moved_in = MemoryMovedIn(
        stream=destination.stream,
        at=cmd.at,
        entry_id=entry.id,
        from_stream=source.stream,
        target=cmd.destination,
        text=entry.text,
        project=new_project,
        category=None,
        created=entry.created,
        last_referenced=max(today, entry.last_referenced),
        flagged=entry.flagged,
        importance=entry.importance,
        kind=entry.kind,
        memory_id=entry.memory_id,  # ADR 0074: the memory keeps its stable id
        version_no=entry.version_no if entry.memory_id is not None else None,
    )
    status = Status.PROMOTED if cmd.direction is MoveDirection.PROMOTE else Status.DEMOTED
    where = "global memory" if cmd.direction is MoveDirection.PROMOTE else "project memory"
    return MoveDecision(
        decision=Decision(
            status=status,
            message=f"Moved the entry to {where}.",
            entry_id=entry.id,
            evicted=evicted,
        ),
        source_events=stamp(source.stream, source.version, (moved_out,)),
        destination_events=stamp(destination.stream, destination.version, (*evictions, moved_in)),
    )
