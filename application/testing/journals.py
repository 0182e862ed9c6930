"""Sample journals for the contract suites and the projection tests."""

from __future__ import annotations

from datetime import UTC, date, datetime

from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.events import (
    Event,
    MemoryAdded,
    MemoryMergedInto,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryPurged,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemoryRestored,
    MemoryRetagged,
    MemorySuperseded,
    Origin,
    RemovalReason,
    stamp,
)
from pi_hermes_memory.domain.memory.model import Target

AT = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
DAY = date(2026, 7, 29)
LATER = date(2026, 8, 3)


def _added(
    target: Target,
    entry_id: str,
    text: str,
    project: str | None = None,
    namespace: str | None = None,
) -> MemoryAdded:
    return MemoryAdded(
        stream=stream_for(target),
        at=AT,
        entry_id=entry_id,
        target=target,
        text=text,
        project=project,
        category=None,
        created=DAY,
        last_referenced=DAY,
        namespace=namespace,
    )


def _retagged(
    target: Target,
    entry_id: str,
    text: str,
    project: str | None,
    namespace: str | None = None,
    last_referenced: date = DAY,
) -> MemoryRetagged:
    return MemoryRetagged(
        stream=stream_for(target),
        at=AT,
        entry_id=entry_id,
        text=text,
        project=project,
        category=None,
        created=DAY,
        last_referenced=last_referenced,
        namespace=namespace,
    )


def _replaced(
    target: Target, old_id: str, new_id: str, text: str, project: str | None
) -> MemoryReplaced:
    return MemoryReplaced(
        stream=stream_for(target),
        at=AT,
        old_id=old_id,
        new_id=new_id,
        text=text,
        project=project,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )


def every_event_type() -> dict[Target, list[Event]]:
    """A valid journal of two streams holding every memory event type, with the projection's
    special cases: a project row without attribution (not stored), a retag that gives it one
    (inserted), a retag that takes one away (deleted), a replace inheriting its old row's
    target and namespace, a promote (moved in place), a merge into the other document, a
    reference that moves a date forward, a removal undone by a restore, and a purge. Apply the
    project stream first: the memory stream's `MemoryMovedIn` moves a project row."""
    project, memory = stream_for(Target.PROJECT), stream_for(Target.MEMORY)
    p, m = Target.PROJECT, Target.MEMORY
    project_events: list[Event] = [
        _added(p, "p1", "The API listens on port 8080", "web"),
        _added(p, "p2", "Deploys go through staging", "web"),
        MemoryMovedOut(stream=project, at=AT, entry_id="p1", to_stream=memory),
        MemoryMergedInto(
            stream=project, at=AT, entry_id="p2", into_stream=memory, into_id="m1", on=LATER
        ),
        _added(p, "p3", "An entry without a project"),
        _retagged(p, "p3", "An entry without a project", "web"),
        _added(p, "p4", "An entry that loses its project", "web"),
        _retagged(p, "p4", "An entry that loses its project", None),
        _replaced(p, "p3", "p5", "An entry with a project, revised", "web"),
    ]
    memory_events: list[Event] = [
        _added(m, "m1", "Deploys go through staging"),
        _added(m, "m2", "The CI runs on GitHub Actions", namespace="agent:coder"),
        _replaced(m, "m2", "m3", "The CI runs on Buildkite", None),
        _added(m, "m4", "The CI runs on Buildkite!", namespace="agent:coder"),
        MemorySuperseded(stream=memory, at=AT, old_id="m4", by_id="m3", on=LATER),
        MemoryReferenced(stream=memory, at=AT, entry_id="m1", on=LATER),
        _retagged(m, "m1", "Deploys go through staging", None, "agent:reviewer", LATER),
        MemoryMovedIn(
            stream=memory,
            at=AT,
            entry_id="p1",
            from_stream=project,
            target=m,
            text="The API listens on port 8080",
            project=None,
            category=None,
            created=DAY,
            last_referenced=LATER,
        ),
        _added(m, "m5", "A note that comes back"),
        MemoryRemoved(stream=memory, at=AT, entry_id="m5", reason=RemovalReason.TOOL),
        MemoryRestored(
            stream=memory,
            at=AT,
            entry_id="m5",
            target=m,
            text="A note that comes back",
            project=None,
            category=None,
            created=DAY,
            last_referenced=DAY,
        ),
        _added(m, "m6", "A note that is erased"),
        MemoryPurged(stream=memory, at=AT, entry_ids=("m6",), origin=Origin.TOOL),
    ]
    return {
        p: list(stamp(project, 0, project_events)),
        m: list(stamp(memory, 0, memory_events)),
    }
