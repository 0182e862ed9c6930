"""Embeddings on the write path, the search-time backfill and the bulk job (in memory)."""

from __future__ import annotations

import threading
from typing import Any

import attrs
import numpy as np
import pytest
import structlog
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.inmemory.vectors import InMemoryVectorStore
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.background import BACKGROUND, BACKGROUND_DIGEST
from pi_hermes_memory.domain.search.similarity import jaccard, token_set
from pi_hermes_memory.errors import HermesMemoryError
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.search import ScopeClause
from pi_hermes_memory.ports.vectors import ReembedProgress, VectorScope
from pi_hermes_memory.search.embedding import EmbeddingService, dedup_scope

from tests.support.builders import service as build_service
from tests.support.builders import settings
from tests.support.embedders import BagEmbedder
from tests.support.fakes import SequentialIds, StepClock

PARAPHRASE_A = "Production deploys use the blue green script"
PARAPHRASE_B = "Prod deployments use the blue-green script"
UNRELATED = "The staging database resets every Sunday"
EVERY = VectorScope.everything()


@attrs.define
class Rig:
    memory: Memory
    service: MemoryService
    storage: InMemoryStorage
    markdown: InMemoryMarkdown
    embedder: BagEmbedder
    store: InMemoryVectorStore
    embeddings: EmbeddingService

    def vector(self, entry_id: str) -> Any:
        return self.store.vectors([entry_id], self.embedder.model_id).get(entry_id)

    def entry_id(self, text: str) -> str:
        return next(e.id for e in self.memory.entries(include_history=True) if e.text == text)


def rig(project: str | None = "app", *, sharing: bool = False, **kw: Any) -> Rig:
    storage, markdown = InMemoryStorage(), InMemoryMarkdown()
    embedder = BagEmbedder(**kw)
    store = InMemoryVectorStore(storage)
    embeddings = EmbeddingService(embedder=embedder, store=store)
    clock, ids = StepClock(), SequentialIds()
    service = build_service(
        storage,
        markdown,
        clock=clock,
        ids=ids,
        embeddings=embeddings,
        project=project,
        sharing=sharing,
    )
    memory = Memory(service=service, storage=storage, clock=clock, ids=ids)
    return Rig(memory, service, storage, markdown, embedder, store, embeddings)


def test_the_paraphrases_differ_in_tokens_but_not_in_vectors() -> None:
    assert jaccard(token_set(PARAPHRASE_A), token_set(PARAPHRASE_B)) < 0.6
    vectors = BagEmbedder().embed([PARAPHRASE_A, PARAPHRASE_B, UNRELATED], kind="passage")
    assert float(vectors[0] @ vectors[1]) >= 0.99
    assert float(vectors[0] @ vectors[2]) < 0.5


# --- embedding on write -----------------------------------------------------------------------


def test_an_add_stores_its_vector_after_the_commit() -> None:
    r = rig()
    result = r.memory.add(PARAPHRASE_A)
    assert result.status == "added" and result.entry_id is not None
    vector = r.vector(result.entry_id)
    assert vector is not None and vector.dtype == np.float32
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-6)
    assert r.embedder.calls == [("passage", [PARAPHRASE_A])]  # one call, reused after COMMIT


def test_a_replace_embeds_the_new_version_and_history_keeps_its_vector() -> None:
    r = rig()
    old = r.memory.add("The CI runs on Jenkins").version_id
    assert old is not None
    new = r.memory.replace("Jenkins", "The CI runs on Buildkite").version_id
    assert new is not None and new != old
    assert r.vector(new) is not None and r.vector(old) is not None
    assert r.embedder.calls[-1] == ("passage", ["The CI runs on Buildkite"])


def test_failure_and_forced_adds_are_embedded_after_the_commit() -> None:
    r = rig()
    failure = r.memory.add("pip failed: old setuptools", target="failure").entry_id
    forced = r.memory.add("Some forced fact", force=True).entry_id
    assert failure is not None and forced is not None
    assert r.vector(failure) is not None and r.vector(forced) is not None


def test_a_batch_embeds_its_new_rows() -> None:
    r = rig()
    result = r.memory.batch(
        [
            {"action": "add", "target": "memory", "content": "Uses uv for Python"},
            {"action": "add", "target": "user", "content": "Prefers dark mode", "force": True},
            {"action": "add", "target": "memory", "content": "Web runs on Fly.io"},
        ]
    )
    assert result.success
    ids = [w.entry_id for w in result.results]
    assert all(i is not None and r.vector(i) is not None for i in ids)


