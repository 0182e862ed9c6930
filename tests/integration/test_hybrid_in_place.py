"""The cached candidate matrix changed in place (ADR 0101) equals one read afresh.

A replace overwrites the gone row's place in the cached buffer and id list (no row moves, no
copy), a removal moves the last row into the gap, an add appends; where a caller still holds
the matrix, the kept rows are copied instead. After random sequences of adds, replaces,
removes, vector rewrites and held matrices on a real SQLite file, the long-lived store's
candidates (id -> vector bytes), id -> row map and centroid column equal a store's built on a
fresh connection, and so do the hybrid search results (ids and scores). A second process
writing the same file between two searches is seen, never served from the stale cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.testing.contracts import EventWriter

from tests.integration.test_hybrid_incremental import (
    DIMENSION,
    QUERIES,
    SCOPE,
    TOLERANCE,
    NearEmbedder,
    _search,
    _text,
    assert_same_results,
    two_connections,
)

MODEL = NearEmbedder.model_id
ROOT = Path(__file__).resolve().parents[2]


def _candidates(store: SqliteVectorStore) -> tuple[tuple[str, ...], Any]:
    return store.candidates(SCOPE, MODEL, dimension=DIMENSION)


def _assert_equals_fresh(path: Path, store: SqliteVectorStore, live: EmbeddingService) -> None:
    """The live store's candidates, map, centroid column and results equal a fresh store's."""
    fresh_storage = SqliteStorage(path)
    try:
        fresh = SqliteVectorStore(fresh_storage)
        ids, matrix = _candidates(store)
        fresh_ids, fresh_matrix = _candidates(fresh)
        got = {i: matrix[n].tobytes() for n, i in enumerate(ids)}
        want = {i: fresh_matrix[n].tobytes() for n, i in enumerate(fresh_ids)}
        assert len(ids) == len(got) and got == want  # the very vectors, no id twice
        positions = store.candidate_positions(ids)
        assert positions is not None and len(positions) == len(ids)
        assert dict(positions) == {entry_id: n for n, entry_id in enumerate(ids)}
        background = live.background()
        assert background is not None
        centroid = np.asarray(background, dtype=np.float64).mean(axis=0)
        centroid = (centroid / np.linalg.norm(centroid)).astype(np.float32)
        column = store.candidate_product(matrix, centroid)
        assert column is not None and column.shape == (len(ids),)
        np.testing.assert_allclose(column, matrix @ centroid, atol=TOLERANCE, rtol=0)
        cold = EmbeddingService(embedder=NearEmbedder(), store=fresh)
        index = SqliteSearchIndex(fresh_storage)
        for text in QUERIES:
            limit = 10
            assert_same_results(_search(live, index, text), _search(cold, index, text), limit)
    finally:
        fresh_storage.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "replace", "replace", "replace", "remove", "rewrite", "hold", "drop", "search"]
        ),
        st.integers(0, 1_000),
    ),
    max_size=25,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, start=st.integers(1, 30))
def test_the_matrix_changed_in_place_equals_one_read_afresh(
    ops: list[tuple[str, int]], start: int
) -> None:
    with two_connections(start) as world:
        embedder, store, theirs, live = world.embedder, world.store, world.theirs, world.live
        path, theirs_storage, writer = world.path, world.theirs_storage, world.writer
        conn = theirs_storage.connection
        _assert_equals_fresh(path, store, live)
        #: matrices a caller holds, with a copy of what they held: never changed
        held: list[tuple[Any, Any, tuple[str, ...]]] = []
        seed = start
        for op, n in ops:
            seed += 1
            row = world.active_row(n)
            text = _text(seed)
            vector = embedder.embed([text], kind="p")
            if op == "add":
                theirs.put([(writer.add(text), text)], vector, MODEL)
            elif op == "replace" and row is not None:
                new_id = writer.replace(row[0], text)
                theirs.put([(new_id, text)], vector, MODEL)
            elif op == "remove" and row is not None:
                with theirs_storage.transaction():
                    conn.execute("DELETE FROM memories WHERE id = ?", (row[0],))
            elif op == "rewrite" and row is not None:  # same id and model, new vector
                again = embedder.embed([row[1]], kind=f"again {seed}")
                theirs.put([row], again, MODEL)
            elif op == "hold":
                ids, matrix = _candidates(store)
                held.append((matrix, matrix.copy(), ids))
            elif op == "drop" and held:
                held.pop(n % len(held))
            elif op == "search":
                _assert_equals_fresh(path, store, live)
        _assert_equals_fresh(path, store, live)
        for matrix, copy, ids in held:
            assert not matrix.flags.writeable
            np.testing.assert_array_equal(matrix, copy)
            assert len(ids) == len(matrix)


def _seeded(path: Path, rows: int) -> tuple[SqliteStorage, SqliteVectorStore, list[str]]:
    """A store of `rows` in-scope rows with vectors, through a second connection."""
    embedder = NearEmbedder()
    writer_storage = SqliteStorage(path)
    try:
        writer = EventWriter(writer_storage)
        theirs = SqliteVectorStore(writer_storage)
        ids = []
        for seed in range(rows):
            text = _text(seed)
            entry_id = writer.add(text)
            theirs.put([(entry_id, text)], embedder.embed([text], kind="p"), MODEL)
            ids.append(entry_id)
    finally:
        writer_storage.close()
    storage = SqliteStorage(path)
    return storage, SqliteVectorStore(storage), ids


def test_a_replace_writes_the_new_row_into_the_same_buffer_and_moves_no_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    storage, store, ids = _seeded(path, 12)
    try:
        before_ids, matrix = _candidates(store)
        buffer = weakref.ref(matrix.base)  # a weak reference: the buffer stays unshared
        at = before_ids.index(ids[3])
        del matrix
        other = SqliteStorage(path)
        try:
            writer = EventWriter(other)
            writer.n = 500
            text = "deploy staging runbook replaced"
            new_id = writer.replace(ids[3], text)
            vector = NearEmbedder().embed([text], kind="p")
            SqliteVectorStore(other).put([(new_id, text)], vector, MODEL)
        finally:
            other.close()
        after_ids, after = _candidates(store)
        assert after.base is buffer()  # written in place: no copy of the kept rows
        assert after_ids[at] == new_id and len(after_ids) == len(before_ids)
        assert [i for n, i in enumerate(after_ids) if n != at] == [
            i for n, i in enumerate(before_ids) if n != at
        ]  # no other row moved
        np.testing.assert_array_equal(after[at], vector[0])
    finally:
        storage.close()


def test_a_held_matrix_is_not_written_and_the_change_is_copied(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    storage, store, ids = _seeded(path, 12)
    try:
        before_ids, held = _candidates(store)
        assert ids[5] in before_ids
        kept = held.copy()
        other = SqliteStorage(path)
        try:
            writer = EventWriter(other)
            writer.n = 500
            new_id = writer.replace(ids[5], "queue token replaced")
            vector = NearEmbedder().embed(["queue token replaced"], kind="p")
            SqliteVectorStore(other).put([(new_id, "queue token replaced")], vector, MODEL)
        finally:
            other.close()
        after_ids, after = _candidates(store)
        np.testing.assert_array_equal(held, kept)
        assert after.base is not held.base and new_id in after_ids and ids[5] not in after_ids
    finally:
        storage.close()


#: A second process's write: (op, argument) -> what it does to the store, then exits.
CHILD = """
import sys
from pathlib import Path
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.testing.contracts import EventWriter
from tests.integration.test_hybrid_incremental import NearEmbedder

