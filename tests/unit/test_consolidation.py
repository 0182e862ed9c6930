"""Consolidation (issue 12 §4): pre-clustering, the all-or-nothing plan, the input boundary,
capacity-triggered consolidation and the manual command, with a fake completer object."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pi_hermes_memory
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.learning.clustering import cluster, render
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MemoryCommand,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.decide import WritePolicy
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure
from pi_hermes_memory.learning.consolidation import apply_plan, boundary

from tests.support import builders

AT = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
DUP_A = "the project build needs a full type check before every merge of code"
DUP_B = "the project build needs a full type check before each merge of code"
#: 20 characters whose facts "tox" keeps (a compression the coverage rule accepts)
WORDY = "use tox; that is all"


class FakeCompleter:
    """Scripted replies, one per call; records the prompts it was given."""

    def __init__(self, *replies: str | CompletionFailed) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        assert timeout > 0
        self.prompts.append(user)
        reply = self.replies.pop(0) if self.replies else '{"operations": []}'
        if isinstance(reply, CompletionFailed):
            raise reply
        return reply


def plan(*ops: dict[str, str]) -> str:
    return json.dumps({"operations": list(ops)})


def open_store(
    tmp_path: Path, completer: FakeCompleter | None, limit: int = 200, **extra: object
) -> Memory:
    root = tmp_path / "agent"
    root.mkdir(exist_ok=True)
    cfg = {"memoryCharLimit": limit, "projectCharLimit": limit, **extra}
    (root / "hermes-memory-config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return pi_hermes_memory.open(
        agent_root=root,
        environ={"HOME": str(tmp_path)},
        cwd=tmp_path,
        project="app",
        storage=InMemoryStorage(),
        markdown=InMemoryMarkdown(),
        completer=completer,
    )


# -- pre-clustering -----------------------------------------------------------------------------


def test_near_duplicates_form_a_cluster_and_the_rest_is_ungrouped() -> None:
    entries = [("a", DUP_A), ("b", "use ruff for linting"), ("c", DUP_B)]
    clustering = cluster(entries)
    assert clustering.clusters == (("a", "c"),)
    assert clustering.ungrouped == ("b",)
    text = render(entries, clustering)
    assert text == (
        f"[Near-duplicate cluster 1]\n{DUP_A}\n§\n{DUP_B}\n\n"
        "[Ungrouped entries]\nuse ruff for linting"
    )


def test_without_clusters_the_plain_separator_format_is_kept() -> None:
    entries = [("a", "one fact"), ("b", "another thing entirely")]
    assert render(entries, cluster(entries)) == "one fact\n§\nanother thing entirely"


def test_stored_vectors_link_at_082_and_the_token_rule_covers_rows_without_one() -> None:
    entries = [("a", "alpha"), ("b", "beta"), ("c", "gamma"), ("d", "delta")]
    vectors = {"a": [1.0, 0.0], "b": [0.82, (1 - 0.82**2) ** 0.5], "c": [0.0, 1.0]}
    clustering = cluster(entries, vectors)
    assert clustering.clusters == (("a", "b"),)  # c is orthogonal; d has no vector, no tokens
    chained = cluster([("x", DUP_A), ("y", DUP_B), ("z", "zzz")], {"x": [1.0], "z": [1.0]})
    assert chained.clusters == (("x", "y", "z"),)  # connected components: x~y by tokens, x~z


# -- the plan, all or nothing -------------------------------------------------------------------

_SCOPE = SessionScope(project="app")
_POLICY = WritePolicy(scope=_SCOPE, char_limit=100_000)
_TEXTS = st.sampled_from(
    ["alpha fact", "beta fact longer text", "gamma", "delta delta delta", "x" * 40, "new"]
)


def _seeded(texts: Sequence[str], foreign: Sequence[str]):  # type: ignore[no-untyped-def]
    svc = builders.service(project="app")
    for n, text in enumerate(texts):
        svc.execute(AddMemory(target=Target.PROJECT, text=f"{text} {n}", entry_id=f"p{n}", at=AT))
    other = builders.service(svc._storage, svc._markdown, project="other")
    for n, text in enumerate(foreign):
        other.execute(
            AddMemory(target=Target.PROJECT, text=f"{text} f{n}", entry_id=f"f{n}", at=AT)
        )
    return svc.document(Target.PROJECT)


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "replace", "remove"]), _TEXTS, st.integers(0, 7), st.booleans()
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_TEXTS, min_size=1, max_size=5),
    foreign=st.lists(_TEXTS, max_size=3),
    ops=_OPS,
)
def test_a_plan_applies_whole_and_shrinks_or_changes_nothing_and_never_leaves_its_input(
    texts: list[str], foreign: list[str], ops: list[tuple[str, str, int, bool]]
) -> None:
    doc = _seeded(texts, foreign)
    inside = boundary(doc.active, Target.PROJECT, _SCOPE)
    allowed = frozenset(e.id for e in inside)
    everything = [e.text for e in doc.active]
    commands: list[MemoryCommand] = []
    for n, (action, text, pick, aim_outside) in enumerate(ops):
        old = everything[pick % len(everything)]
        if not aim_outside:
            old = inside[pick % len(inside)].text
        if action == "add":
            commands.append(AddMemory(target=Target.PROJECT, text=text, entry_id=f"n{n}", at=AT))
        elif action == "replace":
            commands.append(
                ReplaceMemory(
                    target=Target.PROJECT, old_text=old, text=text, entry_id=f"n{n}", at=AT
                )
            )
        else:
            commands.append(RemoveMemory(target=Target.PROJECT, old_text=old, at=AT))
    sharing = SessionScope(project="app", sharing=True)  # explicit edits may see other projects
    policy = WritePolicy(scope=sharing, char_limit=100_000)
    decisions, why = apply_plan(
        {Target.PROJECT: doc},
        commands,
        target=Target.PROJECT,
        allowed=allowed,
        policies={Target.PROJECT: policy},
        scope=sharing,
    )
    event("applied" if why is None else "refused")
    if why is not None:
        assert decisions == []
        return
    assert len(decisions) == len(commands) and all(d.success for d in decisions)
    from pi_hermes_memory.domain.memory.document import WorkingDocument

    work = WorkingDocument(doc)
    for _, d in decisions:
        work.apply(d.events)
    after = boundary(work.active, Target.PROJECT, _SCOPE)
    assert sum(len(e.text) for e in after) < sum(len(e.text) for e in inside)
    outside_before = {(e.id, e.text) for e in doc.active if e.id not in allowed}
    assert {(e.id, e.text) for e in work.active if e.id not in {a.id for a in after}} == (
        outside_before
    )


def test_the_boundary_of_failures_is_the_project_and_unattributed_ones() -> None:
    svc = builders.service(project=None)
    svc.execute(AddMemory(target=Target.FAILURE, text="global failure", entry_id="g", at=AT))
    builders.service(svc._storage, svc._markdown, project="app").execute(
        AddMemory(target=Target.FAILURE, text="app failure", entry_id="a", at=AT)
    )
    builders.service(svc._storage, svc._markdown, project="web").execute(
        AddMemory(target=Target.FAILURE, text="web failure", entry_id="w", at=AT)
    )
    doc = builders.service(svc._storage, svc._markdown, project="app").document(Target.FAILURE)
    scope = SessionScope(project="app", sharing=True)
    assert {e.id for e in boundary(doc.active, Target.FAILURE, scope)} == {"g", "a"}


# -- the store: manual and capacity-triggered ---------------------------------------------------


def test_manual_consolidation_merges_a_cluster_keeping_history(tmp_path: Path) -> None:
    llm = FakeCompleter(
        plan(
            {
                "action": "replace",
                "target": "memory",
                "old_text": DUP_A,
                "content": "type check before merge",
            },
            {"action": "remove", "target": "memory", "old_text": DUP_B},
        )
    )
    with open_store(tmp_path, llm) as memory:
        memory.add(DUP_A)
        memory.add(DUP_B, force=True)
        memory.add("use ruff", force=True)
        (result,) = memory.consolidate("memory")
        assert result.status is Status.CONSOLIDATED and result.success, result.message
        assert result.clusters == 1 and result.after < result.before
        assert "[Near-duplicate cluster 1]" in llm.prompts[0]
        assert sorted(e.text for e in memory.entries("memory")) == [
            "type check before merge",
            "use ruff",
        ]
        history = memory.entries("memory", include_history=True)
        assert any(e.text == DUP_A and e.superseded_by for e in history)


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (
            plan({"action": "add", "target": "memory", "content": "more text than before, longer"}),
            "shrink",
        ),
        (plan({"action": "remove", "target": "memory", "old_text": "no such entry"}), "not_found"),
        (plan(), "no operation"),
        ("{ not json", "could not be read"),
        (CompletionFailed(CompletionFailure.TIMEOUT, "fake", "slow"), "timeout"),
    ],
)
def test_a_bad_plan_changes_nothing_and_says_why(
    tmp_path: Path, reply: str | CompletionFailed, why: str
) -> None:
    llm = FakeCompleter(reply, reply)
    with open_store(tmp_path, llm) as memory:
        memory.add("first fact")
        memory.add("second fact")
        (result,) = memory.consolidate("memory")
        assert not result.success and why in result.message
        assert sorted(e.text for e in memory.entries("memory")) == ["first fact", "second fact"]
        assert len(llm.prompts) <= 2  # the call budget


def test_a_capacity_refusal_consolidates_then_adds(tmp_path: Path) -> None:
    llm = FakeCompleter(
        plan({"action": "replace", "target": "memory", "old_text": "use tox", "content": "tox"})
    )
    with open_store(tmp_path, llm, limit=30) as memory:
        memory.add(WORDY)
        result = memory.add("b" * 20)
        assert result.status is Status.ADDED, result.message
        assert sorted(e.text for e in memory.entries("memory")) == ["b" * 20, "tox"]
        assert any("Consolidated" in w for w in result.warnings)


def test_a_failed_consolidation_refuses_the_add_with_the_reason(tmp_path: Path) -> None:
    llm = FakeCompleter(CompletionFailed(CompletionFailure.EXIT, "fake", "exit 3"))
    with open_store(tmp_path, llm, limit=30) as memory:
        memory.add("a" * 20)
        result = memory.add("b" * 20)
        assert result.status is Status.CAPACITY_EXCEEDED
        assert "auto-consolidation did not help" in result.message and "exit" in result.message
        assert [e.text for e in memory.entries("memory")] == ["a" * 20]


def test_a_batch_keeps_its_coordinates_after_consolidation(tmp_path: Path) -> None:
    llm = FakeCompleter(
        plan({"action": "replace", "target": "memory", "old_text": "use tox", "content": "tox"})
    )
    with open_store(tmp_path, llm, limit=30) as memory:
        memory.add(WORDY)
        ops = [
            {"action": "add", "target": "memory", "content": "b" * 20},
            {"action": "add", "target": "memory", "content": "c" * 3},
        ]
        batch = memory.batch(ops)
        assert [r.status for r in batch.results] == [Status.ADDED, Status.ADDED], batch
        assert batch.results[0].warnings


def test_with_the_llm_off_auto_consolidate_refuses_and_consolidate_says_it_is_off(
    tmp_path: Path,
) -> None:
    with open_store(tmp_path, None, limit=30) as memory:
        memory.add("a" * 20)
        result = memory.add("b" * 20)
        assert result.status is Status.CAPACITY_EXCEEDED and "no LLM" in result.message
        (off,) = memory.consolidate("memory")
        assert not off.success and "the LLM is off" in off.message


def test_a_second_consolidation_of_the_same_target_is_busy(tmp_path: Path) -> None:
    from pi_hermes_memory.adapters.markdown.atomic import try_file_lock

    llm = FakeCompleter()
    with open_store(tmp_path, llm) as memory:
        memory.add("first fact")
        assert memory._consolidator is not None
        path = memory._consolidator.lock_path(Target.MEMORY)
        with try_file_lock(path) as held:
            assert held
            (busy,) = memory.consolidate("memory")
        assert busy.status is Status.BUSY and "retry in a moment" in busy.message
        assert llm.prompts == []


_WORDS = st.lists(
    st.sampled_from(["build", "test", "merge", "type", "check", "构建", "测试命令"]), max_size=6
)


@settings(max_examples=200, deadline=None)
@given(a=_WORDS, b=_WORDS)
def test_the_token_links_are_the_add_paths_near_duplicate_rule(a: list[str], b: list[str]) -> None:
    from pi_hermes_memory.domain.search.similarity import is_near_duplicate

    left, right = " ".join(a), " ".join(b)
    linked = bool(cluster([("a", left), ("b", right)]).clusters)
    assert linked == is_near_duplicate(left, right)


@pytest.mark.parametrize("force", [False, True])
def test_the_retried_add_is_checked_against_what_consolidation_wrote_unless_forced(
    tmp_path: Path, force: bool
) -> None:
    merged = "deploy with make release on the build host"
    llm = FakeCompleter(
        plan({"action": "replace", "target": "memory", "old_text": "the host", "content": merged})
    )
    with open_store(tmp_path, llm, limit=90) as memory:
        memory.add("it is the host and that is all there is to it, ok!")  # 50 characters
        result = memory.add("deploy with make release on the build host!", force=force)
        if force:
            assert result.status is Status.ADDED, result.message
        else:
            assert result.status is Status.NEAR_DUPLICATE, result.message
            assert [c.text for c in result.candidates] == [merged]
        assert any(e.text == merged for e in memory.entries("memory"))


def test_stored_vectors_cluster_paraphrases_without_calling_the_provider(tmp_path: Path) -> None:
    from contextlib import nullcontext

    from pi_hermes_memory.learning.consolidation import Consolidator

    from tests.unit.test_embedding_service import PARAPHRASE_A, PARAPHRASE_B, UNRELATED, rig

    r = rig()
    for text in (PARAPHRASE_A, PARAPHRASE_B, UNRELATED):
        assert r.memory.add(text, force=True).success
    calls = len(r.embedder.calls)
    llm = FakeCompleter()
    consolidator = Consolidator(
        service=r.service,
        completer=llm,
        clock=r.service.clock,
        ids=builders.SequentialIds("c"),
        lock_dir=tmp_path,
        try_lock=lambda _path: nullcontext(True),
        timeout=5.0,
    )
    result = consolidator.consolidate(Target.MEMORY)
    assert result.clusters == 1 and not result.success  # the empty plan changes nothing
    assert f"[Near-duplicate cluster 1]\n{PARAPHRASE_A}\n§\n{PARAPHRASE_B}" in llm.prompts[0]
    assert len(r.embedder.calls) == calls


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-1, 1), st.floats(-1, 1)).filter(lambda v: abs(v[0]) + abs(v[1]) > 0.1),
        min_size=1,
        max_size=8,
    )
)
def test_links_made_by_the_caller_cluster_as_the_vectors_do(raw: list[tuple[float, float]]) -> None:
    from pi_hermes_memory.domain.learning.clustering import CLUSTER_COSINE, CosineLinks

    units = {
        f"e{n}": [x / (x * x + y * y) ** 0.5, y / (x * x + y * y) ** 0.5]
        for n, (x, y) in enumerate(raw)
    }
    entries = [(i, f"text {i}") for i in units]
    pairs = frozenset(
        (a, b)
        for a in units
        for b in units
        if a < b and sum(p * q for p, q in zip(units[a], units[b], strict=True)) >= CLUSTER_COSINE
    )
    links = CosineLinks(covered=frozenset(units), pairs=pairs)
    assert cluster(entries, links=links) == cluster(entries, units)