def test_provider_failure_leaves_the_vector_empty_and_the_result_unchanged() -> None:
    plain, failing = rig(), rig()
    failing.embedder.fail = True
    with structlog.testing.capture_logs() as logs:
        broken = failing.memory.add(PARAPHRASE_A)
    ok = plain.memory.add(PARAPHRASE_A)
    assert attrs.evolve(broken, entry_id=None) == attrs.evolve(ok, entry_id=None)
    assert broken.entry_id is not None and failing.vector(broken.entry_id) is None
    assert [log["event"] for log in logs] == ["embedding.failed"]
    assert len(failing.embedder.calls) == 1  # not tried a second time after the COMMIT


def test_a_failed_replace_embedding_does_not_fail_the_replace() -> None:
    r = rig()
    r.memory.add("The CI runs on Jenkins")
    r.embedder.fail = True
    result = r.memory.replace("Jenkins", "The CI runs on Buildkite")
    assert result.status == "replaced" and result.version_id is not None
    assert r.vector(result.version_id) is None


def test_a_store_failure_does_not_fail_the_write() -> None:
    r = rig()

    def broken_put(*args: Any, **kw: Any) -> int:
        raise OSError("disk full")

    r.store.put = broken_put  # type: ignore[method-assign]
    with structlog.testing.capture_logs() as logs:
        assert r.memory.add("Uses uv").status == "added"
    assert "embedding.store_failed" in [log["event"] for log in logs]


def test_the_provider_is_never_called_under_the_store_lock() -> None:
    r = rig()
    free: list[bool] = []

    def check(kind: str, texts: list[str]) -> None:
        got: list[bool] = []
        locks = (r.markdown._lock, r.storage._lock)

        def probe() -> None:
            for lock in locks:
                acquired = lock.acquire(timeout=1)
                got.append(acquired)
                if acquired:
                    lock.release()

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        free.append(all(got))

    r.embedder.on_call = check
    r.memory.add(PARAPHRASE_A)
    r.memory.replace("blue green", "Production deploys use the red-black script")
    r.memory.batch([{"action": "add", "target": "memory", "content": "Uses uv", "force": True}])
    assert len(free) == 3 and all(free)


def test_moves_never_call_the_provider_and_keep_the_vector() -> None:
    r = rig()
    entry = r.memory.add("Web deploys use Docker Compose", target="project").entry_id
    assert entry is not None
    before = r.vector(entry)
    calls = len(r.embedder.calls)
    assert r.memory.promote("Docker Compose").status == "promoted"
    assert len(r.embedder.calls) == calls
    np.testing.assert_array_equal(r.vector(entry), before)
    assert r.memory.demote("Docker Compose").status == "demoted"
    assert len(r.embedder.calls) == calls
    np.testing.assert_array_equal(r.vector(entry), before)


def test_moves_block_on_stored_vectors_without_calling_the_provider() -> None:
    r = rig()
    assert r.memory.add(PARAPHRASE_A).status == "added"  # global
    moved = r.memory.add(PARAPHRASE_B, target="project").entry_id
    assert moved is not None
    calls = len(r.embedder.calls)
    result = r.memory.promote("blue-green")
    assert result.status == "near_duplicate" and len(r.embedder.calls) == calls
    assert [c.basis for c in result.candidates] == ["cosine"]
    assert r.memory.promote("blue-green", force=True).status == "promoted"
    assert len(r.embedder.calls) == calls


def test_a_move_without_a_stored_vector_uses_the_token_rule_only() -> None:
    r = rig()
    assert r.memory.add(PARAPHRASE_A).status == "added"
    r.embedder.fail = True  # the project row is saved without a vector
    assert r.memory.add(PARAPHRASE_B, target="project").status == "added"
    assert r.memory.promote("blue-green").status == "promoted"


def test_removes_make_no_call() -> None:
    r = rig()
    r.memory.add("Uses uv")
    calls = len(r.embedder.calls)
    assert r.memory.remove("Uses uv").status == "removed"
    assert len(r.embedder.calls) == calls


# --- near-duplicates by cosine ----------------------------------------------------------------


