"""A damaged or deleted sessions.db: detected, read-only from the log and Markdown, recovered
with history and ids (ADR 0023). Real apsw files, damaged the way disks and people damage them."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.errors import DatabaseDamaged, HermesMemoryError


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=root, cwd=root, environ={})


def _folder(root: Path) -> Path:
    return root / "pi-hermes-memory"


def _history(root: Path) -> list[tuple[str, str, str | None]]:
    with _open(root) as memory:
        assert memory.read_only is None
        return sorted((e.id, e.text, e.superseded_by) for e in memory.entries(include_history=True))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store with history: a replace (superseded row) and entries in two documents."""
    with _open(tmp_path) as memory:
        assert memory.add("The deploy script lives in ops/deploy.sh").success
        assert memory.add("Prefers concise answers", target="user").success
        assert memory.replace("ops/deploy.sh", "The deploy script lives in tools/deploy.sh").success
    return tmp_path


def _garbage(db: Path) -> None:
    db.write_bytes(os.urandom(64 * 1024))


def _truncate(db: Path) -> None:
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size // 2)


def _smash_pages(db: Path) -> None:
    """Keep the header page, overwrite the rest: the file opens, queries fail."""
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.seek(4096)
        f.write(b"\xa5" * (size - 4096))


@pytest.mark.parametrize("damage", [_garbage, _truncate, _smash_pages])
def test_a_damaged_database_leaves_a_read_only_store_with_history(store: Path, damage) -> None:
    before = _history(store)
    damage(_folder(store) / "sessions.db")
    with _open(store) as memory:
        assert isinstance(memory.read_only, DatabaseDamaged)
        assert "recover" in memory.warnings[0] and "damaged" in memory.warnings[0]
        listed = sorted(
            (e.id, e.text, e.superseded_by) for e in memory.entries(include_history=True)
        )
        assert listed == before  # same ids and supersede history, from the event log
        found = memory.search("deploy script")
        assert [h.text for h in found.hits] == ["The deploy script lives in tools/deploy.sh"]
        with pytest.raises(DatabaseDamaged, match="nothing was written"):
            memory.add("a new fact")
        refused = memory.call_tool(
            "memory", {"action": "add", "target": "memory", "content": "another fact"}
        )
        assert refused["success"] is False and "recover" in refused["message"]


def test_damage_met_by_a_query_is_a_typed_error_not_a_driver_error(store: Path) -> None:
    storage = SqliteStorage(_folder(store) / "sessions.db")
    try:
        _smash_pages(_folder(store) / "sessions.db")
        with pytest.raises(DatabaseDamaged, match="recover"), storage.read() as conn:
            conn.execute("SELECT count(*) FROM memories WHERE text LIKE '%x%'").fetchall()
    finally:
        storage.close()


def test_recover_rebuilds_ids_and_history_and_keeps_the_damaged_files(store: Path) -> None:
    before = _history(store)
    folder = _folder(store)
    _garbage(folder / "sessions.db")
    (folder / "sessions.db-wal").write_bytes(b"not a wal")
    report = pi_hermes_memory.recover(agent_root=store, environ={})
    assert report.status == "recovered"
    assert report.events == 3
    assert sorted(report.moved_aside)[0].startswith("sessions.db.damaged-")
    assert any(name.endswith("-wal") for name in report.moved_aside)
    for name in report.moved_aside:
        assert (folder / name).exists()
    assert _history(store) == before
    with _open(store) as memory:
        assert memory.add("writes work again").success
    assert pi_hermes_memory.recover(agent_root=store, environ={}).status == "healthy"


def test_markdown_edits_made_while_damaged_are_imported_by_recover(store: Path) -> None:
    before = _history(store)
    folder = _folder(store)
    _garbage(folder / "sessions.db")
    memory_md = folder / "MEMORY.md"
    memory_md.write_bytes(memory_md.read_bytes() + "§\nAdded by hand while damaged\n".encode())
    with _open(store) as memory:  # read-only, but the hand edit shows
        assert "Added by hand while damaged" in [e.text for e in memory.entries()]
    assert pi_hermes_memory.recover(agent_root=store, environ={}).status == "recovered"
    after = _history(store)
    assert set(before) < set(after)
    assert [t for _, t, _ in after if t not in {t for _, t, _ in before}] == [
        "Added by hand while damaged"
    ]


def test_recover_without_an_event_log_rebuilds_from_markdown(store: Path) -> None:
    folder = _folder(store)
    (folder / "sessions.journal.jsonl").unlink()
    _garbage(folder / "sessions.db")
    report = pi_hermes_memory.recover(agent_root=store, environ={})
    assert report.status == "rebuilt-from-markdown"
    with _open(store) as memory:
        assert {e.text for e in memory.entries()} == {
            "The deploy script lives in tools/deploy.sh",
            "Prefers concise answers",
        }


def test_a_deleted_database_is_rebuilt_from_the_log_with_a_warning(store: Path) -> None:
    before = _history(store)
    folder = _folder(store)
    (folder / "sessions.db").unlink()
    with _open(store) as memory:
        assert any("was missing; rebuilt from sessions.journal.jsonl" in w for w in memory.warnings)
    assert _history(store) == before


def test_an_emptied_database_file_is_rebuilt_too(store: Path) -> None:
    before = _history(store)
    (_folder(store) / "sessions.db").write_bytes(b"")
    assert _history(store) == before


def test_every_storage_error_is_under_the_library_base(store: Path) -> None:
    _garbage(_folder(store) / "sessions.db")
    with pytest.raises(HermesMemoryError) as caught:
        SqliteStorage(_folder(store) / "sessions.db")
    assert isinstance(caught.value, DatabaseDamaged)
    assert not isinstance(caught.value, apsw.Error)
