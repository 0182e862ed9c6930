"""Snapshots of folded documents (ADR 0024): a cache of the fold, never the truth."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MemoryCommand,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.decide import WritePolicy, decide
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.errors import CorruptSnapshot
from pi_hermes_memory.journal.pipeline import SNAPSHOT_EVERY
from pi_hermes_memory.journal.snapshots import decode_document, encode_document

from tests.support.builders import service

_T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
_WORDS = ("alpha", "beta", "gamma", "delta", "deploy", "cache", "queue", "tests", "项目", "构建")
_POLICY = WritePolicy(scope=SessionScope(project="app"), char_limit=10**6)
texts = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join)


@st.composite
def event_history(draw: st.DrawFn, target: Target) -> list[Event]:
    """Events as the write path makes them: decisions on random commands, folded as we go."""
    doc = MemoryDocument.empty(target)
    events: list[Event] = []
    for i in range(draw(st.integers(0, 40))):
        at = _T0 + timedelta(days=i // 5, seconds=i)
        kind = draw(st.sampled_from(("add", "add", "replace", "remove")))
        cmd: MemoryCommand
        if kind == "add":
            cmd = AddMemory(target=target, text=draw(texts), entry_id=f"e{i:03d}", at=at)
        elif kind == "replace":
            old = draw(st.sampled_from(_WORDS))
            cmd = ReplaceMemory(
                target=target, old_text=old, text=draw(texts), entry_id=f"e{i:03d}", at=at
            )
        else:
            cmd = RemoveMemory(target=target, old_text=draw(st.sampled_from(_WORDS)), at=at)
        decision = decide(doc, cmd, _POLICY)
        doc = fold(doc, decision.events)
        events.extend(decision.events)
    return events


@pytest.mark.parametrize("target", list(Target))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_folding_from_a_snapshot_equals_folding_from_zero(
    target: Target, data: st.DataObject
) -> None:
    events = data.draw(event_history(target))
    split = data.draw(st.integers(0, len(events)))
    whole = fold(MemoryDocument.empty(target), events)
    stored = encode_document(fold(MemoryDocument.empty(target), events[:split]))
    assert fold(decode_document(stored), events[split:]) == whole


@pytest.mark.parametrize(
    "data",
    [
        "",
        "not json",
        "[]",
        '{"format": 1}',
        '{"format": 99, "document": {}}',
        '{"format": 1, "document": {"stream": "memory:memory"}}',
        '{"format": 1, "document": {"stream": "memory:memory", "target": "memory", '
        '"version": "3", "active": [], "history": [], "removed": []}}',
        '{"format": 1, "document": {"stream": "memory:memory", "target": "memory", '
        '"version": 3, "active": [], "history": [], "removed": [], "extra": 1}}',
    ],
)
def test_a_corrupt_snapshot_is_one_error(data: str) -> None:
    with pytest.raises(CorruptSnapshot):
        decode_document(data)


def _adds(n: int, start: int = 0) -> list[AddMemory]:
    return [
        AddMemory(
            target=Target.USER,
            text=f"Fact {i} about {_WORDS[i % 10]} and {_WORDS[(i * 7) % 10]}",
            entry_id=f"u{i:05d}",
            at=_T0 + timedelta(seconds=i),
            force=True,
        )
        for i in range(start, start + n)
    ]


def _stored(storage: InMemoryStorage, target: Target) -> tuple[int, str] | None:
    with storage.transaction() as uow:
        return uow.journal.snapshot(stream_for(target))


def test_a_snapshot_is_kept_with_the_events_and_loaded_at_open() -> None:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    writer = service(storage, md)
    writer.execute_batch(_adds(SNAPSHOT_EVERY - 1))
    assert _stored(storage, Target.USER) is None
    writer.execute_batch(_adds(2, start=SNAPSHOT_EVERY))
    stored = _stored(storage, Target.USER)
    assert stored is not None and stored[0] == SNAPSHOT_EVERY + 1
    writer.execute_batch(_adds(3, start=2 * SNAPSHOT_EVERY))
    reader = service(storage, md)
    assert reader.document(Target.USER) == writer.document(Target.USER)
    with storage.transaction() as uow:
        from_zero = fold(
            MemoryDocument.empty(Target.USER), uow.journal.read(stream_for(Target.USER))
        )
    assert reader.document(Target.USER) == from_zero


@pytest.mark.parametrize("damage", ["garbage", "other stream", "ahead of the journal"])
def test_a_snapshot_that_does_not_fit_is_ignored(damage: str) -> None:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    writer = service(storage, md)
    writer.execute_batch(_adds(SNAPSHOT_EVERY + 5))
    expected = writer.document(Target.USER)
    stream = stream_for(Target.USER)
    with storage.transaction() as uow:
        version, data = uow.journal.snapshot(stream) or (0, "")
        if damage == "garbage":
            uow.journal.save_snapshot(stream, version, data[: len(data) // 2])
        elif damage == "other stream":
            other = encode_document(MemoryDocument.empty(Target.MEMORY))
            uow.journal.save_snapshot(stream, version, other)
        else:
            ahead = encode_document(attrs.evolve(expected, version=10**6))
            uow.journal.save_snapshot(stream, 10**6, ahead)
    reader = service(storage, md)
    assert reader.document(Target.USER) == expected