def test_a_paraphrase_is_blocked_by_cosine() -> None:
    r = rig()
    first = r.memory.add(PARAPHRASE_A)
    second = r.memory.add(PARAPHRASE_B)
    assert second.status == "near_duplicate" and not second.success
    (candidate,) = second.candidates
    assert candidate.entry_id == first.entry_id and candidate.basis == "cosine"
    assert candidate.score >= 0.9
    assert [e.text for e in r.memory.entries("memory")] == [PARAPHRASE_A]


def test_force_still_overrides() -> None:
    r = rig()
    r.memory.add(PARAPHRASE_A)
    forced = r.memory.add(PARAPHRASE_B, force=True)
    assert forced.status == "added"


def test_without_vectors_only_the_token_rule_applies() -> None:
    off = rig()
    off.embedder.fail = True
    off.memory.add(PARAPHRASE_A)
    assert off.memory.add(PARAPHRASE_B).status == "added"


def test_both_sides_need_a_current_vector() -> None:
    r = rig()
    r.embedder.fail = True
    r.memory.add(PARAPHRASE_A)  # stored without a vector
    r.embedder.fail = False
    assert r.memory.add(PARAPHRASE_B).status == "added"


def test_vectors_of_another_model_do_not_count() -> None:
    r = rig()
    r.memory.add(PARAPHRASE_A)
    r.embedder.model_id = "openai-compatible/another-model"
    assert r.memory.add(PARAPHRASE_B).status == "added"


def test_the_token_rule_still_blocks_when_vectors_disagree() -> None:
    r = rig()
    r.memory.add("The deploy script lives in ops/deploy.sh for production")
    result = r.memory.add("The deploy script lives in ops/deploy.sh for production!")
    assert result.status in ("near_duplicate", "noop")
    near = r.memory.add("the deploy script lives in ops deploy sh for production use")
    assert near.status == "near_duplicate" and near.candidates[0].basis in ("token", "cosine")


def test_cosines_stay_inside_the_project_and_the_namespace() -> None:
    r = rig(project="web")
    r.memory.add(PARAPHRASE_A, target="project")
    api = MemoryService(
        storage=r.storage,
        markdown=r.markdown,
        fmt=MarkdownFormat(),
        clock=StepClock(),
        ids=SequentialIds("f"),
        settings=settings("api"),
        embeddings=r.embeddings,
    )
    api_memory = Memory(service=api, storage=r.storage, clock=StepClock(), ids=SequentialIds("f"))
    assert api_memory.add(PARAPHRASE_B, target="project").status == "added"
    # memory rows: another namespace is another dedup scope
    r.memory.add(PARAPHRASE_A)
    scoped = attrs.evolve(
        r.service.settings,
        scope=SessionScope(project="web", access=frozenset({"global", "agent:coder"})),
    )
    r.service.settings = scoped
    assert r.memory.add(PARAPHRASE_B, scope="agent:coder").status == "added"
    assert r.memory.add(PARAPHRASE_B).status == "near_duplicate"


def test_paraphrases_inside_one_batch_are_caught() -> None:
    r = rig()
    result = r.memory.batch(
        [
            {"action": "add", "target": "memory", "content": PARAPHRASE_A},
            {"action": "add", "target": "memory", "content": PARAPHRASE_B},
        ]
    )
    assert [w.status for w in result.results] == ["added", "near_duplicate"]
    assert result.results[1].candidates[0].basis == "cosine"


def test_dedup_scope_follows_same_scope() -> None:
    scope = SessionScope(project="web")
    mem = r_add(Target.MEMORY, namespace="agent:x")
    assert dedup_scope(mem, scope) == VectorScope(
        clauses=(ScopeClause(Target.MEMORY, namespaces=("agent:x",)),)
    )
    assert dedup_scope(r_add(Target.PROJECT), scope) == VectorScope(
        clauses=(ScopeClause(Target.PROJECT, ("web",)),)
    )
    assert dedup_scope(r_add(Target.PROJECT), SessionScope(project=None)) is None
    assert dedup_scope(r_add(Target.FAILURE), scope) is None
    assert dedup_scope(r_add(Target.MEMORY, force=True), scope) is None


def r_add(target: Target, **kw: Any) -> Any:
    from datetime import UTC, datetime

    from pi_hermes_memory.domain.memory.commands import AddMemory

    return AddMemory(
        target=target, text="x", entry_id="e1", at=datetime(2026, 1, 1, tzinfo=UTC), **kw
    )


