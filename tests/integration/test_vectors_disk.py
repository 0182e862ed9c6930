"""The vector store contract against SQLite, and the on-disk vector format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore, from_blob, to_blob
from pi_hermes_memory.domain.memory.events import MemoryRemoved, RemovalReason
from pi_hermes_memory.testing import VectorBackgroundContract, VectorStoreContract
from pi_hermes_memory.testing.contracts import AT, STREAM, EventWriter
from pi_hermes_memory.testing.vector_contracts import ALL, MODEL


class TestSqliteVectorStore(VectorStoreContract, VectorBackgroundContract):
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Iterator[SqliteStorage]:
        s = SqliteStorage(tmp_path / "sessions.db")
        yield s
        s.close()

    @pytest.fixture
    def vector_store(self, storage: SqliteStorage) -> SqliteVectorStore:
        return SqliteVectorStore(storage)


def test_blobs_are_little_endian_float32(tmp_path: Path) -> None:
    assert to_blob(np.asarray([1.0, -2.0])) == b"\x00\x00\x80\x3f\x00\x00\x00\xc0"
    np.testing.assert_array_equal(from_blob(b"\x00\x00\x80\x3f\x00\x00\x00\xc0"), [1.0, -2.0])
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        entry = EventWriter(storage).add("alpha")
        SqliteVectorStore(storage).put([(entry, "alpha")], np.eye(1, 3, dtype=np.float32), MODEL)
        blob, model = storage.connection.execute(
            "SELECT embedding, embedding_model FROM memories WHERE id = ?", (entry,)
        ).fetchone()
        assert blob == b"\x00\x00\x80\x3f" + b"\x00" * 8 and model == MODEL
    finally:
        storage.close()


def test_writes_by_another_connection_invalidate_the_cached_matrix(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first, second = SqliteStorage(path), SqliteStorage(path)
    try:
        rows = EventWriter(first)
        a = rows.add("alpha")
        mine, theirs = SqliteVectorStore(first), SqliteVectorStore(second)
        mine.put([(a, "alpha")], np.eye(1, 2, dtype=np.float32), MODEL)
        assert mine.candidates(ALL, MODEL)[0] == (a,)
        b = EventWriter(second).add("beta", entry_id="zz-beta")
        theirs.put([(b, "beta")], np.eye(1, 2, 1, dtype=np.float32), MODEL)
        assert mine.missing(ALL, MODEL, limit=10) == []
        c = EventWriter(second).add("gamma", entry_id="zz-gamma")
        assert mine.missing(ALL, MODEL, limit=10) == [(c, "gamma")]
        ids, matrix = mine.candidates(ALL, MODEL)
        assert sorted(ids) == sorted([a, b]) and not matrix.flags.writeable
    finally:
        first.close()
        second.close()


def _as_dict(found: tuple[tuple[str, ...], Any]) -> dict[str, list[float]]:
    ids, matrix = found
    return {entry_id: [float(x) for x in matrix[i]] for i, entry_id in enumerate(ids)}


def test_a_refreshed_matrix_equals_a_rebuilt_one(tmp_path: Path) -> None:
    """After writes by this and another connection, the incrementally refreshed matrix holds
    exactly what a fresh store reads from scratch (ADR 0019)."""
    path = tmp_path / "sessions.db"
    first, second = SqliteStorage(path), SqliteStorage(path)
    try:
        rows = EventWriter(first)
        ids = [rows.add(f"row {i}") for i in range(6)]
        mine, theirs = SqliteVectorStore(first), SqliteVectorStore(second)
        rng = np.random.default_rng(3)

        def vectors(n: int) -> Any:
            return rng.standard_normal((n, 4)).astype(np.float32)

        mine.put([(i, f"row {n}") for n, i in enumerate(ids)], vectors(6), MODEL)
        assert len(mine.candidates(ALL, MODEL)[0]) == 6  # cached
        late = EventWriter(second).add("late row", entry_id="zz-late")
        theirs.put([(late, "late row")], vectors(1), MODEL)  # another connection adds one
        mine.put([(ids[0], "row 0")], vectors(1), MODEL)  # this one rewrites a vector
        with second.transaction() as uow:  # and another one removes a row
            version = uow.journal.version(STREAM)
            event = MemoryRemoved(
                stream=STREAM,
                version=version + 1,
                at=AT,
                entry_id=ids[1],
                reason=RemovalReason.TOOL,
            )
            uow.journal.append(STREAM, version, [event])
            uow.projection.apply([event])
        refreshed = _as_dict(mine.candidates(ALL, MODEL))
        assert refreshed == _as_dict(SqliteVectorStore(first).candidates(ALL, MODEL))
        assert set(refreshed) == {*ids, late} - {ids[1]}
        assert not mine.candidates(ALL, MODEL)[1].flags.writeable
    finally:
        first.close()
        second.close()
