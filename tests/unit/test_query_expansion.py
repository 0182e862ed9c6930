"""Rocchio query expansion (`pi_hermes_memory.search.expansion`, ADR 0071): the pure update
and the `EmbeddingService` setting that applies it to a search's query vector."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.search import ScopeClause
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.expansion import Expansion, rocchio

from tests.unit.test_embedding_service import PARAPHRASE_A, PARAPHRASE_B, UNRELATED, rig


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


finite = st.floats(-1, 1, allow_nan=False, width=32).filter(lambda x: abs(x) > 1e-3)


@given(
    query=arrays(np.float32, 8, elements=finite),
    matrix=arrays(np.float32, st.tuples(st.integers(1, 12), st.just(8)), elements=finite),
    top=st.integers(1, 15),
    weight=st.floats(0.01, 4),
)
def test_rocchio_is_a_unit_vector_between_the_query_and_its_best_rows(
    query: np.ndarray, matrix: np.ndarray, top: int, weight: float
) -> None:
    q, m = _unit(query), _unit(matrix)
    moved = rocchio(q, m, top=top, weight=weight)
    assert moved.dtype == np.float32 and moved.shape == q.shape
    norm = float(np.linalg.norm(moved))
    if norm > 0:
        assert norm == pytest.approx(1.0, abs=1e-4)
    best = np.argsort(-(m @ q), kind="stable")[: min(top, len(m))]
    centroid = m[best].mean(axis=0)
    # the moved query is never further from the feedback centroid than the query was
    assert float(moved @ centroid) >= float(q @ centroid) - 1e-4


def test_rocchio_uses_the_top_rows_only() -> None:
    q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    m = _unit(np.array([[0.9, 0.1, 0.0], [0.8, 0.0, 0.2], [0.0, 0.0, 1.0]], dtype=np.float32))
    moved = rocchio(q, m, top=1, weight=1.0)
    expected = _unit(q + m[0])
    assert np.allclose(moved, expected, atol=1e-6)
    assert moved[2] == 0.0  # the far row took no part


def test_rocchio_without_rows_or_with_another_width_returns_the_query() -> None:
    q = _unit(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    assert np.array_equal(rocchio(q, np.zeros((0, 3), np.float32), top=3, weight=0.5), q)
    assert np.array_equal(rocchio(q, np.ones((2, 4), np.float32), top=3, weight=0.5), q)


@pytest.mark.parametrize(("top", "weight"), [(0, 0.5), (True, 0.5), (3, 0), (3, 5), (3, "1")])
def test_bad_expansion_settings_are_refused(top: object, weight: object) -> None:
    with pytest.raises(InvalidArgument):
        Expansion(top=top, weight=weight)  # type: ignore[arg-type]


def test_the_search_vectors_carry_the_expanded_query_only_when_asked() -> None:
    plain = rig(project=None)
    for text in (PARAPHRASE_A, PARAPHRASE_B, UNRELATED):  # the paraphrase is a near-copy
        assert plain.memory.add(text, target="memory", force=True).success
    expansion = Expansion(top=2, weight=1.0)
    expanded = EmbeddingService(embedder=plain.embedder, store=plain.store, expansion=expansion)
    scope = VectorScope(clauses=(ScopeClause(Target.MEMORY),))
    before = plain.embeddings.search_vectors(scope, "deploy script", backfill=0)
    after = expanded.search_vectors(scope, "deploy script", backfill=0)
    assert before is not None and after is not None and len(before.ids) == 3
    assert after.ids == before.ids and np.array_equal(after.matrix, before.matrix)
    assert np.allclose(after.query, rocchio(before.query, before.matrix, top=2, weight=1.0))
    assert not np.allclose(after.query, before.query)
    # the two deploy notes came closer to the query, the unrelated one did not join them
    positions = before.positions()
    deploy = [positions[plain.entry_id(t)] for t in (PARAPHRASE_A, PARAPHRASE_B)]
    assert (after.cosines()[deploy] >= before.cosines()[deploy] - 1e-6).all()