# --- the search-time backfill -----------------------------------------------------------------


def _fill(r: Rig, count: int, **kw: Any) -> list[str]:
    r.embedder.fail = True
    ids = []
    for i in range(count):
        result = r.memory.add(f"fact number {i} about topic{i}", force=True, **kw)
        assert result.entry_id is not None
        ids.append(result.entry_id)
    r.embedder.fail = False
    return ids


def test_backfill_embeds_at_most_sixteen_newest_first() -> None:
    r = rig()
    ids = _fill(r, 20)
    calls = len(r.embedder.calls)
    assert r.embeddings.backfill(EVERY) == 16
    assert len(r.embedder.calls) == calls + 1
    assert [i for i in ids if r.vector(i) is None] == ids[:4]
    assert r.embeddings.backfill(EVERY) == 4
    assert r.embeddings.backfill(EVERY) == 0
    assert len(r.embedder.calls) == calls + 2  # nothing missing: no call


def test_backfill_limit() -> None:
    r = rig()
    _fill(r, 5)
    assert r.embeddings.backfill(EVERY, limit=2) == 2
    assert r.embeddings.backfill(EVERY, limit=0) == 0
    assert r.embeddings.coverage() == (5, 2)


def test_backfill_stays_in_scope() -> None:
    r = rig(project="web", sharing=True)
    web = _fill(r, 2, target="project")
    r.service.settings = attrs.evolve(
        r.service.settings, scope=SessionScope(project="api", sharing=True)
    )
    api = _fill(r, 2, target="project")
    only_web = VectorScope(clauses=(ScopeClause(Target.PROJECT, ("web",)),))
    assert r.embeddings.backfill(only_web) == 2
    assert all(r.vector(i) is not None for i in web)
    assert all(r.vector(i) is None for i in api)


def test_backfill_failure_leaves_rows_for_a_later_search() -> None:
    r = rig()
    ids = _fill(r, 3)
    r.embedder.fail = True
    assert r.embeddings.backfill(EVERY) == 0
    assert all(r.vector(i) is None for i in ids)
    r.embedder.fail = False
    assert r.embeddings.backfill(EVERY) == 3


def test_backfill_replaces_vectors_of_another_model() -> None:
    r = rig()
    entry = r.memory.add("Uses uv").entry_id
    r.embedder.model_id = "openai-compatible/new-model"
    assert entry is not None and r.vector(entry) is None
    assert r.embeddings.backfill(EVERY) == 1
    assert r.vector(entry) is not None


def test_search_vectors() -> None:
    r = rig()
    r.memory.add(PARAPHRASE_A)
    _fill(r, 2)
    found = r.embeddings.search_vectors(EVERY, "prod deployment")
    assert found is not None
    assert len(found.ids) == 3  # the backfill ran first
    cosines = dict(zip(found.ids, found.cosines().tolist(), strict=True))
    best = max(cosines, key=lambda i: cosines[i])
    assert best == r.entry_id(PARAPHRASE_A)
    # the query, the backfill, then (once per service) the background sample (ADR 0069)
    assert ("query", ["prod deployment"]) in r.embedder.calls
    assert r.embedder.calls[-1] == ("passage", list(BACKGROUND))
    assert found.background is not None and found.background.shape[0] == len(BACKGROUND)
    calls = len(r.embedder.calls)
    again = r.embeddings.search_vectors(EVERY, "prod deployment")
    assert again is not None and again.background is found.background
    assert len(r.embedder.calls) == calls + 1  # the query only
    r.embedder.fail = True
    assert r.embeddings.search_vectors(EVERY, "anything") is None


def test_the_background_is_stored_with_the_vectors_and_read_back() -> None:
    r = rig()
    r.memory.add(PARAPHRASE_A)
    assert r.embeddings.search_vectors(EVERY, "prod deployment") is not None
    stored = r.store.background(r.embedder.model_id, BACKGROUND_DIGEST)
    assert stored is not None and stored.shape[0] == len(BACKGROUND)
    fresh = EmbeddingService(embedder=r.embedder, store=r.store)  # another process, same file
    calls = len(r.embedder.calls)
    found = fresh.search_vectors(EVERY, "prod deployment")
    assert found is not None and found.background is not None
    assert r.embedder.calls[calls:] == [("query", ["prod deployment"])]  # not embedded again
    np.testing.assert_allclose(found.background, stored, atol=1e-6)


