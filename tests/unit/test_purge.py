"""Purge (ADR 0026): the fold of `MemoryPurged`, the chain a query names, and the service on
in-memory adapters (redaction, rows, snapshots, Markdown, restore, stale buffers, moves)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MoveDirection,
    MoveMemory,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, removals, stream_for
from pi_hermes_memory.domain.memory.events import (
    Event,
    MemoryAdded,
    MemoryPurged,
    MemoryRemoved,
    MemoryReplaced,
    RemovalReason,
)
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.purge import index, plan_purge, select
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.journal.codec import decode, encode
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.testing.contracts import added as contract_added

from tests.support.builders import service
from tests.support.fakes import StepClock

AT = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
DAY = date(2026, 7, 29)
S = "memory:memory"
CLOCK = StepClock()


def added(version: int, entry_id: str, text: str) -> MemoryAdded:
    return contract_added(version, entry_id, text, stream=S)


def replaced(version: int, old: str, new: str, text: str) -> MemoryReplaced:
    return MemoryReplaced(
        stream=S,
        version=version,
        at=AT,
        old_id=old,
        new_id=new,
        text=text,
        project=None,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )


# -- the fold -------------------------------------------------------------------------------


def test_purged_fold_drops_active_history_and_removed_ids() -> None:
    events: list[Event] = [
        added(1, "a", "one"),
        replaced(2, "a", "b", "one, revised"),
        added(3, "c", "other"),
        added(4, "d", "gone"),
        MemoryRemoved(stream=S, version=5, at=AT, entry_id="d", reason=RemovalReason.TOOL),
    ]
    before = fold(MemoryDocument.empty(Target.MEMORY), events)
    assert {e.id for e in before.all_entries()} == {"a", "b", "c"} and before.removed == {"d"}
    purge = MemoryPurged(stream=S, version=6, at=AT, entry_ids=("a", "b", "d"))
    after = fold(before, [purge])
    assert [e.id for e in after.active] == ["c"] and after.history == ()
    assert after.removed == frozenset() and after.purged == {"a", "b", "d"}
    assert removals(Target.MEMORY, [*events, purge]) == {}
    with pytest.raises(InvariantViolation):  # a purged id is never used again
        fold(after, [added(7, "a", "new text, old id")])


def test_purged_event_round_trips_through_the_codec() -> None:
    event = MemoryPurged(stream=S, version=3, at=AT, entry_ids=("x", "y"))
    assert decode(*encode(event)) == event


def test_redacted_journal_folds_to_the_same_state() -> None:
    """Blanking the chain's text in the earlier events changes nothing the fold keeps: the
    chain's ids leave with the MemoryPurged anyway."""
    events: list[Event] = [
        added(1, "a", "secret zebrafinch"),
        added(2, "c", "kept"),
        replaced(3, "a", "b", "secret zebrafinch, revised"),
        MemoryRemoved(stream=S, version=4, at=AT, entry_id="b", reason=RemovalReason.TOOL),
    ]
    idx = index({S: events})
    chain = select(idx, Target.MEMORY, "zebrafinch", SessionScope(project=None))
    assert chain == {"a", "b"}
    plan = plan_purge({S: events}, idx, chain, AT)
    assert plan.versions == 2 and plan.texts == ("secret zebrafinch", "secret zebrafinch, revised")
    redacted = {(e.stream, e.version): e for e in plan.redacted}
    rewritten = [redacted.get((e.stream, e.version), e) for e in events]
    assert not any("zebrafinch" in encode(e)[1] for e in rewritten)
    purge = plan.purges[S]
    original = fold(MemoryDocument.empty(Target.MEMORY), [*events, purge])
    assert fold(MemoryDocument.empty(Target.MEMORY), [*rewritten, purge]) == original


# -- the service ----------------------------------------------------------------------------


def add(text: str, target: Target = Target.MEMORY, n: list[int] = [0], **kw: object) -> AddMemory:  # noqa: B006
    n[0] += 1
    return AddMemory(target=target, text=text, entry_id=f"p{n[0]}", at=CLOCK.now(), **kw)  # type: ignore[arg-type]


def replace(old: str, text: str, n: list[int] = [0]) -> ReplaceMemory:  # noqa: B006
    n[0] += 1
    return ReplaceMemory(
        target=Target.MEMORY, old_text=old, text=text, entry_id=f"r{n[0]}", at=CLOCK.now()
    )


