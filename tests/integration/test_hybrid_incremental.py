"""The candidate matrix kept along writes gives the hybrid search a cold store's results (ADR
0082): after any sequence of adds, replaces, removes, moves and vector writes by this and
another connection on a real SQLite file, `ranked_hits` through a long-lived store (its id ->
row map and background centroid column carried along the changes) equals `ranked_hits`
through a fresh store on a new connection (everything rebuilt) and through the port-only path
(the computation before ADR 0082): the same ids in the same order, scores within float
tolerance."""

from __future__ import annotations

import contextlib
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.ports.search import SearchHit, SearchQuery
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.hybrid import HybridSettings, ranked_hits
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

from tests.support.embedding_server import bag_vector
from tests.support.port_only_vectors import PortOnlyVectorStore

CLAUSES = search_clauses(SessionScope(project="web"))
SCOPE = VectorScope(clauses=CLAUSES)
WORDS = ("deploy", "staging", "token", "cache", "backup", "schema", "runbook", "queue")
QUERIES = ("deploy staging", "how is the cache backed up", "queue runbook token")
DIMENSION = 16
TOLERANCE = 1e-5
TODAY = date(2026, 12, 1)


class NearEmbedder:
    """A bag of words plus seeded noise by text: rows sharing words are near, no two texts
    share a vector (so no cosines tie)."""

    model_id = "test/near"
    dimension = DIMENSION

    def embed(self, texts: Sequence[str], *, kind: str) -> Any:
        rows = []
        for text in texts:
            noise = np.random.default_rng(zlib.crc32(f"{kind}:{text}".encode()))
            vector = bag_vector(text, DIMENSION) + 0.6 * noise.standard_normal(DIMENSION)
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIMENSION)


def _text(seed: int) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(str(w) for w in rng.choice(WORDS, size=3)) + f" note {seed}"


def _search(service: EmbeddingService, index: SqliteSearchIndex, text: str) -> list[SearchHit]:
    query = SearchQuery(text=text, clauses=CLAUSES)
    return ranked_hits(
        query, index=index, embeddings=service, settings=HybridSettings(), now=TODAY, backfill=0
    )


def assert_same_results(got: list[SearchHit], want: list[SearchHit], limit: int) -> None:
    """Same scores (within `TOLERANCE`) and ids in the same order; rows whose shown scores
    tie within the tolerance may come in either order (the port leaves the candidates'
    order open), and a tie cut by the limit may keep either row."""
    assert len(got) == len(want)
    scores = [h.score for h in want]
    np.testing.assert_allclose([h.score for h in got], scores, atol=TOLERANCE, rtol=0)
    start = 0
    while start < len(want):
        end = start + 1
        while end < len(want) and abs(scores[end] - scores[start]) <= TOLERANCE:
            end += 1
        cut = end == len(want) == limit
        if end - start == 1:
            assert got[start].id == want[start].id
        elif not cut:
            assert {h.id for h in got[start:end]} == {h.id for h in want[start:end]}
        start = end


@attrs.frozen(kw_only=True)
class TwoConnections:
    """A real SQLite file seen through two connections: this process's long-lived vector
    store (`store`, searched through `live`) and another writer's (`theirs`, `writer`)."""

    path: Path
    mine: SqliteStorage
    theirs_storage: SqliteStorage
    store: SqliteVectorStore
    theirs: SqliteVectorStore
    live: EmbeddingService
    writer: EventWriter
    embedder: NearEmbedder

    def active_row(self, n: int) -> tuple[str, str] | None:
        """(id, text) of the `n`-th active row (modulo their number), read by the writer."""
        rows = self.theirs_storage.connection.execute(
            "SELECT id, text FROM memories WHERE superseded_by IS NULL ORDER BY rowid"
        ).fetchall()
        return (str(rows[n % len(rows)][0]), str(rows[n % len(rows)][1])) if rows else None


@contextlib.contextmanager
def two_connections(start: int) -> Iterator[TwoConnections]:
    """A new file in a temporary directory holding `start` rows with vectors, written by the
    other connection; both connections are closed on the way out."""
    embedder = NearEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        mine, theirs_storage = SqliteStorage(path), SqliteStorage(path)
        try:
            store, theirs = SqliteVectorStore(mine), SqliteVectorStore(theirs_storage)
            world = TwoConnections(
                path=path,
                mine=mine,
                theirs_storage=theirs_storage,
                store=store,
                theirs=theirs,
                live=EmbeddingService(embedder=embedder, store=store),
                writer=EventWriter(theirs_storage),
                embedder=embedder,
            )
            world.writer.n = 1_000
            for seed in range(start):
                text = _text(seed)
                entry_id = world.writer.add(text)
                theirs.put([(entry_id, text)], embedder.embed([text], kind="p"), embedder.model_id)
            yield world
        finally:
            mine.close()
            theirs_storage.close()


