"""The `VectorStore` contract suite (see `pi_hermes_memory.testing`). Requires numpy."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import (
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryRemoved,
    RemovalReason,
)
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.ports.search import ScopeClause
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.testing.contracts import AT, DAY, EVERYTHING, EventWriter

MODEL = "openai-compatible/contract-model"
OTHER_MODEL = "openai-compatible/other-model"
ALL = VectorScope(clauses=EVERYTHING)
HISTORY = VectorScope(clauses=EVERYTHING, include_superseded=True)


def unit(*values: float) -> Any:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def stack(*vectors: Any) -> Any:
    return np.stack(vectors).astype(np.float32)


class VectorStoreContract:
    """Semantics of a `VectorStore` adapter (see the port's docstring).

    Provide a ``storage`` fixture (a fresh, empty Storage) and a ``vector_store`` fixture: the
    vector store over that storage's rows.
    """

    def test_rows_without_vectors_are_missing_newest_first(
        self, storage: Any, vector_store: Any
    ) -> None:
        rows = EventWriter(storage)
        a, b, c = rows.add("alpha"), rows.add("beta"), rows.add("gamma")
        assert vector_store.missing(ALL, MODEL, limit=10) == [
            (c, "gamma"),
            (b, "beta"),
            (a, "alpha"),
        ]
        assert vector_store.missing(ALL, MODEL, limit=2) == [(c, "gamma"), (b, "beta")]
        assert vector_store.missing(ALL, MODEL, limit=10, before=b) == [(a, "alpha")]
        assert vector_store.count(ALL, MODEL) == (3, 0)

    def test_put_then_current(self, storage: Any, vector_store: Any) -> None:
        rows = EventWriter(storage)
        a, b = rows.add("alpha"), rows.add("beta")
        stored = vector_store.put([(a, "alpha")], stack(unit(1, 0, 0)), MODEL)
        assert stored == 1
        assert vector_store.missing(ALL, MODEL, limit=10) == [(b, "beta")]
        assert vector_store.missing(ALL, MODEL, limit=10, everything=True) == [
            (b, "beta"),
            (a, "alpha"),
        ]
        assert vector_store.count(ALL, MODEL) == (2, 1)
        found = vector_store.vectors([a, b, "nope"], MODEL)
        assert list(found) == [a]
        assert found[a].dtype == np.float32
        np.testing.assert_array_equal(found[a], unit(1, 0, 0))

    def test_vectors_round_trip_exactly_as_float32(self, storage: Any, vector_store: Any) -> None:
        a = EventWriter(storage).add("alpha")
        vector = np.asarray([0.1, -2.5e-8, 3.4028235e38, -0.0, 1 / 3], dtype=np.float32)
        vector_store.put([(a, "alpha")], stack(vector), MODEL)
        np.testing.assert_array_equal(vector_store.vectors([a], MODEL)[a], vector)

    def test_another_model_counts_as_missing(self, storage: Any, vector_store: Any) -> None:
        a = EventWriter(storage).add("alpha")
        vector_store.put([(a, "alpha")], stack(unit(1, 0)), OTHER_MODEL)
        assert vector_store.missing(ALL, MODEL, limit=10) == [(a, "alpha")]
        assert vector_store.vectors([a], MODEL) == {}
        assert vector_store.candidates(ALL, MODEL)[0] == ()
        vector_store.put([(a, "alpha")], stack(unit(0, 1)), MODEL)
        assert vector_store.missing(ALL, MODEL, limit=10) == []
        np.testing.assert_allclose(vector_store.vectors([a], MODEL)[a], unit(0, 1))

    def test_another_dimension_counts_as_missing(self, storage: Any, vector_store: Any) -> None:
        rows = EventWriter(storage)
        a, b = rows.add("alpha"), rows.add("beta")
        vector_store.put([(a, "alpha")], stack(unit(1, 0, 0)), MODEL)
        vector_store.put([(b, "beta")], stack(unit(1, 0)), MODEL)
        assert vector_store.missing(ALL, MODEL, dimension=3, limit=10) == [(b, "beta")]
        assert vector_store.count(ALL, MODEL, dimension=2) == (2, 1)
        assert list(vector_store.vectors([a, b], MODEL, dimension=3)) == [a]
        ids, matrix = vector_store.candidates(ALL, MODEL, dimension=3)
        assert ids == (a,) and matrix.shape == (1, 3)

    def test_put_skips_rows_that_are_gone_or_rewritten(
        self, storage: Any, vector_store: Any
    ) -> None:
        a = EventWriter(storage).add("alpha")
        vectors = stack(unit(1, 0), unit(0, 1))
        assert vector_store.put([(a, "old text"), ("missing-id", "x")], vectors, MODEL) == 0
        assert vector_store.vectors([a, "missing-id"], MODEL) == {}

    def test_put_checks_the_sizes(self, storage: Any, vector_store: Any) -> None:
        a = EventWriter(storage).add("alpha")
        try:
            vector_store.put([(a, "alpha")], stack(unit(1, 0), unit(0, 1)), MODEL)
        except ValueError:
            pass
        else:
            raise AssertionError("put must refuse rows and vectors of different lengths")

    def test_candidates_apply_the_scope(self, storage: Any, vector_store: Any) -> None:
        rows = EventWriter(storage)
        web = rows.add("web deploys", Target.PROJECT, project="web")
        api = rows.add("api deploys", Target.PROJECT, project="api")
        fail = rows.add("web failed", Target.FAILURE, project="web")
        glob = rows.add("global failure", Target.FAILURE, project=None)
        note = rows.add("memory note")
        texts = {web: "web deploys", api: "api deploys", fail: "web failed"}
        texts |= {glob: "global failure", note: "memory note"}
        ids = list(texts)
        matrix = stack(*(unit(1, i) for i in range(len(ids))))
        vector_store.put([(i, texts[i]) for i in ids], matrix, MODEL)

        def scoped(*clauses: ScopeClause, **kw: Any) -> set[str]:
            scope = VectorScope(clauses=clauses, **kw)
            found, block = vector_store.candidates(scope, MODEL)
            assert block.shape == (len(found), 2)
            return set(found)

        assert scoped(ScopeClause(Target.PROJECT, ("web",))) == {web}
        assert scoped(ScopeClause(Target.FAILURE, ("web", None))) == {fail, glob}
        assert scoped(ScopeClause(Target.FAILURE, (None,))) == {glob}
        assert scoped(ScopeClause(Target.MEMORY)) == {note}
        assert scoped(*EVERYTHING, category=FailureCategory.FAILURE) == {fail, glob}
        missing = vector_store.missing(
            VectorScope(clauses=(ScopeClause(Target.PROJECT, ("api",)),)),
            MODEL,
            limit=10,
            everything=True,
        )
        assert missing == [(api, "api deploys")]

    def test_candidate_rows_match_their_ids(self, storage: Any, vector_store: Any) -> None:
        rows = EventWriter(storage)
        a, b, c = rows.add("alpha"), rows.add("beta"), rows.add("gamma")
        vectors = {a: unit(1, 0, 0), b: unit(0, 1, 0), c: unit(1, 1, 1)}
        vector_store.put([(a, "alpha"), (b, "beta"), (c, "gamma")], stack(*vectors.values()), MODEL)
        ids, matrix = vector_store.candidates(ALL, MODEL)
        assert sorted(ids) == sorted(vectors) and matrix.dtype == np.float32
        for entry_id, row in zip(ids, matrix, strict=True):
            np.testing.assert_allclose(row, vectors[entry_id])

    def test_candidates_follow_writes(self, storage: Any, vector_store: Any) -> None:
        rows = EventWriter(storage)
        a = rows.add("alpha")
        vector_store.put([(a, "alpha")], stack(unit(1, 0)), MODEL)
        assert vector_store.candidates(ALL, MODEL)[0] == (a,)
        assert vector_store.missing(ALL, MODEL, limit=10) == []
        b = rows.add("beta")
        assert vector_store.missing(ALL, MODEL, limit=10) == [(b, "beta")]
        vector_store.put([(b, "beta")], stack(unit(0, 1)), MODEL)
        assert sorted(vector_store.candidates(ALL, MODEL)[0]) == sorted([a, b])
        with storage.transaction() as uow:
            stream = stream_for(Target.MEMORY)
            version = uow.journal.version(stream)
            removed = MemoryRemoved(
                stream=stream,
                version=version + 1,
                at=AT,
                entry_id=a,
                reason=RemovalReason.TOOL,
            )
            uow.journal.append(stream, version, [removed])
            uow.projection.apply([removed])
        assert vector_store.candidates(ALL, MODEL)[0] == (b,)
        assert vector_store.vectors([a], MODEL) == {}

    def test_history_keeps_its_vector_and_the_new_version_has_none(
        self, storage: Any, vector_store: Any
    ) -> None:
        rows = EventWriter(storage)
        old = rows.add("The CI runs on Jenkins")
        vector_store.put([(old, "The CI runs on Jenkins")], stack(unit(1, 0)), MODEL)
        new = rows.replace(old, "The CI runs on Buildkite")
        assert vector_store.candidates(ALL, MODEL)[0] == ()
        assert vector_store.candidates(HISTORY, MODEL)[0] == (old,)
        assert vector_store.missing(ALL, MODEL, limit=10) == [(new, "The CI runs on Buildkite")]

    def test_a_move_keeps_the_vector(self, storage: Any, vector_store: Any) -> None:
        rows = EventWriter(storage)
        entry = rows.add("Deploys use blue-green", Target.PROJECT, project="web")
        vector_store.put([(entry, "Deploys use blue-green")], stack(unit(1, 2)), MODEL)
        source, destination = stream_for(Target.PROJECT), stream_for(Target.MEMORY)
        with storage.transaction() as uow:
            out_version = uow.journal.version(source)
            in_version = uow.journal.version(destination)
            moved_out = MemoryMovedOut(
                stream=source,
                version=out_version + 1,
                at=AT,
                entry_id=entry,
                to_stream=destination,
            )
            moved_in = MemoryMovedIn(
                stream=destination,
                version=in_version + 1,
                at=AT,
                entry_id=entry,
                from_stream=source,
                target=Target.MEMORY,
                text="Deploys use blue-green",
                project=None,
                category=None,
                created=DAY,
                last_referenced=DAY,
            )
            uow.journal.append(source, out_version, [moved_out])
            uow.journal.append(destination, in_version, [moved_in])
            uow.projection.apply([moved_out, moved_in])
        memory = VectorScope(clauses=(ScopeClause(Target.MEMORY),))
        ids, matrix = vector_store.candidates(memory, MODEL)
        assert ids == (entry,)
        np.testing.assert_allclose(matrix[0], unit(1, 2))

    def test_a_rebuild_keeps_vectors_of_unchanged_rows(
        self, storage: Any, vector_store: Any
    ) -> None:
        rows = EventWriter(storage)
        a, b = rows.add("alpha"), rows.add("beta")
        vector_store.put([(a, "alpha"), (b, "beta")], stack(unit(1, 0), unit(0, 1)), MODEL)
        with storage.transaction() as uow:
            stream = stream_for(Target.MEMORY)
            doc = fold(MemoryDocument.empty(Target.MEMORY), uow.journal.read(stream))
            uow.projection.rebuild([doc])
            # a repair that rewrites a row's text (a corrupt mirror) must drop its vector
            active = tuple(
                attrs.evolve(e, text="alpha, repaired") if e.id == a else e for e in doc.active
            )
            rewritten = attrs.evolve(doc, active=active)
            uow.projection.rebuild([rewritten])
        assert set(vector_store.vectors([a, b], MODEL)) == {b}
        assert vector_store.missing(ALL, MODEL, limit=10) == [(a, "alpha, repaired")]


class VectorBackgroundContract:
    """The optional background part of a `VectorStore` (ADR 0069): `background` and
    `put_background` keep the embedded background sample per model. A store without them is
    still a valid `VectorStore` (the embedding service then keeps the sample in the process
    and embeds it again in each new one); a store that has them runs this suite as well.

    Provide the ``vector_store`` fixture, as for `VectorStoreContract`.
    """

    def test_background_round_trips_per_model_and_sample(self, vector_store: Any) -> None:
        assert vector_store.background(MODEL, "s1") is None
        matrix = np.asarray([[0.6, 0.8, 0.0], [0.0, 1 / 3, -2.5e-8]], dtype=np.float32)
        vector_store.put_background(MODEL, "s1", matrix)
        found = vector_store.background(MODEL, "s1")
        assert found is not None and found.dtype == np.float32
        np.testing.assert_array_equal(found, matrix)
        np.testing.assert_array_equal(vector_store.background(MODEL, "s1", dimension=3), matrix)
        assert vector_store.background(MODEL, "s1", dimension=4) is None
        assert vector_store.background(MODEL, "s2") is None  # another sample: recompute
        assert vector_store.background("other-model", "s1") is None

    def test_a_new_background_replaces_the_models_old_one(self, vector_store: Any) -> None:
        vector_store.put_background(MODEL, "s1", np.ones((2, 3), dtype=np.float32))
        vector_store.put_background("other-model", "s1", np.zeros((1, 2), dtype=np.float32))
        vector_store.put_background(MODEL, "s2", np.full((3, 4), 0.5, dtype=np.float32))
        assert vector_store.background(MODEL, "s1") is None
        np.testing.assert_array_equal(
            vector_store.background(MODEL, "s2"), np.full((3, 4), 0.5, dtype=np.float32)
        )
        np.testing.assert_array_equal(
            vector_store.background("other-model", "s1"), np.zeros((1, 2), dtype=np.float32)
        )

    @pytest.mark.parametrize(
        "bad",
        [np.zeros((0, 3)), np.zeros(3), np.asarray([[np.nan, 1.0]]), np.zeros((2, 0))],
        ids=["no rows", "1-D", "nan", "no columns"],
    )
    def test_a_bad_background_is_refused_and_keeps_the_stored_one(
        self, vector_store: Any, bad: Any
    ) -> None:
        vector_store.put_background(MODEL, "s1", np.ones((2, 3), dtype=np.float32))
        with pytest.raises(ValueError, match="background vectors"):
            vector_store.put_background(MODEL, "s2", bad)
        np.testing.assert_array_equal(
            vector_store.background(MODEL, "s1"), np.ones((2, 3), dtype=np.float32)
        )