def remove(old: str) -> RemoveMemory:
    return RemoveMemory(target=Target.MEMORY, old_text=old, at=CLOCK.now())


def traces(storage: InMemoryStorage, md: InMemoryMarkdown, needle: str) -> list[str]:
    """Every place of the in-memory store that still holds `needle`."""
    found: list[str] = []
    with storage.transaction() as uow:
        for target in Target:
            stream = stream_for(target)
            for event in uow.journal.read(stream):
                if needle in encode(event)[1]:
                    found.append(f"event {stream} v{event.version}")
            snap = uow.journal.snapshot(stream)
            if snap is not None and needle in snap[1]:
                found.append(f"snapshot {stream}")
    found += [f"row {i}" for i, row in storage.rows.items() if needle in str(row)]
    found += [f"file {t.value}" for t, data in md.files.items() if needle.encode() in data]
    return found


def store() -> tuple[InMemoryStorage, InMemoryMarkdown, MemoryService]:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    return storage, md, service(storage, md)


def test_purge_erases_every_version_of_the_chain() -> None:
    storage, md, svc = store()
    svc.execute(add("The staging door code is zebrafinch-42"))
    svc.execute(add("The CI runs on GitHub Actions"))
    assert svc.execute(replace("zebrafinch", "The staging door code is zebrafinch-43")).success
    assert svc.execute(remove("zebrafinch-43")).success
    assert traces(storage, md, "zebrafinch")

    result = svc.purge(Target.MEMORY, "zebrafinch-42")  # the superseded first version
    assert result.success and result.status == "purged" and result.versions == 2
    assert traces(storage, md, "zebrafinch") == []
    assert [e.text for e in svc.entries(include_history=True)] == ["The CI runs on GitHub Actions"]
    assert svc.removed(Target.MEMORY) == []
    again = svc.purge(Target.MEMORY, result.entry_ids[0])
    assert again.status == "not_found" and "already purged" in again.message
    restored = svc.restore(Target.MEMORY, result.entry_ids[-1])
    assert restored.status == "not_found" and "purged" in restored.message


def test_a_replayed_journal_equals_the_service_state() -> None:
    storage, md, svc = store()
    for i in range(4):
        svc.execute(add(f"fact {i} about quokka{i}"))
    svc.execute(replace("quokka1", "fact 1 about quokka1, revised"))
    svc.purge(Target.MEMORY, "quokka1")
    with storage.transaction() as uow:
        replayed = fold(MemoryDocument.empty(Target.MEMORY), uow.journal.read(S))
    assert replayed == svc.document(Target.MEMORY)
    # a second service (another process) whose cached state predates the purge converges
    assert service(storage, md).document(Target.MEMORY) == replayed


def test_ambiguous_not_found_and_dry_run_change_nothing() -> None:
    storage, _md, svc = store()
    svc.execute(add("Deploys go through the blue pipeline"))
    svc.execute(add("Rollbacks go through the green pipeline"))
    with storage.transaction() as uow:
        before = list(uow.journal.read(S))
    ambiguous = svc.purge(Target.MEMORY, "pipeline")
    assert ambiguous.status == "ambiguous" and not ambiguous.success
    assert len(ambiguous.candidates) == 2 and len(ambiguous.matches) == 2
    assert svc.purge(Target.MEMORY, "nothing like it").status == "not_found"
    assert svc.purge(Target.USER, "blue pipeline").status == "not_found"  # another target
    preview = svc.purge(Target.MEMORY, "blue pipeline", dry_run=True)
    assert preview.status == "preview" and preview.versions == 1
    with storage.transaction() as uow:
        assert list(uow.journal.read(S)) == before
    assert len(svc.entries()) == 2


def test_the_snapshot_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pi_hermes_memory.journal.pipeline.SNAPSHOT_EVERY", 3)
    storage, md, svc = store()
    svc.execute(add("The vault key is kiwibird-77"))
    for i in range(4):
        svc.execute(add(f"unrelated fact {i} about wombat{i}"))
    with storage.transaction() as uow:
        snap = uow.journal.snapshot(S)
    assert snap is not None and "kiwibird" in snap[1]
    svc.purge(Target.MEMORY, "kiwibird")
    with storage.transaction() as uow:
        version, data = uow.journal.snapshot(S) or (0, "")
        assert version == uow.journal.version(S) and "kiwibird" not in data
    assert traces(storage, md, "kiwibird") == []
    assert service(storage, md).document(Target.MEMORY) == svc.document(Target.MEMORY)


