"""The vector store contract against SQLite, and the on-disk vector format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore, from_blob, to_blob
from pi_hermes_memory.testing import VectorStoreContract
from pi_hermes_memory.testing.contracts import EventWriter
from pi_hermes_memory.testing.vector_contracts import ALL, MODEL


class TestSqliteVectorStore(VectorStoreContract):
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
