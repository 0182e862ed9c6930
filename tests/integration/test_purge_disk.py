"""Purge on the real adapters (ADR 0026): after a purge, no file under the data directory holds
the purged text — not sessions.db (events, rows, FTS segments, snapshots, free space), its WAL,
the event log or the Markdown files — and the store rebuilt from the event log converges."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.sqlite.eventlog import EventLog

MARKER = "Zebrafinch-Marker-7Q4X"
TOKEN = "zebrafinch"  # what FTS5 (unicode61, lowercased) indexes of it


def holders(root: Path, *needles: bytes) -> list[str]:
    """Every file under `root` (recursively, as bytes) holding one of `needles`."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {n!r}" for n in needles if n in data]
    return found


def needles() -> tuple[bytes, ...]:
    return (MARKER.encode(), MARKER.lower().encode(), TOKEN.encode(), b"marker-7q4x")


def fts_terms(db: Path) -> set[str]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memories_fts, 'row')")
        return {str(r[0]) for r in conn.execute("SELECT term FROM temp.vocab")}
    finally:
        conn.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


def fill(memory: pi_hermes_memory.Memory) -> list[str]:
    """A chain holding the marker (added, replaced, then removed) among enough other writes to
    pass the snapshot boundary (500 events); returns the chain's version ids (ADR 0074)."""
    first = memory.add(f"The staging vault is named {MARKER} (rotate monthly)")
    assert first.success
    memory.add("The CI runs on GitHub Actions with four runners")
    second = memory.replace(MARKER, f"The staging vault is named {MARKER}, rotated in May")
    assert second.success
    ops = []
    for i in range(255):  # add and remove: 510 events, few live characters (capacity)
        ops.append({"action": "add", "target": "memory", "content": f"bulk fact {i} kestrel{i}x"})
        ops.append({"action": "remove", "target": "memory", "old_text": f"kestrel{i}x"})
    done = memory.batch(ops)
    assert done.success, done.message
    assert memory.remove("rotated in May").success
    assert first.entry_id == second.entry_id  # one memory, one id across the replace
    return [str(first.version_id), str(second.version_id)]


