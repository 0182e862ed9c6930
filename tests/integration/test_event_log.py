"""The event log beside sessions.db (ADR 0023), on the real apsw file and real files."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite import eventlog
from pi_hermes_memory.adapters.sqlite.eventlog import EventLog, default_log_path
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=root, cwd=root, environ={})


def _db(root: Path) -> Path:
    return root / "pi-hermes-memory" / "sessions.db"


def _rows(db: Path) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            tuple(r)
            for r in conn.execute(
                "SELECT seq, stream, version, tag, at, data FROM events ORDER BY seq"
            )
        ]
    finally:
        conn.close()


def _logged(db: Path) -> list[tuple[object, ...]]:
    return [r.row() for r in EventLog(default_log_path(db)).read().events]


def _write_some(root: Path) -> None:
    with _open(root) as memory:
        assert memory.add("alpha entry one").success
        assert memory.add("beta entry two", target="user").success
        assert memory.replace("alpha", "alpha entry revised").success


def test_every_committed_event_is_in_the_log_with_its_seq(tmp_path: Path) -> None:
    _write_some(tmp_path)
    db = _db(tmp_path)
    assert len(_rows(db)) == 3  # add, add, replace
    assert _logged(db) == _rows(db)
    lines = default_log_path(db).read_text().splitlines()
    assert lines[0].startswith('{"meta":')
    assert all(line.endswith('"}') and '"sum":"' in line for line in lines)


def test_a_log_that_lags_catches_up_at_open(tmp_path: Path) -> None:
    """A crash between COMMIT and the append leaves the log behind the database."""
    _write_some(tmp_path)
    db = _db(tmp_path)
    log = default_log_path(db)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:2]))  # meta + first event only
    with _open(tmp_path):
        pass
    assert _logged(db) == _rows(db)


def test_a_store_older_than_the_log_is_backfilled(tmp_path: Path) -> None:
    _write_some(tmp_path)
    db = _db(tmp_path)
    default_log_path(db).unlink()
    with _open(tmp_path) as memory:
        memory.add("gamma entry three")
    assert _logged(db) == _rows(db)
    assert len(_rows(db)) == 4


def test_a_torn_last_line_is_cut_off_and_rewritten(tmp_path: Path) -> None:
    _write_some(tmp_path)
    db = _db(tmp_path)
    log = default_log_path(db)
    data = log.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    log.write_bytes(data[: last_start + 40])  # a writer killed mid-append
    assert len(EventLog(log).read().events) == len(_rows(db)) - 1
    with _open(tmp_path) as memory:
        memory.add("delta entry four")
    assert _logged(db) == _rows(db)
    assert log.read_bytes().count(b"\n") == len(_rows(db)) + 1  # + the meta line


def test_a_damaged_line_in_the_middle_is_skipped_with_a_warning(tmp_path: Path) -> None:
    _write_some(tmp_path)
    log = default_log_path(_db(tmp_path))
    lines = log.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"beta", b"BETA")  # the user stream's only event
    log.write_bytes(b"".join(lines))
    contents = EventLog(log).read()
    assert any("line 3 is damaged" in p for p in contents.problems)
    assert {r.stream for r in contents.events} == {"memory:memory"}


def test_events_after_a_gap_are_left_out_not_misapplied(tmp_path: Path) -> None:
    _write_some(tmp_path)
    log = default_log_path(_db(tmp_path))
    lines = log.read_bytes().splitlines(keepends=True)
    memory_lines = [i for i, line in enumerate(lines) if b'"stream":"memory:memory"' in line]
    del lines[memory_lines[0]]  # version 1 of memory:memory is gone
    log.write_bytes(b"".join(lines))
    contents = EventLog(log).read()
    assert all(r.stream != "memory:memory" for r in contents.events)
    assert any("memory:memory" in p and "left out" in p for p in contents.problems)


def test_a_log_of_another_history_is_moved_aside(tmp_path: Path) -> None:
    _write_some(tmp_path / "a")
    _write_some(tmp_path / "b")
    db_a, db_b = _db(tmp_path / "a"), _db(tmp_path / "b")
    default_log_path(db_a).write_bytes(default_log_path(db_b).read_bytes())
    storage = SqliteStorage(db_a)
    storage.close()
    assert any("moved to" in w for w in storage.warnings)
    assert list(db_a.parent.glob("sessions.journal.jsonl.stale-*"))
    assert _logged(db_a) == _rows(db_a)


def test_a_failed_append_is_a_warning_and_the_next_write_catches_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC injected at the OS boundary (os.write in the log adapter): the COMMIT stands,
    the write succeeds with the log behind, and the next write appends what was missing."""
    _write_some(tmp_path)
    db = _db(tmp_path)
    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    with _open(tmp_path) as memory:
        monkeypatch.setattr(eventlog.os, "write", full)
        assert memory.add("epsilon while the disk is full").success
        monkeypatch.setattr(eventlog.os, "write", real_write)
        assert len(_logged(db)) == len(_rows(db)) - 1
        assert memory.add("zeta after space came back").success
    assert _logged(db) == _rows(db)


