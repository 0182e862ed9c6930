"""A change to rows above a capped count's first COMMON_CAP rows (by rowid) keeps that count
(ADR 0107), on real SQLite files: every count the long-lived index holds equals a fresh
count, and its answers equal a fresh index's, after random adds, replaces, deletes, text
edits and other writes, from this connection, another connection and another process."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite.search import (
    _DOCS_SQL,
    SqliteSearchIndex,
    key_expression,
)
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.relevance import COMMON_CAP
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

#: rows holding "ledger" in the base store: one above the cap, so two removals bring it below
LEDGER_ROWS = COMMON_CAP + 1
_QUERIES = ["ledger", "ledger reconciliation", "invoice ledger", "vault", "nightly archive"]
_WORDS = ["ledger", "invoice", "vault", "nightly", "archive", "reconciliation", "deploy"]


@pytest.fixture(scope="module")
def base_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("counts") / "base.db"
    storage = SqliteStorage(path)
    try:
        with storage.transaction():
            conn = storage.connection
            for n in range(LEDGER_ROWS + 40):
                text = f"note {n} about the ledger" if n < LEDGER_ROWS else f"vault item {n}"
                conn.execute(
                    "INSERT INTO memories (id, target, project, text, created, last_referenced) "
                    "VALUES (?, 'memory', NULL, ?, '2026-08-01', '2026-08-01')",
                    (f"b{n:04d}", text),
                )
    finally:
        storage.close()
    return path


def _clauses() -> tuple[ScopeClause, ...]:
    return search_clauses(SessionScope(project=None), Target.MEMORY)


def _assert_counts_fresh(index: SqliteSearchIndex, storage: SqliteStorage) -> None:
    counts = index._counts
    with storage.read() as conn:
        for key, n in counts._docs.items():
            fresh = int(conn.execute(_DOCS_SQL, (key_expression(key), COMMON_CAP)).fetchone()[0])
            assert n == fresh, (key, n, fresh)


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3)),
        st.tuples(st.just("delete"), st.integers(0, LEDGER_ROWS + 39)),
        st.tuples(st.just("edit"), st.integers(0, LEDGER_ROWS + 39)),
        st.tuples(st.just("touch"), st.integers(0, LEDGER_ROWS + 39)),
        st.tuples(st.just("other"), st.none()),
        st.tuples(st.just("search"), st.sampled_from(_QUERIES)),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=_OPS, via_other=st.booleans())
def test_kept_counts_equal_fresh_ones(
    base_store: Path, tmp_path: Path, ops: list[tuple[str, object]], via_other: bool
) -> None:
    path = tmp_path / f"store-{abs(hash((tuple(map(str, ops)), via_other)))}.db"
    shutil.copy(base_store, path)
    storage = SqliteStorage(path)
    other = SqliteStorage(path) if via_other else storage
    try:
        index = SqliteSearchIndex(storage)
        for q in _QUERIES[:3]:  # cache counts, "ledger" among them at the cap
            index.search(SearchQuery(text=q, clauses=_clauses()))
        added = 0
        for op, arg in ops:
            with other.transaction():
                conn = other.connection
                if op == "add":
                    added += 1
                    conn.execute(
                        "INSERT INTO memories (id, target, project, text, created, "
                        "last_referenced) VALUES (?, 'memory', NULL, ?, '2026-08-02', "
                        "'2026-08-02')",
                        (f"n{added:04d}", " ".join(map(str, arg))),  # type: ignore[call-overload]
                    )
                elif op == "delete":
                    conn.execute("DELETE FROM memories WHERE id = ?", (f"b{arg:04d}",))
                elif op == "edit":  # in place: the row no longer holds "ledger"
                    conn.execute(
                        "UPDATE memories SET text = 'an edited vault note' WHERE id = ?",
                        (f"b{arg:04d}",),
                    )
                elif op == "touch":
                    conn.execute(
                        "UPDATE memories SET last_referenced = '2026-09-01' WHERE id = ?",
                        (f"b{arg:04d}",),
                    )
                elif op == "other":  # a commit that leaves `memories` as it was
                    conn.execute(
                        "INSERT INTO store_meta (key, value) VALUES ('test.other', '1') "
                        "ON CONFLICT (key) DO UPDATE SET value = value + 1"
                    )
            if op == "search":
                query = SearchQuery(text=str(arg), clauses=_clauses())
                assert index.search(query) == SqliteSearchIndex(storage).search(query)
                _assert_counts_fresh(index, storage)
        query = SearchQuery(text="ledger reconciliation", clauses=_clauses())
        assert index.search(query) == SqliteSearchIndex(storage).search(query)
        _assert_counts_fresh(index, storage)
    finally:
        if other is not storage:
            other.close()
        storage.close()


_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
    from pi_hermes_memory.domain.memory.model import Target
    from pi_hermes_memory.testing.contracts import EventWriter

    storage = SqliteStorage(Path(sys.argv[1]))
    writer = EventWriter(storage)
    writer.n = int(sys.argv[2])
    if sys.argv[3] == "replace":
        writer.replace(sys.argv[4], sys.argv[5])
    else:
        for text in sys.argv[4:]:
            writer.add(text, Target.MEMORY)
    storage.close()
    """
)


def _kept(index: SqliteSearchIndex, storage: SqliteStorage) -> set[object]:
    """The keys whose counts the index still holds once it has seen the latest change."""
    with storage.read() as conn:
        index._counts.check(conn)
    return set(index._counts._docs)


def _child(path: Path, first: int, *args: str) -> None:
    subprocess.run([sys.executable, "-c", _CHILD, str(path), str(first), *args], check=True)


def test_another_process_adding_or_replacing_above_the_bound_keeps_the_capped_count(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    storage = SqliteStorage(path)
    try:
        writer = EventWriter(storage)
        for n in range(COMMON_CAP + 1):
            writer.add(f"note {n} about the ledger")
        writer.add("the invoice archive moved to the vault")
        index = SqliteSearchIndex(storage)
        query = SearchQuery(text="ledger invoice", clauses=_clauses())
        index.search(query)
        capped = {k for k, n in index._counts._docs.items() if n >= COMMON_CAP}
        assert capped  # "ledger"
        _child(path, 1000, "add", "a second invoice for the ledger")
        assert capped <= _kept(index, storage)
        found = index.search(query)
        assert found == SqliteSearchIndex(storage).search(query)
        assert "s1001" in [h.id for h in found]
        # kept through the add: still cached, and still right
        assert capped <= set(index._counts._docs)
        _assert_counts_fresh(index, storage)
        # a replace of a row above the count's COMMON_CAP rows (the 258th "ledger" row is
        # not among the first 256) keeps it too
        _child(path, 2000, "replace", "s0258", "the invoice archive moved to the cellar")
        assert capped <= _kept(index, storage)
        found = index.search(query)
        assert found == SqliteSearchIndex(storage).search(query)
        assert capped <= set(index._counts._docs)
        _assert_counts_fresh(index, storage)
        # a replace of one of those rows: the count is taken afresh
        _child(path, 3000, "replace", "s0001", "the first note, rewritten without the word")
        assert not capped & _kept(index, storage)
        found = index.search(query)
        assert found == SqliteSearchIndex(storage).search(query)
        _assert_counts_fresh(index, storage)
    finally:
        storage.close()
