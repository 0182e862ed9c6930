"""Full disk, read-only folder, read-only database file, read-only MEMORY.md (ADR 0023).

Real faults, not mocks: a small tmpfs filled to the last block (ENOSPC from the kernel) and
read-only bind mounts (EROFS) where the tests run as root, `chmod` otherwise; see
tests/support/faults.py. Each case checks the typed error, that nothing acknowledged is lost,
and that the store works again once the cause is gone.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.sqlite.eventlog import EventLog, default_log_path
from pi_hermes_memory.errors import StorageFull, StoreReadOnly

from tests.support.faults import fill, read_only, small_disk


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=root, cwd=root, environ={})


def _folder(root: Path) -> Path:
    return root / "pi-hermes-memory"


def _events(root: Path) -> int:
    conn = apsw.Connection(str(_folder(root) / "sessions.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(*) FROM events").get)
    finally:
        conn.close()


def _seed(root: Path) -> None:
    with _open(root) as memory:
        assert memory.add("The staging cluster is called kestrel").success
        assert memory.add("Prefers tabs over spaces", target="user").success


def test_a_full_disk_refuses_the_write_loses_nothing_and_recovers(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "2m") as disk:
        root = disk / "agent"
        _seed(root)
        saved: list[str] = []
        with _open(root) as memory:
            filler = fill(disk)
            with pytest.raises(StorageFull, match="full"):
                for i in range(200):  # until the WAL needs a page the disk does not have
                    text = f"Fact number {i} about the kestrel cluster " + "x" * 40
                    if memory.add(text, target="user").success:
                        saved.append(text)
            assert memory.entries("memory")[0].text == "The staging cluster is called kestrel"
            filler.unlink()  # the cause is gone: the same open store writes again
            assert memory.add("Written after space came back").success
        with _open(root) as memory:
            texts = {e.text for e in memory.entries()}
        assert {*saved, "Written after space came back", "Prefers tabs over spaces"} <= texts
        db = _folder(root) / "sessions.db"
        assert len(EventLog(default_log_path(db)).read().events) == _events(root)


def test_a_store_opened_on_a_full_disk_still_lists_and_searches(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "2m") as disk:
        root = disk / "agent"
        _seed(root)
        filler = fill(disk)
        try:
            with _open(root) as memory:
                assert isinstance(memory.read_only, StorageFull)
                assert "full" in memory.warnings[0]
                assert {e.text for e in memory.entries()} == {
                    "The staging cluster is called kestrel",
                    "Prefers tabs over spaces",
                }
                assert [h.text for h in memory.search("kestrel").hits] == [
                    "The staging cluster is called kestrel"
                ]
                with pytest.raises(StorageFull, match="nothing was written"):
                    memory.add("refused while full")
        finally:
            filler.unlink()
        with _open(root) as memory:
            assert memory.add("accepted once space is back").success


def test_a_read_only_folder_allows_list_and_search_and_refuses_writes(tmp_path: Path) -> None:
    _seed(tmp_path)
    before = _events(tmp_path)
    with read_only(_folder(tmp_path)), _open(tmp_path) as memory:
        assert isinstance(memory.read_only, StoreReadOnly)
        assert "read-only" in memory.warnings[0]
        assert {e.text for e in memory.entries()} == {
            "The staging cluster is called kestrel",
            "Prefers tabs over spaces",
        }
        assert [h.text for h in memory.search("staging cluster").hits] == [
            "The staging cluster is called kestrel"
        ]
        with pytest.raises(StoreReadOnly, match="nothing was written"):
            memory.add("refused in a read-only folder")
    assert _events(tmp_path) == before
    with _open(tmp_path) as memory:  # writable again: works at once
        assert memory.read_only is None
        assert memory.add("accepted after the folder is writable").success


def test_a_read_only_database_file_allows_reads_and_recovers(tmp_path: Path) -> None:
    _seed(tmp_path)
    db = _folder(tmp_path) / "sessions.db"
    with read_only(db), _open(tmp_path) as memory:
        assert isinstance(memory.read_only, StoreReadOnly)
        assert len(memory.entries()) == 2
        with pytest.raises(StoreReadOnly):
            memory.remove("kestrel")
    with _open(tmp_path) as memory:
        assert memory.read_only is None
        assert memory.remove("kestrel").success


def test_a_read_only_memory_md_is_respected_and_other_documents_work(tmp_path: Path) -> None:
    _seed(tmp_path)
    memory_md = _folder(tmp_path) / "MEMORY.md"
    memory_md.chmod(0o444)
    digest = hashlib.sha256(memory_md.read_bytes()).hexdigest()
    before = _events(tmp_path)
    try:
        with _open(tmp_path) as memory:
            with pytest.raises(StoreReadOnly, match=r"MEMORY\.md is read-only"):
                memory.add("would change the read-only file")
            refused = memory.call_tool(
                "memory", {"action": "add", "target": "memory", "content": "via the tool"}
            )
            assert refused["success"] is False and "MEMORY.md" in refused["message"]
            assert _events(tmp_path) == before  # checked before the transaction
            assert memory.add("Other documents keep working", target="user").success
        assert hashlib.sha256(memory_md.read_bytes()).hexdigest() == digest
        assert oct(memory_md.stat().st_mode & 0o777) == oct(0o444)
    finally:
        memory_md.chmod(0o600)
    with _open(tmp_path) as memory:
        assert memory.add("would change the read-only file").success


def test_a_hand_edited_read_only_memory_md_is_imported_but_not_rewritten(
    tmp_path: Path,
) -> None:
    _seed(tmp_path)
    memory_md = _folder(tmp_path) / "MEMORY.md"
    memory_md.write_bytes(memory_md.read_bytes() + "§\nTyped by hand\n".encode())
    memory_md.chmod(0o444)
    edited = memory_md.read_bytes()
    try:
        with _open(tmp_path) as memory:
            assert "Typed by hand" in {e.text for e in memory.entries()}
        assert memory_md.read_bytes() == edited  # not replaced by a re-render
    finally:
        memory_md.chmod(0o600)