def test_a_new_model_embeds_the_background_again() -> None:
    r = rig()
    r.memory.add(PARAPHRASE_A)
    assert r.embeddings.search_vectors(EVERY, "prod deployment") is not None
    r.embedder.model_id = "openai-compatible/new-model"
    fresh = EmbeddingService(embedder=r.embedder, store=r.store)
    assert fresh.search_vectors(EVERY, "prod deployment") is not None
    assert r.embedder.calls[-1] == ("passage", list(BACKGROUND))
    assert r.store.background("openai-compatible/new-model", BACKGROUND_DIGEST) is not None


def test_a_failed_background_leaves_no_calibration_and_is_retried() -> None:
    r = rig()
    r.memory.add(PARAPHRASE_A)
    r.embedder.fail_texts = {BACKGROUND[0]}
    found = r.embeddings.search_vectors(EVERY, "prod deployment")
    assert found is not None and found.background is None and found.calibration() is None
    r.embedder.fail_texts = set()
    again = r.embeddings.search_vectors(EVERY, "prod deployment")
    assert again is not None and again.calibration() is not None


def test_query_vector_is_unit_length() -> None:
    r = rig()
    vector = r.embeddings.query_vector("hello world")
    assert vector is not None and vector.shape == (64,)
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-6)


def test_a_misbehaving_embedder_is_treated_as_a_failure() -> None:
    r = rig()

    def wrong_shape(texts: Any, *, kind: str) -> Any:
        return np.ones((len(texts) + 1, 4), dtype=np.float32)

    r.embedder.embed = wrong_shape  # type: ignore[method-assign]
    assert r.embeddings.query_vector("x") is None
    assert r.memory.add("Uses uv").status == "added"

    def explodes(texts: Any, *, kind: str) -> Any:
        raise RuntimeError("bug")

    r.embedder.embed = explodes  # type: ignore[method-assign]
    assert r.memory.add("Uses pnpm").status == "added"


# --- the bulk job -----------------------------------------------------------------------------


def test_reembed_embeds_what_is_missing_in_batches_with_progress() -> None:
    r = rig()
    _fill(r, 10)
    r.memory.add("one with a vector already")
    seen: list[ReembedProgress] = []
    report = r.memory.reembed(seen.append, batch_size=4)
    assert (report.total, report.embedded, report.failed, report.batches) == (10, 10, 0, 3)
    assert report.success and report.stopped is None
    assert [(p.done, p.total) for p in seen] == [(4, 10), (8, 10), (10, 10)]
    assert r.embeddings.coverage() == (11, 11)
    assert r.memory.reembed().total == 0


def test_reembed_everything_recomputes_every_row() -> None:
    r = rig()
    r.memory.add("Uses uv")
    r.memory.replace("uv", "Uses uv and ruff")
    report = r.memory.reembed(everything=True)
    assert (report.total, report.embedded) == (2, 2)  # history included


def test_reembed_counts_failed_batches_and_goes_on() -> None:
    r = rig()
    ids = _fill(r, 6)
    r.embedder.fail_texts = {"fact number 4 about topic4"}
    report = r.memory.reembed(batch_size=2)
    assert (report.embedded, report.failed, report.batches) == (4, 2, 3)
    assert not report.success and report.stopped is None
    assert [i for i in ids if r.vector(i) is None] == ids[4:6]


def test_reembed_stops_when_the_provider_is_down() -> None:
    r = rig()
    _fill(r, 10)
    r.embedder.fail = True
    report = r.memory.reembed(batch_size=2)
    assert report.batches == 3 and report.failed == 6 and report.embedded == 0
    assert report.stopped is not None and "4 rows were not tried" in report.stopped
    assert report.to_json()["success"] is False


def test_reembed_without_embeddings_is_an_error() -> None:
    storage = InMemoryStorage()
    service = MemoryService(
        storage=storage,
        markdown=InMemoryMarkdown(),
        fmt=MarkdownFormat(),
        clock=StepClock(),
        ids=SequentialIds(),
        settings=settings(),
    )
    memory = Memory(service=service, storage=storage, clock=StepClock(), ids=SequentialIds())
    assert memory.embeddings is None
    with pytest.raises(HermesMemoryError, match="embeddings are off"):
        memory.reembed()


def test_reembed_rejects_a_bad_batch_size() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        rig().memory.reembed(batch_size=0)