def test_a_stale_buffer_brings_purged_text_back_only_as_a_new_entry() -> None:
    """The merge base of a buffer loaded before the purge no longer holds the purged entry:
    the text it still shows is a new hand-written add (new id, scanned), with a warning."""
    _storage, md, svc = store()
    svc.execute(add("The staging door code is zebrafinch-42"))
    svc.execute(add("The CI runs on GitHub Actions"))
    stale = md.files[Target.MEMORY]
    purged = svc.purge(Target.MEMORY, "zebrafinch")
    md.files[Target.MEMORY] = stale  # an editor saves the buffer it loaded before
    views = svc.entries(Target.MEMORY)
    back = [v for v in views if "zebrafinch" in v.text]
    assert len(back) == 1 and back[0].id not in purged.entry_ids
    assert any("loaded before a purge" in w for w in svc.warnings)
    assert "The CI runs on GitHub Actions" in [v.text for v in views]


def test_an_untouched_second_replica_is_rendered_without_the_text() -> None:
    """Another agent root's file that is exactly its last render is replaced, not imported."""
    storage = InMemoryStorage()
    first, second = InMemoryMarkdown("root-a"), InMemoryMarkdown("root-b")
    a, b = service(storage, first), service(storage, second)
    a.execute(add("The staging door code is zebrafinch-42"))
    b.entries()
    assert b"zebrafinch" in second.files[Target.MEMORY]
    a.purge(Target.MEMORY, "zebrafinch")
    assert b.entries(Target.MEMORY) == []
    assert b"zebrafinch" not in second.files[Target.MEMORY]
    assert not any("loaded before a purge" in w for w in b.warnings)


def test_the_chain_follows_a_move_into_another_document() -> None:
    storage, md, svc = store()
    svc.execute(add("Use the staging token emuflight-9", Target.PROJECT))
    moved = svc.move(
        MoveMemory(direction=MoveDirection.PROMOTE, old_text="emuflight", at=CLOCK.now())
    )
    assert moved.success
    result = svc.purge(Target.MEMORY, "emuflight")
    assert result.status == "purged" and result.versions == 1
    assert traces(storage, md, "emuflight") == []
    with storage.transaction() as uow:
        for target in (Target.PROJECT, Target.MEMORY):
            assert isinstance(uow.journal.read(stream_for(target))[-1], MemoryPurged)


def test_another_sessions_scope_is_not_purged() -> None:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    svc = service(storage, md)
    svc.execute(add("Project api uses port 8443 for koalagate", Target.PROJECT))
    other = service(storage, md, project="web")
    assert other.purge(Target.PROJECT, "koalagate").status == "not_found"
    assert svc.purge(Target.PROJECT, "koalagate").status == "purged"


class _Unwritable(InMemoryMarkdown):
    """A Markdown store whose files cannot be rewritten (e.g. a full disk)."""

    fail = False

    def write(self, target: Target, data: bytes, *, expected: object = None) -> None:
        if self.fail:
            raise OSError(28, "No space left on device")
        super().write(target, data)


def test_a_file_that_could_not_be_rewritten_is_named() -> None:
    storage, md = InMemoryStorage(), _Unwritable()
    svc = service(storage, md)
    svc.execute(add("The staging door code is zebrafinch-42"))
    md.fail = True
    result = svc.purge(Target.MEMORY, "zebrafinch")
    assert result.status == "purged"
    assert any("still holds purged text" in w for w in result.warnings)
    md.fail = False
    svc.execute(add("A later write renders the file again"))
    assert b"zebrafinch" not in md.files[Target.MEMORY]


def test_a_merge_into_an_equal_entry_of_another_document_is_one_chain() -> None:
    """promote into an equal global entry makes the project entry history pointing at it
    (`MemoryMergedInto`): purging the global entry purges the project version too."""
    storage, md, svc = store()
    svc.execute(add("Use the staging token emuflight-9"))
    svc.execute(add("Use the staging token emuflight-9", Target.PROJECT))
    merged = svc.move(
        MoveMemory(direction=MoveDirection.PROMOTE, old_text="emuflight", at=CLOCK.now())
    )
    assert merged.status == "merged"
    result = svc.purge(Target.MEMORY, "emuflight")
    assert result.status == "purged" and result.versions == 2
    assert traces(storage, md, "emuflight") == []
    assert svc.entries(Target.PROJECT, include_history=True) == []
