"""Schema step 7 (ADR 0043): the change log of `memories` rows, the scope index that covers
`flagged`, and the vector cache that refreshes from the log."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite import schema
from pi_hermes_memory.adapters.sqlite.mirror import SqliteProjection
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.adapters.sqlite.write_index import SqliteWriteIndex
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.errors import StorageFailed
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

MODEL = "test/log"
SCOPE = VectorScope(clauses=search_clauses(SessionScope(project="web")))
STEP_7_OBJECTS = {
    ("table", "memories_changes"),
    ("trigger", "memories_changes_ai"),
    ("trigger", "memories_changes_au"),
    ("trigger", "memories_changes_ad"),
    ("trigger", "memories_changes_trim"),
    ("index", "memories_visible_scope"),
}


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, 4)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _objects(conn: Any) -> set[tuple[str, str]]:
    return {(str(t), str(n)) for t, n in conn.execute("SELECT type, name FROM sqlite_schema")}


def _as_dict(found: tuple[tuple[str, ...], np.ndarray]) -> dict[str, list[float]]:
    ids, matrix = found
    assert len(ids) == len(matrix) == len(set(ids))
    return {entry_id: matrix[n].tolist() for n, entry_id in enumerate(ids)}


def _log(conn: Any) -> list[tuple[int, int]]:
    return [(int(s), int(r)) for s, r in conn.execute("SELECT * FROM memories_changes")]


@pytest.fixture
def schema_6(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Open stores as the previous release did (schema 6), until the returned callable."""
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:6])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 6)
    # that release wrote no lineage columns (schema 9, ADR 0079)
    monkeypatch.setattr(SqliteProjection, "_lineage_of", lambda self, event: None)
    # nor kept a write index (schema 10, ADR 0084)
    monkeypatch.setattr(SqliteWriteIndex, "apply", lambda self, events: None)
    return monkeypatch.undo


def _filled(path: Path) -> list[tuple[str, str]]:
    storage = SqliteStorage(path)
    try:
        writer = EventWriter(storage)
        rows = [(writer.add(f"row {n}"), f"row {n}") for n in range(6)]
        writer.add("their project", Target.PROJECT, project="api")
        SqliteVectorStore(storage).put(rows, _vectors(6, 1), MODEL)
    finally:
        storage.close()
    return rows


def test_step_7_migrates_a_schema_6_store_once(tmp_path: Path, schema_6: Any) -> None:
    path = tmp_path / "sessions.db"
    rows = _filled(path)
    raw = apsw.Connection(str(path))
    assert raw.execute("PRAGMA user_version").get == 6
    assert not STEP_7_OBJECTS & _objects(raw)
    assert ("index", "memories_vector_scope") in _objects(raw)
    before = {entry_id: v.tolist() for (entry_id, _), v in zip(rows, _vectors(6, 1), strict=True)}
    schema_6()  # this release opens the file
    storage = SqliteStorage(path)
    try:
        assert raw.execute("PRAGMA user_version").get == schema.SCHEMA_VERSION >= 7
        objects = _objects(raw)
        assert objects >= STEP_7_OBJECTS and ("index", "memories_vector_scope") not in objects
        assert _log(raw) == []  # no row changed
        assert _as_dict(SqliteVectorStore(storage).candidates(SCOPE, MODEL)) == before
        added = EventWriter(storage).add("after the step", entry_id="zz-after")
        rowid = raw.execute("SELECT rowid FROM memories WHERE id = ?", (added,)).get
        assert _log(raw) == [(1, rowid)]
    finally:
        storage.close()
    SqliteStorage(path).close()  # opening again runs no step
    assert _objects(raw) == objects and _log(raw) == [(1, rowid)]
    raw.close()


def test_the_step_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    SqliteStorage(path).close()
    raw = apsw.Connection(str(path))
    objects = _objects(raw)
    raw.execute(schema.MIGRATIONS[6])  # a file that already holds the step
    assert _objects(raw) == objects
    raw.close()


def test_a_failing_step_leaves_the_store_at_schema_6(tmp_path: Path, schema_6: Any) -> None:
    path = tmp_path / "sessions.db"
    _filled(path)
    schema_6()
    with pytest.MonkeyPatch.context() as patch:  # step 7 fails after its own statements ran
        broken = (*schema.MIGRATIONS[:6], schema.MIGRATIONS[6] + "\nCREATE TABLE memories (x);")
        patch.setattr(schema, "MIGRATIONS", broken)
        with pytest.raises(StorageFailed, match="already exists"):
            SqliteStorage(path)
    raw = apsw.Connection(str(path))
    assert raw.execute("PRAGMA user_version").get == 6
    assert not STEP_7_OBJECTS & _objects(raw)
    assert ("index", "memories_vector_scope") in _objects(raw)
    SqliteStorage(path).close()  # the next open migrates
    assert raw.execute("PRAGMA user_version").get == schema.SCHEMA_VERSION
    assert _objects(raw) >= STEP_7_OBJECTS
    raw.close()


