"""promote / demote through the service on the in-memory adapters."""

from __future__ import annotations

from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.chain import check_chains
from pi_hermes_memory.domain.memory.commands import AddMemory, MoveDirection, MoveMemory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.memory.service import MemoryService

from tests.support.builders import service
from tests.support.fakes import StepClock

CLOCK = StepClock()
_n = [0]


def add(svc: MemoryService, text: str, target: Target, force: bool = False) -> str:
    _n[0] += 1
    result = svc.execute(
        AddMemory(target=target, text=text, entry_id=f"m{_n[0]}", at=CLOCK.now(), force=force)
    )
    assert result.success, result
    return result.entry_id or ""


def move(svc: MemoryService, direction: str, old: str, force: bool = False):  # type: ignore[no-untyped-def]
    return svc.move(
        MoveMemory(direction=MoveDirection(direction), old_text=old, at=CLOCK.now(), force=force)
    )


def texts(svc: MemoryService, target: Target) -> list[tuple[str, str | None]]:
    return [(e.text, e.project) for e in svc.entries(target)]


def test_promote_moves_the_entry_keeping_id_and_created() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md, project="web")
    entry_id = add(svc, "Always run database migrations before deploying", Target.PROJECT)
    created = svc.entries(Target.PROJECT)[0].created
    result = move(svc, "promote", "database migrations")
    assert result.success and result.status == "promoted" and result.entry_id == entry_id
    assert texts(svc, Target.PROJECT) == []
    [moved] = svc.entries(Target.MEMORY)
    assert (moved.id, moved.project, moved.created) == (entry_id, None, created)
    assert moved.last_referenced >= created
    assert "project=" not in md.files[Target.MEMORY].decode()
    assert b"migrations" not in md.files[Target.PROJECT]


def test_demote_records_the_current_project() -> None:
    svc = service(project="api")
    add(svc, "The staging cluster is in eu-west-1", Target.MEMORY)
    result = move(svc, "demote", "staging cluster")
    assert result.status == "demoted"
    assert texts(svc, Target.PROJECT) == [("The staging cluster is in eu-west-1", "api")]
    assert texts(svc, Target.MEMORY) == []


def test_round_trip_promote_then_demote() -> None:
    svc = service(project="web")
    entry_id = add(svc, "Feature flags live in flags.yaml", Target.PROJECT)
    assert move(svc, "promote", "flags.yaml").success
    assert move(svc, "demote", "flags.yaml").success
    [back] = svc.entries(Target.PROJECT)
    assert back.id == entry_id and back.project == "web"
    for target in (Target.PROJECT, Target.MEMORY):
        check_chains(svc.document(target))


def test_exact_copy_in_the_destination_merges() -> None:
    storage = InMemoryStorage()
    svc = service(storage, project="web")
    canonical = add(svc, "Use UTC timestamps everywhere", Target.MEMORY)
    source = add(svc, "Use UTC timestamps everywhere", Target.PROJECT)
    result = move(svc, "promote", "UTC timestamps")
    assert result.status == "merged" and result.entry_id == canonical
    assert texts(svc, Target.PROJECT) == []
    assert [e.id for e in svc.entries(Target.MEMORY)] == [canonical]
    history = [e for e in svc.entries(Target.PROJECT, include_history=True) if e.superseded_by]
    assert [(e.id, e.superseded_by) for e in history] == [(source, canonical)]
    assert storage.rows[source]["superseded_by"] == canonical


def test_near_duplicate_in_the_destination_blocks_unless_forced() -> None:
    svc = service(project="web")
    add(svc, "Use pytest for all the tests", Target.MEMORY)
    add(svc, "Use pytest for all tests", Target.PROJECT)
    blocked = move(svc, "promote", "pytest")
    assert blocked.status == "near_duplicate" and blocked.candidates
    assert texts(svc, Target.PROJECT) == [("Use pytest for all tests", "web")]
    assert move(svc, "promote", "pytest", force=True).status == "promoted"
    assert len(svc.entries(Target.MEMORY)) == 2


def test_destination_capacity_applies() -> None:
    svc = service(project="web", limit=30, overflow=OverflowStrategy.REJECT)
    add(svc, "g" * 25, Target.MEMORY)
    add(svc, "p" * 20, Target.PROJECT)
    result = move(svc, "promote", "ppp")
    assert result.status == "capacity_exceeded" and "memoryCharLimit" in result.message
    assert texts(svc, Target.PROJECT) == [("p" * 20, "web")]


def test_moves_need_a_project_and_respect_isolation() -> None:
    assert move(service(project=None), "demote", "x").status == "invalid"
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    a = service(storage, md, project="a")
    add(a, "Project a deploys with Helm charts", Target.PROJECT)
    b = service(storage, md, project="b")
    assert move(b, "promote", "Helm").status == "not_found"
    shared = service(storage, md, project="b", sharing=True)
    assert move(shared, "promote", "Helm").status == "promoted"


def test_demote_only_takes_unattributed_global_rows() -> None:
    svc = service(project="web")
    assert move(svc, "demote", "anything").status == "not_found"
