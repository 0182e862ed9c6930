"""Batches decide on an indexed working copy (ADR 0024): same decisions as folding a frozen
document after every decision, without its O(n) copy per operation; a batch size cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MemoryCommand,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.decide import Decision, WritePolicy, decide
from pi_hermes_memory.domain.memory.document import MemoryDocument, WorkingDocument, fold
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.memory.scope_index import ScopeIndex
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.results import WriteResult
from pi_hermes_memory.tools.registry import MAX_BATCH_OPERATIONS, parse_memory_arguments

from tests.support.builders import service

_T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
_WORDS = ("alpha", "beta", "gamma", "delta", "deploy", "cache", "queue", "tests")
_SCOPE = SessionScope(project="app", access=frozenset({"global", "agent:a"}))
_SCOPES = (_SCOPE, SessionScope(project="app", sharing=True), SessionScope(project=None))

texts = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join)


@st.composite
def commands(draw: st.DrawFn, target: Target) -> list[MemoryCommand]:
    out: list[MemoryCommand] = []
    namespaces = (None, "agent:a") if target is Target.MEMORY else (None,)
    for i in range(draw(st.integers(1, 30))):
        at = _T0 + timedelta(days=draw(st.integers(0, 3)), seconds=i)
        namespace = draw(st.sampled_from(namespaces))
        kind = draw(st.sampled_from(("add", "add", "add", "replace", "remove")))
        if kind == "add":
            out.append(
                AddMemory(
                    target=target,
                    text=draw(texts),
                    entry_id=f"e{i:03d}",
                    at=at,
                    force=draw(st.booleans()),
                    namespace=namespace,
                )
            )
        elif kind == "replace":
            out.append(
                ReplaceMemory(
                    target=target,
                    old_text=draw(st.sampled_from(_WORDS)),
                    text=draw(texts),
                    entry_id=f"e{i:03d}",
                    at=at,
                    namespace=namespace,
                )
            )
        else:
            out.append(
                RemoveMemory(
                    target=target,
                    old_text=draw(st.sampled_from(_WORDS)),
                    at=at,
                    namespace=namespace,
                )
            )
    return out


_PROJECTS = (None, "app", "web")


def _seeded(target: Target, rows: list[tuple[str, str | None]]) -> MemoryDocument:
    """A document that already holds rows of other projects, unattributed ones and rows of
    the session's project (or namespaces, for memory), as a hand edit could leave them."""
    entries = tuple(
        attrs.evolve(
            MemoryEntry.create(
                id=f"s{i:03d}",
                target=target,
                text=text,
                project=project,
                category=None,
                created=_T0.date(),
            ),
            namespace="agent:a" if target is Target.MEMORY and project == "web" else None,
        )
        for i, (text, project) in enumerate(rows)
    )
    empty = MemoryDocument.empty(target)
    return attrs.evolve(empty, version=0, active=entries)


def _frozen_path(
    doc: MemoryDocument, cmds: list[MemoryCommand], policy: WritePolicy
) -> tuple[list[Decision], MemoryDocument]:
    decisions = []
    for cmd in cmds:
        decision = decide(doc, cmd, policy)
        doc = fold(doc, decision.events)
        decisions.append(decision)
    return decisions, doc


def _working_path(
    doc: MemoryDocument, cmds: list[MemoryCommand], policy: WritePolicy
) -> tuple[list[Decision], MemoryDocument, WorkingDocument]:
    work = WorkingDocument(doc)
    decisions = []
    for cmd in cmds:
        decision = decide(work, cmd, policy)
        work.apply(decision.events)
        decisions.append(decision)
    return decisions, work.freeze(), work


def _same_index(a: ScopeIndex, b: ScopeIndex, doc: MemoryDocument) -> None:
    groups = {a_group for e in doc.active for a_group in (e.namespace, e.project)}
    for group in groups | {None}:
        assert sorted(e.id for e in a.rows(group)) == sorted(e.id for e in b.rows(group))
        assert a.used(group) == b.used(group)
        for entry in doc.active:
            assert a.exact(group, entry.key) == b.exact(group, entry.key)


@pytest.mark.parametrize("target", [Target.MEMORY, Target.PROJECT, Target.FAILURE])
@pytest.mark.parametrize("overflow", list(OverflowStrategy))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_working_document_decides_like_folding_after_every_decision(
    target: Target, overflow: OverflowStrategy, data: st.DataObject
) -> None:
    cmds = data.draw(commands(target))
    limit = data.draw(st.sampled_from((40, 120, 100_000)))
    scope = data.draw(st.sampled_from(_SCOPES))
    policy = WritePolicy(scope=scope, char_limit=limit, overflow=overflow)
    start = _seeded(target, data.draw(st.lists(st.tuples(texts, st.sampled_from(_PROJECTS)))))
    expected, expected_doc = _frozen_path(start, cmds, policy)
    got, got_doc, work = _working_path(start, cmds, policy)
    assert got == expected
    assert got_doc == expected_doc
    assert tuple(work.active) == expected_doc.active
    _same_index(work.index, expected_doc.index, expected_doc)


def test_batch_of_adds_matches_single_adds() -> None:
    one, many = service(), service()
    ops = [f"Entry number {i} about {_WORDS[i % 8]} and {_WORDS[(i * 3) % 8]}" for i in range(60)]
    singles = [one.execute(_add(text, i)) for i, text in enumerate(ops)]
    batch = many.execute_batch([_add(text, i) for i, text in enumerate(ops)])
    assert [(r.status, r.entry_id) for r in batch] == [(r.status, r.entry_id) for r in singles]
    assert many.document(Target.MEMORY).active == one.document(Target.MEMORY).active


def _add(text: str, i: int) -> AddMemory:
    return AddMemory(target=Target.MEMORY, text=text, entry_id=f"b{i:04d}", at=_T0)


def test_batch_above_the_cap_is_refused_with_a_clear_error() -> None:
    ops = [{"action": "add", "content": f"fact {i}"} for i in range(MAX_BATCH_OPERATIONS + 1)]
    with pytest.raises(ArgumentError, match="more than the 10,000 one batch may hold"):
        parse_memory_arguments({"operations": ops})
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    svc = service(storage, md)
    items: list[MemoryCommand | WriteResult] = [
        _add(f"fact {i}", i) for i in range(MAX_BATCH_OPERATIONS + 1)
    ]
    with pytest.raises(ArgumentError, match="nothing was applied"):
        svc.execute_batch(items)
    assert md.files == {}


def test_batch_at_the_cap_is_accepted() -> None:
    ops = [{"action": "add", "content": f"fact {i}"} for i in range(MAX_BATCH_OPERATIONS)]
    parsed = parse_memory_arguments({"operations": ops})
    assert isinstance(parsed, list) and len(parsed) == MAX_BATCH_OPERATIONS
