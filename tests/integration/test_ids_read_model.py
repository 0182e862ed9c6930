"""The SQLite read model keeps each row's memory id and version number (ADR 0079), so a search
names a hit's memory without folding its document; what it keeps must equal the fold's
lineage (ADR 0074) after any sequence of writes, and a row written before schema 9 (NULL) is
still named right (read from the documents) and filled by a repair."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from hypothesis import HealthCheck, given, settings
from pi_hermes_memory import Memory
from pi_hermes_memory.domain.memory.model import Target

from tests.support.id_ops import OPS, play


def _open(root: Path) -> Memory:
    return pi_hermes_memory.open(agent_root=root, cwd=root / "web", environ={})


def _db(root: Path) -> Path:
    return root / "pi-hermes-memory" / "sessions.db"


def _kept(root: Path) -> dict[str, tuple[str | None, int | None]]:
    conn = apsw.Connection(str(_db(root)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            str(i): (m, v)
            for i, m, v in conn.execute("SELECT id, memory_id, version_no FROM memories")
        }
    finally:
        conn.close()


def _folded(memory: Memory) -> dict[str, tuple[str | None, int | None]]:
    service = memory._service  # the fold's lineage, what the read model must agree with
    return {
        e.id: (e.stable_id, e.version_no) for t in Target for e in service.document(t).all_entries()
    }


def _agrees(root: Path, memory: Memory) -> None:
    kept, folded = _kept(root), _folded(memory)
    for row_id, lineage in kept.items():
        assert row_id in folded, row_id
        assert lineage == folded[row_id], (row_id, lineage, folded[row_id])


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=OPS)
def test_the_read_models_lineage_is_the_folds(tmp_path: Path, ops: list[object]) -> None:
    root = tmp_path / str(len(list(tmp_path.iterdir())))
    with _open(root) as m:
        play(m, ops)  # type: ignore[arg-type]
        _agrees(root, m)
        for view in [*m.entries("memory"), *m.entries("project")]:
            hits = m.search(view.text, include_superseded=True).hits
            mine = [h for h in hits if h.id == view.version_id]
            assert mine and mine[0].memory_id == view.id and mine[0].version_no == view.version


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "agent"


def test_a_search_reads_the_lineage_from_the_row(root: Path) -> None:
    with _open(root) as m:
        first = m.add("Deploys go through the blue-green switch")
        m.update(str(first.entry_id), "Deploys go through the canary switch")
        second = m.update(str(first.entry_id), "Deploys go through the canary switch at noon")
        assert second.success and second.entry_id == first.entry_id
    kept = _kept(root)
    assert kept[str(second.version_id)] == (first.entry_id, 3)
    with _open(root) as m:
        hit = m.search("canary noon").hits[0]
        assert (hit.id, hit.memory_id, hit.version_no) == (second.version_id, first.entry_id, 3)


def test_rows_from_before_the_lineage_columns_are_named_right_and_a_repair_fills_them(
    root: Path,
) -> None:
    with _open(root) as m:
        first = m.add("Deploys go through the blue-green switch")
        second = m.update(str(first.entry_id), "Deploys go through the canary switch")
    conn = apsw.Connection(str(_db(root)))
    conn.execute("UPDATE memories SET memory_id = NULL, version_no = NULL")  # as schema 8 left it
    conn.close()
    with _open(root) as m:
        hit = m.search("canary switch").hits[0]
        assert (hit.memory_id, hit.version_no) == (first.entry_id, 2)
        # a later replace of an unknown row stays unknown (never guessed), and still reads right
        third = m.update(str(first.entry_id), "Deploys go through the canary switch at noon")
        assert _kept(root)[str(third.version_id)] == (None, None)
        hit = m.search("canary noon").hits[0]
        assert (hit.memory_id, hit.version_no) == (first.entry_id, 3)
        m.sync_markdown()  # verifies and repairs the read model
        _agrees(root, m)
    kept = _kept(root)
    assert kept[str(second.version_id)] == (first.entry_id, 2)
    assert kept[str(third.version_id)] == (first.entry_id, 3)