path, op, arg = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
storage = SqliteStorage(path)
embedder, store = NearEmbedder(), SqliteVectorStore(storage)
writer = EventWriter(storage)
writer.n = 10_000 + sum(map(ord, op + arg))
conn = storage.connection
if op == "add":
    text = f"backup schema cache child {arg}"
    store.put([(writer.add(text), text)], embedder.embed([text], kind="p"), embedder.model_id)
elif op == "replace":
    text = f"deploy queue child replaced {arg}"
    new_id = writer.replace(arg, text)
    store.put([(new_id, text)], embedder.embed([text], kind="p"), embedder.model_id)
elif op == "remove":
    with storage.transaction():
        conn.execute("DELETE FROM memories WHERE id = ?", (arg,))
elif op == "rewrite":
    text = str(conn.execute("SELECT text FROM memories WHERE id = ?", (arg,)).get)
    again = embedder.embed([text], kind="child rewrite")
    store.put([(arg, text)], again, embedder.model_id)
elif op == "burst":
    with storage.transaction():
        for k in range(5_000):
            conn.execute(
                "UPDATE memories SET last_referenced = ? WHERE rowid = ?",
                (f"2026-10-{1 + k % 28:02d}", 1 + k % 5),
            )
    text = conn.execute("SELECT text FROM memories WHERE id = ?", (arg,)).get
    store.put([(arg, str(text))], embedder.embed([str(text)], kind="burst"), embedder.model_id)
storage.close()
"""


def _child(path: Path, op: str, arg: str) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), op, arg],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_another_process_writing_between_two_searches_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    storage, store, ids = _seeded(path, 20)
    try:
        live = EmbeddingService(embedder=NearEmbedder(), store=store)
        _assert_equals_fresh(path, store, live)  # cached now
        steps = [
            ("add", "1"),
            ("replace", ids[2]),
            ("remove", ids[7]),
            ("rewrite", ids[11]),  # same id and model: only the log tells
            ("add", "2"),
            ("burst", ids[13]),  # past what the log names: read afresh
            ("replace", ids[17]),
        ]
        for op, arg in steps:
            before, _ = _candidates(store)
            _child(path, op, arg)
            _assert_equals_fresh(path, store, live)
            after, matrix = _candidates(store)
            if op in ("add", "replace"):
                assert len(set(after) - set(before)) == 1
            if op in ("replace", "remove"):
                assert arg in before and arg not in after
            if op in ("rewrite", "burst"):
                fresh_storage = SqliteStorage(path)
                try:
                    want = SqliteVectorStore(fresh_storage).vectors(
                        [arg], MODEL, dimension=DIMENSION
                    )
                finally:
                    fresh_storage.close()
                np.testing.assert_array_equal(matrix[after.index(arg)], want[arg])
    finally:
        storage.close()
