"""Decisions of the MemoryDocument aggregate: add, replace, remove, capacity."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.chain import SupersedeChain, check_chains
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.decide import WritePolicy, decide
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold
from pi_hermes_memory.domain.memory.events import MemoryAdded, MemoryRemoved, RemovalReason
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.status import Status

T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


class Doc:
    """A document plus a policy, with helpers that decide and fold."""

    def __init__(
        self,
        target: Target = Target.MEMORY,
        *,
        project: str | None = "app",
        sharing: bool = False,
        limit: int = 10_000,
        overflow: OverflowStrategy = OverflowStrategy.REJECT,
    ) -> None:
        self.doc = MemoryDocument.empty(target)
        self.target = target
        self.policy = WritePolicy(
            scope=SessionScope(project=project, sharing=sharing),
            char_limit=limit,
            overflow=overflow,
        )
        self.n = 0
        self.day = 0

    def _at(self) -> datetime:
        self.day += 1
        return T0 + timedelta(days=self.day)

    def apply(self, cmd):  # type: ignore[no-untyped-def]
        decision = decide(self.doc, cmd, self.policy)
        self.doc = fold(self.doc, decision.events)
        check_chains(self.doc)
        return decision

    def add(self, text: str, **kw):  # type: ignore[no-untyped-def]
        self.n += 1
        return self.apply(
            AddMemory(target=self.target, text=text, entry_id=f"id{self.n}", at=self._at(), **kw)
        )

    def replace(self, old: str, text: str, **kw):  # type: ignore[no-untyped-def]
        self.n += 1
        return self.apply(
            ReplaceMemory(
                target=self.target,
                old_text=old,
                text=text,
                entry_id=f"id{self.n}",
                at=self._at(),
                **kw,
            )
        )

    def remove(self, old: str):  # type: ignore[no-untyped-def]
        return self.apply(RemoveMemory(target=self.target, old_text=old, at=self._at()))

    def with_scope(self, project: str | None, sharing: bool = False) -> Doc:
        self.policy = WritePolicy(
            scope=SessionScope(project=project, sharing=sharing),
            char_limit=self.policy.char_limit,
            overflow=self.policy.overflow,
        )
        return self

    @property
    def texts(self) -> list[str]:
        return [e.text for e in self.doc.active]


def test_add_then_exact_duplicate_is_a_noop_even_with_force() -> None:
    d = Doc()
    first = d.add("The build uses make")
    assert first.status is Status.ADDED and first.success
    again = d.add("  The build   uses make ")
    assert again.status is Status.NOOP and again.success and again.entry_id == first.entry_id
    forced = d.add("The build uses make", force=True)
    assert forced.status is Status.NOOP
    assert d.texts == ["The build uses make"]
    assert d.doc.version == 1


def test_near_duplicate_blocks_with_candidates_and_force_overrides() -> None:
    d = Doc()
    d.add("Use pytest for tests")
    blocked = d.add("use pytest for all tests")
    assert blocked.status is Status.NEAR_DUPLICATE and not blocked.success
    assert [c.text for c in blocked.candidates] == ["Use pytest for tests"]
    assert "replace" in blocked.message and "force" in blocked.message
    assert d.add("use pytest for all tests", force=True).status is Status.ADDED
    assert len(d.texts) == 2


def test_failures_are_never_blocked_as_near_duplicates() -> None:
    d = Doc(Target.FAILURE)
    d.add("npm ci failed because the lockfile was stale")
    result = d.add(
        "npm ci failed because the lock file was stale", category=FailureCategory.CORRECTION
    )
    assert result.status is Status.ADDED
    assert d.doc.active[1].category is FailureCategory.CORRECTION
    assert d.doc.active[0].category is FailureCategory.FAILURE
    assert all(e.project == "app" for e in d.doc.active)


def test_project_target_needs_a_project_and_records_it() -> None:
    assert Doc(Target.PROJECT, project=None).add("x y z").status is Status.INVALID
    d = Doc(Target.PROJECT, project="web")
    d.add("Run the dev server with npm run dev")
    assert d.doc.active[0].project == "web"


def test_project_dedup_only_against_own_rows_even_with_sharing() -> None:
    d = Doc(Target.PROJECT, project="a")
    d.add("The API listens on port 8080")
    d.with_scope("b", sharing=True)
    assert d.add("The API listens on port 8080").status is Status.ADDED
    assert d.add("The API listens on TCP port 8080").status is Status.NEAR_DUPLICATE
    assert [e.project for e in d.doc.active] == ["a", "b"]


def test_global_targets_never_record_a_project() -> None:
    d = Doc(Target.USER, project="web")
    d.add("Prefers short answers")
    assert d.doc.active[0].project is None


def test_replace_keeps_history_and_builds_a_chain() -> None:
    d = Doc()
    d.add("Node 18 is used")
    r1 = d.replace("Node 18", "Node 20 is used")
    r2 = d.replace("Node 20", "Node 22 is used")
    assert r1.status is Status.REPLACED and r2.status is Status.REPLACED
    assert d.texts == ["Node 22 is used"]
    chain = SupersedeChain.of(d.doc, "id1")
    assert chain.head is not None and chain.head.text == "Node 22 is used"
    assert [e.text for e in chain.ancestors] == ["Node 18 is used", "Node 20 is used"]
    assert [e.superseded_by for e in chain.ancestors] == ["id2", "id3"]


def test_replace_into_existing_text_merges_into_the_canonical_row() -> None:
    d = Doc()
    d.add("Deploys run on Fridays")
    d.add("Releases are tagged vX.Y.Z")
    merged = d.replace("Fridays", "Releases are tagged vX.Y.Z")
    assert merged.status is Status.MERGED and merged.entry_id == "id2"
    assert d.texts == ["Releases are tagged vX.Y.Z"]
    assert d.doc.history[0].superseded_by == "id2"


def test_replace_keeps_position_in_file_order() -> None:
    d = Doc()
    for t in ("first fact here", "second fact here", "third fact here"):
        d.add(t)
    d.replace("second", "a replacement for the middle one")
    assert d.texts == ["first fact here", "a replacement for the middle one", "third fact here"]


def test_ambiguous_and_missing_old_text() -> None:
    d = Doc()
    d.add("Python 3.11 in CI")
    d.add("Python 3.12 locally")
    amb = d.remove("Python")
    assert amb.status is Status.AMBIGUOUS and len(amb.matches) == 2
    assert "Python 3.11 in CI" in amb.message
    assert d.remove("Ruby").status is Status.NOT_FOUND
    assert d.remove("3.12").status is Status.REMOVED
    assert d.texts == ["Python 3.11 in CI"]


def test_remove_deletes_without_a_supersede_node_and_closes_chains() -> None:
    d = Doc()
    d.add("old value one")
    d.replace("old value", "new value one")
    d.remove("new value")
    assert d.texts == [] and len(d.doc.history) == 1
    chain = SupersedeChain.of(d.doc, "id1")
    assert chain.head is None and chain.head_id == "id2"


def test_edits_respect_visibility() -> None:
    d = Doc(Target.PROJECT, project="a")
    d.add("secret sauce recipe of project a")
    d.with_scope("b")
    assert d.remove("secret sauce").status is Status.NOT_FOUND
    d.with_scope("b", sharing=True)
    replaced = d.replace("secret sauce", "shared sauce recipe")
    assert replaced.status is Status.REPLACED
    assert d.doc.active[0].project == "a"  # the new version stays its owner's (ADR 0027)


def test_a_shared_replace_keeps_the_owner_project_and_its_place() -> None:
    d = Doc(Target.PROJECT, project="a")
    d.add("project a builds with bazel")
    d.add("project a deploys on fridays")
    d.with_scope("b")
    d.add("project b builds with make")
    d.with_scope("b", sharing=True)
    assert d.replace("a deploys", "project a deploys on mondays").status is Status.REPLACED
    assert [(e.text, e.project) for e in d.doc.active] == [
        ("project a builds with bazel", "a"),
        ("project a deploys on mondays", "a"),
        ("project b builds with make", "b"),
    ]
    # a replace of the session's own row still records the current project
    assert d.replace("b builds", "project b builds with ninja").status is Status.REPLACED
    assert d.doc.active[2].project == "b"


def test_a_shared_replace_merges_into_the_owners_copy_of_the_text() -> None:
    d = Doc(Target.PROJECT, project="a")
    d.add("cache lives in /var/cache/a")
    d.add("the cache dir is configurable")
    d.with_scope("b", sharing=True)
    d.add("cache lives in /var/cache/a")  # b's own copy of the same text
    merged = d.replace("configurable", "cache lives in /var/cache/a")
    assert merged.status is Status.MERGED and merged.entry_id == "id1"  # a's row, not b's


def test_a_shared_replace_checks_the_owners_budget_and_never_evicts_there() -> None:
    d = Doc(Target.PROJECT, project="a", limit=40, overflow=OverflowStrategy.FIFO_EVICT)
    d.add("a" * 20)
    d.add("x" * 10)
    d.with_scope("b", sharing=True)
    d.add("b" * 35)  # b's budget is nearly full; a's has 10 characters left
    fits = d.replace("x" * 10, "c" * 20)  # 20 + 20 = 40 in a: fits a's budget
    assert fits.status is Status.REPLACED and not fits.evicted
    over = d.replace("c" * 20, "d" * 25)  # 45 in a: over a's budget; a's rows are not b's to evict
    assert over.status is Status.CAPACITY_EXCEEDED and "45" in over.message
    assert [e.text for e in d.doc.active] == ["a" * 20, "c" * 20, "b" * 35]


def test_a_shared_failure_replace_keeps_the_owner_project() -> None:
    d = Doc(Target.FAILURE, project="a")
    d.add("pip failed behind the proxy")
    d.with_scope(None, sharing=True)
    assert d.replace("behind the proxy", "pip failed behind the corporate proxy").success
    assert d.doc.active[0].project == "a"


def test_capacity_reject_names_limit_and_usage() -> None:
    d = Doc(limit=30)
    d.add("a" * 20)
    result = d.add("b" * 20)
    assert result.status is Status.CAPACITY_EXCEEDED
    assert (
        "30" in result.message
        and "20 used" in result.message
        and "memoryCharLimit" in result.message
    )


def test_auto_consolidate_without_llm_behaves_as_reject() -> None:
    d = Doc(limit=30, overflow=OverflowStrategy.AUTO_CONSOLIDATE)
    d.add("a" * 20)
    result = d.add("b" * 20)
    assert result.status is Status.CAPACITY_EXCEEDED
    assert "no LLM" in result.message and "reject" in result.message


def test_fifo_evicts_oldest_own_rows_only() -> None:
    d = Doc(Target.PROJECT, project="other", limit=25, overflow=OverflowStrategy.FIFO_EVICT)
    d.add("foreign row, other")
    d.with_scope("mine")
    d.add("m" * 10)
    d.add("n" * 10)
    result = d.add("o" * 10)
    assert result.status is Status.ADDED
    assert [e.text for e in result.evicted] == ["m" * 10]
    assert d.texts == ["foreign row, other", "n" * 10, "o" * 10]
    removed = [e for e in result.__getattribute__("events") if isinstance(e, MemoryRemoved)]
    assert removed[0].reason is RemovalReason.EVICTED


def test_fifo_rejects_an_entry_larger_than_the_limit() -> None:
    d = Doc(limit=5, overflow=OverflowStrategy.FIFO_EVICT)
    assert d.add("x" * 6).status is Status.CAPACITY_EXCEEDED


def test_failure_capacity_counts_own_and_unattributed_only() -> None:
    d = Doc(Target.FAILURE, project="other", limit=25)
    d.add("f" * 20)
    d.with_scope("mine")
    assert d.add("g" * 20).status is Status.ADDED  # the other project's failure does not count
    assert d.add("h" * 10).status is Status.CAPACITY_EXCEEDED


@pytest.mark.parametrize(
    "text",
    ["", "   ", "a\n§\nb", "x <!-- created=2026-01-01 -->", "nul\x00byte", "y" * 70_000],
)
def test_invalid_texts_are_refused(text: str) -> None:
    result = Doc().add(text)
    assert result.status is Status.INVALID and result.message.startswith("Refused")


def test_fold_rejects_version_gaps_and_repeats() -> None:
    doc = MemoryDocument.empty(Target.MEMORY)
    event = MemoryAdded(
        stream=doc.stream,
        version=2,
        at=T0,
        entry_id="x",
        target=Target.MEMORY,
        text="t",
        project=None,
        category=None,
        created=T0.date(),
        last_referenced=T0.date(),
    )
    with pytest.raises(VersionConflict):
        fold(doc, [event])