def test_purge_leaves_no_trace_in_any_file_and_the_log_still_recovers(root: Path) -> None:
    memory = pi_hermes_memory.open(agent_root=root, cwd=root)
    data = root / "pi-hermes-memory"
    db = data / "sessions.db"
    try:
        chain = fill(memory)
        with memory._storage.transaction() as uow:  # the snapshot boundary was passed
            snap = uow.journal.snapshot("memory:memory")
        assert snap is not None and snap[0] >= 500 and MARKER in snap[1]
        assert holders(root, *needles())  # the marker really was everywhere before
        assert TOKEN in fts_terms(db)

        result = memory.purge(MARKER)
        assert result.status == "purged" and result.versions == 2
        assert sorted(result.entry_ids) == sorted(chain)
        assert result.leftovers == ()
        assert memory.search(TOKEN, include_superseded=True).hits == ()
        restore = memory.restore(chain[-1])
        assert restore.status == "not_found" and "purged" in restore.message
        left = [e.text for e in memory.entries("memory", include_history=True)]
        assert len(left) == 1 and not any(MARKER in t for t in left)
        # checkpointed by the purge itself: nothing left in the database, its WAL or the log
        assert holders(root, *needles()) == []
        assert TOKEN not in fts_terms(db)
    finally:
        memory.close()
    assert holders(root, *needles()) == []

    log = EventLog(data / "sessions.journal.jsonl").read()
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    stored = [tuple(r) for r in conn.execute("SELECT * FROM events ORDER BY seq")]
    conn.close()
    assert log.problems == () and [r.row() for r in log.events] == stored
    assert len(stored) == 515

    # the database is lost: it is rebuilt from the (rewritten) event log and converges
    for side in ("", "-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    with pi_hermes_memory.open(agent_root=root, cwd=root) as again:
        assert any("rebuilt from sessions.journal.jsonl" in w for w in again.warnings)
        assert [e.text for e in again.entries("memory", include_history=True)] == left
        assert again.search(TOKEN, include_superseded=True).hits == ()
        assert again.restore(chain[0]).status == "not_found"
        removed = again.removed("memory")
        assert len(removed) == 255 and not any(MARKER in e.text for e in removed)
    assert holders(root, *needles()) == []

    # a damaged database: recover moves it aside (purged already) and rebuilds from the log
    with open(db, "r+b") as f:
        f.seek(0)
        f.write(b"garbage" * 200)
    report = pi_hermes_memory.recover(agent_root=root)
    assert report.status == "recovered"
    with pi_hermes_memory.open(agent_root=root, cwd=root) as third:
        assert [e.text for e in third.entries("memory", include_history=True)] == left
    assert holders(root, *needles()) == []


def test_copies_moved_aside_are_named_not_touched(root: Path) -> None:
    """A damaged database moved aside before the purge may hold the text: the result names
    it (ADR 0026: reported, never rewritten)."""
    with pi_hermes_memory.open(agent_root=root, cwd=root) as memory:
        memory.add(f"The staging vault is named {MARKER}")
        aside = root / "pi-hermes-memory" / "sessions.db.damaged-20260101T000000Z-000001"
        aside.write_bytes(b"old pages ... " + MARKER.encode())
        result = memory.purge(MARKER)
    assert result.status == "purged" and result.leftovers == (str(aside),)
    assert str(aside) in result.message
    assert holders(root, *needles()) == [f"{aside.relative_to(root)}: {MARKER.encode()!r}"]


def test_a_reader_holding_the_wal_is_reported(root: Path) -> None:
    """A reader in another connection keeps the WAL from being truncated: the purge still
    commits, says so, and the next checkpoint without the reader clears the WAL."""
    with pi_hermes_memory.open(agent_root=root, cwd=root) as memory:
        memory.add(f"The staging vault is named {MARKER}")
        db = root / "pi-hermes-memory" / "sessions.db"
        reader = apsw.Connection(str(db))
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM events").get >= 1
        try:
            result = memory.purge(MARKER)
        finally:
            reader.execute("COMMIT")
            reader.close()
        assert result.status == "purged"
        assert any("write-ahead log" in w for w in result.warnings)
        memory.add("A later write, after the reader left")
        memory._storage.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
    assert holders(root, *needles()) == []


def test_the_rewritten_log_keeps_its_mode(root: Path) -> None:
    with pi_hermes_memory.open(agent_root=root, cwd=root) as memory:
        memory.add(f"The staging vault is named {MARKER}")
        memory.purge(MARKER)
    log = root / "pi-hermes-memory" / "sessions.journal.jsonl"
    assert os.stat(log).st_mode & 0o777 == 0o600
    assert not [p for p in log.parent.iterdir() if p.name.endswith(".tmp")]


class Crash(BaseException):
    pass


def test_a_purge_interrupted_before_its_scrub_is_finished_at_the_next_open(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The purge committed, then the process died before scrubbing: the redaction left a mark
    in the database, nobody appends the old log meanwhile, and the next open scrubs."""
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

    memory = pi_hermes_memory.open(agent_root=root, cwd=root)
    memory.add(f"The staging vault is named {MARKER}")
    memory.add("The CI runs on GitHub Actions")

    def die(self: SqliteStorage) -> None:
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(SqliteStorage, "scrub", die)
        with pytest.raises(Crash):
            memory.purge(MARKER)
        memory.add("A write between the crash and the next open")  # must not append the log
    memory._storage.close()  # the process is gone (its connection checkpoints)
    assert holders(root, *needles())  # the old log, until the next open
    with pi_hermes_memory.open(agent_root=root, cwd=root) as again:
        texts = [e.text for e in again.entries("memory", include_history=True)]
        assert texts == [
            "The CI runs on GitHub Actions",
            "A write between the crash and the next open",
        ]
    assert holders(root, *needles()) == []
    log = EventLog(root / "pi-hermes-memory" / "sessions.journal.jsonl").read()
    assert log.problems == () and len(log.events) == 4