def _check(path: Path, live: EmbeddingService, store: SqliteVectorStore, index: Any) -> None:
    fresh = SqliteStorage(path)
    try:
        embedder = NearEmbedder()
        cold = EmbeddingService(embedder=embedder, store=SqliteVectorStore(fresh))
        before = EmbeddingService(
            embedder=embedder, store=PortOnlyVectorStore(SqliteVectorStore(fresh))
        )
        for text in QUERIES:
            got = _search(live, index, text)
            limit = SearchQuery(text=text, clauses=CLAUSES).limit
            assert_same_results(got, _search(cold, index, text), limit)
            assert_same_results(got, _search(before, index, text), limit)
        ids, matrix = store.candidates(SCOPE, embedder.model_id, dimension=DIMENSION)
        positions = store.candidate_positions(ids)
        assert positions is not None
        assert dict(positions) == {entry_id: at for at, entry_id in enumerate(ids)}
        assert len(positions) == len(ids) and all(positions[i] == n for n, i in enumerate(ids))
        centroid = np.asarray(live.background(), dtype=np.float64).mean(axis=0)
        centroid = (centroid / np.linalg.norm(centroid)).astype(np.float32)
        column = store.candidate_product(matrix, centroid)
        assert column is not None and not column.flags.writeable
        np.testing.assert_allclose(column, matrix @ centroid, atol=TOLERANCE, rtol=0)
    finally:
        fresh.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "add",
                "add",
                "add-bare",
                "add-elsewhere",
                "put-mine",
                "put-theirs",
                "put-wide",
                "replace",
                "replace",
                "touch",
                "flag",
                "unflag",
                "move-out",
                "move-in",
                "delete",
                "many",
                "search",
                "search",
            ]
        ),
        st.integers(0, 1_000),
    ),
    max_size=30,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, start=st.integers(2, 40))
def test_hybrid_results_after_writes_equal_a_cold_store_and_the_port_only_path(
    ops: list[tuple[str, int]], start: int
) -> None:
    with two_connections(start) as world:
        embedder, model = world.embedder, world.embedder.model_id
        store, theirs, live, writer = world.store, world.theirs, world.live, world.writer
        path, theirs_storage = world.path, world.theirs_storage
        conn = theirs_storage.connection
        index = SqliteSearchIndex(world.mine)
        _check(path, live, store, index)  # the matrix and its column are cached now
        seed = start
        for op, n in ops:
            seed += 1
            row = world.active_row(n)
            text = _text(seed)
            vector = embedder.embed([text], kind="p")
            if op in ("add", "add-bare"):
                entry_id = writer.add(text)
                if op == "add":
                    theirs.put([(entry_id, text)], vector, model)
            elif op == "add-elsewhere":
                entry_id = writer.add(text, Target.PROJECT, project="api")
                theirs.put([(entry_id, text)], vector, model)
            elif op in ("put-mine", "put-theirs") and row is not None:
                again = embedder.embed([row[1]], kind=f"again {seed}")
                (store if op == "put-mine" else theirs).put([row], again, model)
            elif op == "put-wide" and row is not None:  # another width: not current
                theirs.put([row], np.ones((1, DIMENSION + 2), dtype=np.float32), model)
            elif op == "replace" and row is not None:
                try:
                    new_id = writer.replace(row[0], text)
                except Exception:  # not a row of the memory stream: nothing to replace
                    continue
                theirs.put([(new_id, text)], vector, model)
            elif op in ("touch", "flag", "unflag", "move-out", "move-in", "delete") and row:
                sql = {
                    "touch": "UPDATE memories SET last_referenced = '2026-11-30' WHERE id = ?",
                    "flag": "UPDATE memories SET flagged = 'scan' WHERE id = ?",
                    "unflag": "UPDATE memories SET flagged = NULL WHERE id = ?",
                    "move-out": "UPDATE memories SET target = 'project', project = 'api' "
                    "WHERE id = ?",
                    "move-in": "UPDATE memories SET target = 'project', project = 'web' "
                    "WHERE id = ?",
                    "delete": "DELETE FROM memories WHERE id = ?",
                }[op]
                with theirs_storage.transaction():
                    conn.execute(sql, (row[0],))
            elif op == "many":  # more changes than one refresh reads from the log
                with theirs_storage.transaction():
                    for k in range(600):
                        conn.execute(
                            "UPDATE memories SET last_referenced = ? WHERE rowid = ?",
                            (f"2026-10-{1 + k % 28:02d}", 1 + k % 3),
                        )
            elif op == "search":
                _check(path, live, store, index)
        _check(path, live, store, index)
