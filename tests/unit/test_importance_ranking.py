"""The importance stage reads each row's stored importance (ADR 0045): unset ranks exactly as
the default 0.7, and a stored importance moves a row up or down."""

from __future__ import annotations

from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.inmemory.vectors import InMemoryVectorStore
from pi_hermes_memory.domain.memory.model import DEFAULT_IMPORTANCE
from pi_hermes_memory.search.embedding import EmbeddingService

from tests.support.builders import service as build_service
from tests.support.embedders import BagEmbedder
from tests.support.fakes import SequentialIds, StepClock

TEXTS = [
    "Production deploys use the blue green script",
    "Production deploys wait for the blue green canary",
    "Staging deploys use the rolling script",
    "The staging database resets every Sunday",
]
QUERY = "production deploys blue green"


def _memory() -> Memory:
    storage, markdown = InMemoryStorage(), InMemoryMarkdown()
    clock, ids = StepClock(), SequentialIds()
    return Memory(
        service=build_service(
            storage,
            markdown,
            clock=clock,
            ids=ids,
            embeddings=EmbeddingService(embedder=BagEmbedder(), store=InMemoryVectorStore(storage)),
            project="app",
        ),
        storage=storage,
        clock=clock,
        ids=ids,
        search_index=InMemorySearchIndex(storage),
    )


def _ranking(importance: list[float | None]) -> list[tuple[str, float]]:
    memory = _memory()
    for text, weight in zip(TEXTS, importance, strict=True):
        assert memory.add(text, force=True, importance=weight).success
    return [(h.text, h.score) for h in memory.search(QUERY).hits]


def test_unset_importance_ranks_exactly_as_the_default() -> None:
    unset = _ranking([None] * len(TEXTS))
    assert len(unset) >= 2
    assert unset == _ranking([DEFAULT_IMPORTANCE] * len(TEXTS))


def test_a_stored_importance_moves_a_row() -> None:
    unset = _ranking([None] * len(TEXTS))
    first, second = unset[0][0], unset[1][0]
    weights: list[float | None] = [None] * len(TEXTS)
    weights[TEXTS.index(first)] = 0.0
    weights[TEXTS.index(second)] = 1.0
    moved = _ranking(weights)
    assert moved[0][0] == second
    # the unimportant one fell below the important one; it stays above a row that holds a
    # quarter of the query (issue 27: scores are relevances, and the stage only multiplies
    # by 0.7..1.0, so importance reorders rows of similar relevance, never a full match
    # below a weak one)
    assert [t for t, _ in moved].index(first) == 1
    # the stage's factor: 0.7 + 0.3 · importance
    before = dict(unset)
    after = dict(moved)
    assert abs(after[first] / before[first] - 0.7 / 0.91) < 1e-6
    assert abs(after[second] / before[second] - 1.0 / 0.91) < 1e-6