def test_the_log_holds_every_change_in_commit_order_and_stays_small(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        conn = storage.connection
        writer = EventWriter(storage)
        first = writer.add("alpha")
        second = writer.add("beta", Target.PROJECT, project="web")
        a, b = (
            conn.execute("SELECT rowid FROM memories WHERE id = ?", (i,)).get
            for i in (first, second)
        )
        with storage.transaction():
            conn.execute("UPDATE memories SET last_referenced = '2030-01-01' WHERE rowid = ?", (b,))
            conn.execute("DELETE FROM memories WHERE rowid = ?", (a,))
        assert _log(conn) == [(1, a), (2, b), (3, b), (4, a)]
        with storage.transaction():  # a statement that fails leaves no entry and no gap
            with pytest.raises(apsw.ConstraintError):
                conn.execute("UPDATE memories SET target = 'nowhere' WHERE rowid = ?", (b,))
            conn.execute("UPDATE memories SET flagged = 'x' WHERE rowid = ?", (b,))
        assert _log(conn)[-1] == (5, b)
        with storage.transaction():
            for n in range(5_000):
                conn.execute("UPDATE memories SET last_referenced = ? WHERE rowid = ?", (n, b))
        seqs = [seq for seq, _ in _log(conn)]
        assert seqs == list(range(seqs[0], 5_006)) and 4_096 <= len(seqs) < 4_096 + 256
    finally:
        storage.close()


def _fresh(path: Path, dimension: int) -> tuple[dict[str, list[float]], list[tuple[str, str]]]:
    storage = SqliteStorage(path)
    try:
        store = SqliteVectorStore(storage)
        found = store.candidates(SCOPE, MODEL, dimension=dimension)
        return _as_dict(found), store.missing(SCOPE, MODEL, dimension=dimension, limit=1_000)
    finally:
        storage.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "add",
                "add-bare",
                "add-elsewhere",
                "put-mine",
                "put-theirs",
                "put-wide",
                "replace",
                "touch",
                "flag",
                "unflag",
                "move-out",
                "delete",
                "many",
                "hold",
                "search",
            ]
        ),
        st.integers(0, 1_000),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_the_refreshed_cache_equals_a_rebuild_and_never_changes_a_held_matrix(
    ops: list[tuple[str, int]],
) -> None:
    """Whatever another connection (or this store) writes, `candidates` and `missing` of a
    long-lived store equal a fresh store's; a matrix handed out never changes afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.db"
        mine_storage, theirs_storage = SqliteStorage(path), SqliteStorage(path)
        try:
            mine, theirs = SqliteVectorStore(mine_storage), SqliteVectorStore(theirs_storage)
            writer = EventWriter(theirs_storage)
            writer.n = 1_000
            conn = theirs_storage.connection
            held: list[tuple[np.ndarray, np.ndarray]] = []
            seed = 0

            def active(n: int) -> tuple[str, str] | None:
                rows = conn.execute(
                    "SELECT id, text FROM memories WHERE superseded_by IS NULL ORDER BY rowid"
                ).fetchall()
                return (str(rows[n % len(rows)][0]), str(rows[n % len(rows)][1])) if rows else None

            for op, n in ops:
                seed += 1
                row = active(n)
                if op in ("add", "add-bare"):
                    text = f"row {seed}"
                    entry_id = writer.add(text)
                    if op == "add":
                        theirs.put([(entry_id, text)], _vectors(1, seed), MODEL)
                elif op == "add-elsewhere":
                    entry_id = writer.add(f"row {seed}", Target.PROJECT, project="api")
                    theirs.put([(entry_id, f"row {seed}")], _vectors(1, seed), MODEL)
                elif op in ("put-mine", "put-theirs") and row is not None:
                    (mine if op == "put-mine" else theirs).put([row], _vectors(1, seed), MODEL)
                elif op == "put-wide" and row is not None:  # another width: not current
                    theirs.put([row], np.ones((1, 6), dtype=np.float32), MODEL)
                elif op == "replace" and row is not None:
                    text = f"replaced {seed}"
                    try:
                        new_id = writer.replace(row[0], text)
                    except Exception:  # not a row of the memory stream: nothing to replace
                        continue
                    theirs.put([(new_id, text)], _vectors(1, seed), MODEL)
                elif op in ("touch", "flag", "unflag", "move-out", "delete") and row is not None:
                    sql = {
                        "touch": "UPDATE memories SET last_referenced = '2030-01-01' WHERE id = ?",
                        "flag": "UPDATE memories SET flagged = 'scan' WHERE id = ?",
                        "unflag": "UPDATE memories SET flagged = NULL WHERE id = ?",
                        "move-out": "UPDATE memories SET target = 'project', project = 'api' "
                        "WHERE id = ?",
                        "delete": "DELETE FROM memories WHERE id = ?",
                    }[op]
                    with theirs_storage.transaction():
                        conn.execute(sql, (row[0],))
                elif op == "many":  # more changes than the log keeps, or than one refresh reads
                    with theirs_storage.transaction():
                        for k in range(600 if n % 2 else 4_400):
                            conn.execute(
                                "UPDATE memories SET last_referenced = ? WHERE rowid = ?",
                                (str(k), 1 + k % 3),
                            )
                elif op == "hold":
                    matrix = mine.candidates(SCOPE, MODEL, dimension=4)[1]
                    held.append((matrix, matrix.copy()))
                elif op == "search":
                    got = mine.missing(SCOPE, MODEL, dimension=4, limit=1_000)
                    assert got == _fresh(path, 4)[1]
                    found = _as_dict(mine.candidates(SCOPE, MODEL, dimension=4))
                    assert found == _fresh(path, 4)[0]
            assert mine.missing(SCOPE, MODEL, dimension=4, limit=1_000) == _fresh(path, 4)[1]
            assert _as_dict(mine.candidates(SCOPE, MODEL, dimension=4)) == _fresh(path, 4)[0]
            for matrix, copy in held:
                np.testing.assert_array_equal(matrix, copy)
        finally:
            mine_storage.close()
            theirs_storage.close()


def test_a_reader_whose_place_in_the_log_was_trimmed_lists_the_scope(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    mine_storage, theirs_storage = SqliteStorage(path), SqliteStorage(path)
    try:
        mine_writer = EventWriter(mine_storage)
        rows = [(mine_writer.add(f"row {n}"), f"row {n}") for n in range(3)]
        mine, theirs = SqliteVectorStore(mine_storage), SqliteVectorStore(theirs_storage)
        mine.put(rows, _vectors(3, 1), MODEL)
        assert len(mine.candidates(SCOPE, MODEL)[0]) == 3
        writer = EventWriter(theirs_storage)
        writer.n = 100
        added = writer.add("their row")
        theirs.put([(added, "their row")], _vectors(1, 2), MODEL)
        conn = theirs_storage.connection
        with theirs_storage.transaction():  # the log's oldest entries, the add's, trimmed
            touched = rows[0][0]  # another row: only this change stays in the log
            conn.execute(
                "UPDATE memories SET last_referenced = '2030-01-01' WHERE id = ?", (touched,)
            )
            newest = conn.execute("SELECT max(seq) FROM memories_changes").get
            conn.execute("DELETE FROM memories_changes WHERE seq < ?", (newest,))
        assert _as_dict(mine.candidates(SCOPE, MODEL)) == _fresh(path, 4)[0]
        assert added in mine.candidates(SCOPE, MODEL)[0]
    finally:
        mine_storage.close()
        theirs_storage.close()


def test_missing_follows_the_log_and_keeps_the_rows_still_lacking(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    mine_storage, theirs_storage = SqliteStorage(path), SqliteStorage(path)
    try:
        mine, theirs = SqliteVectorStore(mine_storage), SqliteVectorStore(theirs_storage)
        writer = EventWriter(theirs_storage)
        kept = writer.add("embedded")
        theirs.put([(kept, "embedded")], _vectors(1, 1), MODEL)
        assert mine.missing(SCOPE, MODEL, limit=10) == []
        bare = writer.add("bare")
        assert mine.missing(SCOPE, MODEL, limit=10) == [(bare, "bare")]
        with theirs_storage.transaction():  # a change to another row only
            theirs_storage.connection.execute(
                "UPDATE memories SET last_referenced = '2030-01-01' WHERE id = ?", (kept,)
            )
        assert mine.missing(SCOPE, MODEL, limit=10) == [(bare, "bare")]
        theirs.put([(bare, "bare")], _vectors(1, 2), MODEL)
        assert mine.missing(SCOPE, MODEL, limit=10) == []
        later = writer.add("later", entry_id="zz-later")
        writer.add("elsewhere", Target.PROJECT, project="api", entry_id="zz-elsewhere")
        assert mine.missing(SCOPE, MODEL, limit=10) == [(later, "later")]
    finally:
        mine_storage.close()
        theirs_storage.close()
