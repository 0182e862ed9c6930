"""agent:/custom:/user: namespaces and the access gate (ADR 0014)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from pi_hermes_memory.adapters.markdown.format import parse_document, render_document
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.decide import WritePolicy, decide
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target, namespace_problem
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.status import Status

AT = datetime(2026, 7, 1, tzinfo=UTC)
CODER = SessionScope(project="web", access=frozenset({"global", "agent:coder"}))
REVIEWER = SessionScope(project="web", access=frozenset({"global", "agent:reviewer"}))
NO_GLOBAL = SessionScope(project="web", access=frozenset({"agent:coder"}))


def policy(scope: SessionScope) -> WritePolicy:
    return WritePolicy(scope=scope, char_limit=1_000)


class Store:
    def __init__(self, target: Target = Target.MEMORY) -> None:
        self.doc = MemoryDocument.empty(target)
        self.n = 0

    def run(self, cmd, scope: SessionScope):  # type: ignore[no-untyped-def]
        decision = decide(self.doc, cmd, policy(scope))
        self.doc = fold(self.doc, decision.events)
        return decision

    def add(self, text: str, scope: SessionScope, ns: str | None = None, **kw):  # type: ignore[no-untyped-def]
        self.n += 1
        cmd = AddMemory(
            target=self.doc.target, text=text, entry_id=f"n{self.n}", at=AT, namespace=ns, **kw
        )
        return self.run(cmd, scope)


@pytest.mark.parametrize(
    ("ns", "target", "ok"),
    [
        ("agent:coder", Target.MEMORY, True),
        ("custom:team-a", Target.MEMORY, True),
        ("user:alice", Target.USER, True),
        ("user:alice", Target.MEMORY, False),
        ("agent:coder", Target.USER, False),
        ("agent:", Target.MEMORY, False),
        ("agent:a b", Target.MEMORY, False),
        ("project:web", Target.MEMORY, False),
        ("admin:root", Target.MEMORY, False),
    ],
)
def test_namespace_names(ns: str, target: Target, ok: bool) -> None:
    assert (namespace_problem(ns, target) is None) is ok


def test_writes_need_access_and_land_in_their_namespace() -> None:
    s = Store()
    assert s.add("Coder prefers small commits", CODER, "agent:coder").status is Status.ADDED
    denied = s.add("Reviewer notes", CODER, "agent:reviewer")
    assert denied.status is Status.FORBIDDEN and "agent:reviewer" in denied.message
    assert s.add("global fact", NO_GLOBAL).status is Status.FORBIDDEN
    assert s.add("Bad scope", CODER, "nope:x").status is Status.INVALID
    assert [(e.text, e.namespace) for e in s.doc.active] == [
        ("Coder prefers small commits", "agent:coder")
    ]


def test_other_agents_rows_are_invisible_to_edits_and_dedup() -> None:
    s = Store()
    s.add("Run the linter before pushing", CODER, "agent:coder")
    # the same text in another namespace is a different row, not a duplicate
    assert s.add("Run the linter before pushing", REVIEWER, "agent:reviewer").status is Status.ADDED
    assert s.add("Run the linter before pushing", CODER).status is Status.ADDED  # global
    gone = s.run(
        RemoveMemory(target=Target.MEMORY, old_text="linter", at=AT, namespace="agent:coder"),
        REVIEWER,
    )
    assert gone.status is Status.FORBIDDEN
    hidden = s.run(
        ReplaceMemory(
            target=Target.MEMORY,
            old_text="linter",
            text="x y z",
            entry_id="r",
            at=AT,
            namespace="agent:reviewer",
        ),
        REVIEWER,
    )
    assert hidden.status is Status.REPLACED
    assert sorted((e.namespace or "global", e.text) for e in s.doc.active) == [
        ("agent:coder", "Run the linter before pushing"),
        ("agent:reviewer", "x y z"),
        ("global", "Run the linter before pushing"),
    ]


def test_visibility_follows_access() -> None:
    def row(namespace: str | None) -> MemoryEntry:
        day = date(2026, 1, 1)
        return MemoryEntry(
            id="a",
            target=Target.MEMORY,
            text="t",
            project=None,
            category=None,
            created=day,
            last_referenced=day,
            namespace=namespace,
        )

    assert CODER.visible(row("agent:coder")) and not REVIEWER.visible(row("agent:coder"))
    assert CODER.visible(row(None)) and not NO_GLOBAL.visible(row(None))


def test_capacity_is_per_namespace() -> None:
    s = Store()
    tight = WritePolicy(scope=CODER, char_limit=25)
    s.doc = fold(
        s.doc,
        decide(
            s.doc, AddMemory(target=Target.MEMORY, text="g" * 20, entry_id="g", at=AT), tight
        ).events,
    )
    own = decide(
        s.doc,
        AddMemory(
            target=Target.MEMORY, text="c" * 20, entry_id="c", at=AT, namespace="agent:coder"
        ),
        tight,
    )
    assert own.status is Status.ADDED  # the global row does not count against agent:coder


def test_scope_metadata_round_trips_through_markdown() -> None:
    entry = MemoryEntry(
        id="a",
        target=Target.USER,
        text="Alice likes tabs",
        project=None,
        category=None,
        created=date(2026, 1, 1),
        last_referenced=date(2026, 1, 2),
        namespace="user:alice",
    )
    text = render_document([entry], target=Target.USER)
    assert "scope=user:alice" in text
    [parsed] = parse_document(text, target=Target.USER).entries
    assert parsed.namespace == "user:alice" and parsed.text == "Alice likes tabs"