def test_database_log_and_lock_files_are_private(tmp_path: Path) -> None:
    """Created 0600 by us, not by the umask: with umask 0 SQLite alone would make 0644."""
    old = os.umask(0)
    try:
        with _open(tmp_path) as memory:
            memory.add("a private entry")
            folder = _db(tmp_path).parent
            names = ["sessions.db", "sessions.db-wal", "sessions.db-shm", ".pi-hermes-memory.lock"]
            names += ["sessions.journal.jsonl", ".sessions.journal.jsonl.lock"]
            modes = {n: stat.S_IMODE((folder / n).stat().st_mode) for n in names}
    finally:
        os.umask(old)
    assert modes == dict.fromkeys(names, 0o600)


def test_a_looser_database_is_tightened_and_read_only_side_files_repaired(
    tmp_path: Path,
) -> None:
    _write_some(tmp_path)
    db = _db(tmp_path)
    holder = SqliteStorage(db)  # keeps -wal and -shm in place
    try:
        db.chmod(0o644)
        for side in ("-wal", "-shm"):
            db.with_name(db.name + side).chmod(0o444)  # left over from a chmod 0444 episode
        SqliteStorage(db).close()
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
        for side in ("-wal", "-shm"):
            assert stat.S_IMODE(db.with_name(db.name + side).stat().st_mode) == 0o600
    finally:
        holder.close()


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=8),
    damage=st.one_of(
        st.none(), st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.binary(max_size=3))
    ),
)
def test_the_doctors_byte_check_agrees_with_the_full_read(
    tmp_path_factory: pytest.TempPathFactory,
    texts: list[str],
    damage: tuple[int, int, bytes] | None,
) -> None:
    """`EventLog.whole` (checksums from the bytes, ADR 0118) against `read` (JSON, the path a
    rebuild takes), on a real file written as `_append` writes it: an untouched log is whole,
    and a log `whole` passes holds no line `read` calls damaged."""
    path = tmp_path_factory.mktemp("log") / "sessions.journal.jsonl"
    log = EventLog(path)
    records = [
        eventlog.EventRecord(
            seq=i, stream="memory:memory", version=i, tag="memory.added.v1", at="t", data=text
        )
        for i, text in enumerate(texts, start=1)
    ]
    log._append(records, {"store_id": "s"})
    if damage is not None:
        data = bytearray(path.read_bytes())
        at = damage[0] % len(data)
        cut = damage[1] % 4
        data[at : at + cut] = damage[2]
        path.write_bytes(bytes(data))
    damaged = [p for p in log.read().problems if "is damaged" in p or "not an event" in p]
    if damage is None:
        assert log.whole() and not damaged
    elif log.whole():
        assert not damaged, damaged
