"""The damage check at open is skipped only for files nothing but this library changed since a
sound check (ADR 0086): real apsw files, real child processes, damage done the way
`test_damaged_database` does it, right after the stamp was recorded (the same clock tick)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite import storage as sqlite_storage
from pi_hermes_memory.adapters.sqlite.checked import (
    StampCache,
    checked_path,
    read_checked,
    settled,
    stamp_of,
    tick_ns,
)
from pi_hermes_memory.errors import DatabaseDamaged


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=root, cwd=root, environ={})


def _db(root: Path) -> Path:
    return root / "pi-hermes-memory" / "sessions.db"


class _Checks:
    """Counts the real `store_damage` runs (it still runs: only the calls are counted)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = sqlite_storage.store_damage

        def counted(path: Path) -> str | None:
            self.count += 1
            return real(path)

        monkeypatch.setattr(sqlite_storage, "store_damage", counted)


def _same_size_tail(db: Path) -> None:
    """Overwrite everything after the header page, keeping the size: with the stamp taken a
    moment ago, mtime and ctime may fall in the same clock tick; the sampled digest differs."""
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.seek(4096)
        f.write(b"\xa5" * (size - 4096))


def _garbage_after_last_page(db: Path) -> None:
    with open(db, "ab") as f:
        f.write(os.urandom(8192))


def _foreign_write(db: Path) -> None:
    """Another program changes the file through SQLite: sound, but not one of our commits."""
    conn = apsw.Connection(str(db))
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS foreign_notes(x)")
        conn.execute("INSERT INTO foreign_notes VALUES (randomblob(100))")
    finally:
        conn.close()


def test_own_writes_and_close_keep_the_stamp_so_the_next_open_skips_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _open(tmp_path) as memory:  # creating a store writes outside the chain: one check
        assert memory.add("the store's first fact").success
    with _open(tmp_path) as memory:  # checked, then its own writes: recorded at close
        assert memory.add("the store's second fact").success
    checks = _Checks(monkeypatch)
    for i in range(3):
        with _open(tmp_path) as memory:
            assert memory.add(f"fact number {i} about the deploy pipeline").success
            assert memory.search("deploy pipeline").hits
    assert checks.count == 0
    assert read_checked(_db(tmp_path)) == stamp_of(_db(tmp_path))


@pytest.mark.parametrize("damage", [_same_size_tail, _garbage_after_last_page])
def test_damage_right_after_a_recorded_stamp_is_still_found(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    with _open(tmp_path) as memory:
        assert memory.add("The deploy script lives in ops/deploy.sh").success
    with _open(tmp_path) as memory:
        assert memory.add("Prefers concise answers", target="user").success
    db = _db(tmp_path)
    assert read_checked(db) == stamp_of(db)  # recorded by the close just now
    damage(db)
    with _open(tmp_path) as memory:
        assert isinstance(memory.read_only, DatabaseDamaged)
        assert [h.text for h in memory.search("deploy script").hits] == [
            "The deploy script lives in ops/deploy.sh"
        ]


def test_another_writer_breaks_the_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _open(tmp_path) as memory:
        assert memory.add("first fact").success
    checks = _Checks(monkeypatch)
    _foreign_write(_db(tmp_path))
    with _open(tmp_path) as memory:  # checked; a session that reads records nothing
        assert memory.read_only is None
    assert checks.count == 1
    with _open(tmp_path) as memory:  # checked again, then its own write: recorded at close
        assert memory.add("second fact").success
    assert checks.count == 2
    with _open(tmp_path) as memory:
        assert memory.read_only is None
    assert checks.count == 2


def test_a_session_that_changes_nothing_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    with _open(tmp_path) as memory:
        assert memory.add("first fact").success
    _foreign_write(_db(tmp_path))  # the next open checks the file

    def files() -> dict[str, bytes]:
        folder = _db(tmp_path).parent
        return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}

    before = files()
    with _open(tmp_path) as memory:
        assert memory.read_only is None
        assert memory.search("first fact").hits
    assert files() == before


def test_a_killed_writer_leaves_no_stamp_for_its_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _open(tmp_path) as memory:
        assert memory.add("first fact").success
    child = (
        "import os, sys, pi_hermes_memory\n"
        "from pathlib import Path\n"
        "root = Path(sys.argv[1])\n"
        "m = pi_hermes_memory.open(agent_root=root, cwd=root, environ={})\n"
        "assert m.add('second fact, never closed').success\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", child, str(tmp_path)], check=False)
    assert done.returncode == -signal.SIGKILL
    checks = _Checks(monkeypatch)
    with _open(tmp_path) as memory:
        assert memory.read_only is None
        assert any(e.text == "second fact, never closed" for e in memory.entries())
    assert checks.count == 1


def test_an_unreadable_record_means_a_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _open(tmp_path) as memory:
        assert memory.add("first fact").success
    checked_path(_db(tmp_path)).write_text("{not json", encoding="utf-8")
    checks = _Checks(monkeypatch)
    with _open(tmp_path) as memory:
        assert memory.read_only is None
    assert checks.count == 1


_STEPS = st.lists(
    st.sampled_from(["session", "foreign", "damage", "garbage"]), min_size=1, max_size=6
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_STEPS)
def test_every_damage_is_found_whatever_came_before(tmp_path_factory, steps: list[str]) -> None:
    """Our sessions (open, add, close), other writers and damage in any order: an open after
    damage always finds it, and an open without damage never reports any."""
    root = tmp_path_factory.mktemp("checked")
    with _open(root) as memory:
        assert memory.add("seed fact").success
    damaged = False
    for n, step in enumerate(steps):
        db = _db(root)
        if step == "session":
            with _open(root) as memory:
                if damaged:
                    assert isinstance(memory.read_only, DatabaseDamaged)
                    return
                assert memory.read_only is None
                assert memory.add(f"fact {n} of the session step").success
        elif step == "foreign" and not damaged:
            _foreign_write(db)
        elif step == "damage":
            _same_size_tail(db)
            damaged = True
        elif step == "garbage":
            _garbage_after_last_page(db)
            damaged = True
    with _open(root) as memory:
        assert isinstance(memory.read_only, DatabaseDamaged) == damaged


# -- the digests a session reuses (ADR 0106) ---------------------------------------------------


def _settle(path: Path) -> None:
    """Wait until `path`'s last change is older than a clock tick (its stat then proves it)."""
    st = os.stat(path)
    while not settled(st.st_mtime_ns, st.st_ctime_ns, time.time_ns()):
        time.sleep(0.005)


def _cached(memory: pi_hermes_memory.Memory, db: Path) -> bool:
    """Whether the session's stamp chain holds a digest of `db` that its stat proves."""
    cache: StampCache = memory._storage._stamps  # type: ignore[attr-defined]
    return cache.digest(str(db), os.stat(db)) is not None


def _same_size_same_mtime(db: Path) -> None:
    """Smash the last page, keeping the size and putting the mtime back: only the ctime
    (which no program can set) and the bytes tell."""
    st = os.stat(db)
    with open(db, "r+b") as f:
        f.seek(st.st_size - 4096)
        f.write(b"\xa5" * 4096)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(db).st_size == st.st_size
    assert os.stat(db).st_mtime_ns == st.st_mtime_ns


def _replaced_older(db: Path) -> None:
    """Replace the file by another of the same size whose mtime is older than the original's:
    a restore from a backup of the same length."""
    st = os.stat(db)
    other = db.with_name("replacement.db")
    shutil.copyfile(db, other)
    with open(other, "r+b") as f:
        f.seek(st.st_size - 4096)
        f.write(b"\x5a" * 4096)
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    os.replace(other, db)


def _checkpoint_elsewhere(db: Path) -> None:
    """Another process checkpoints the WAL into the database (a sound SQLite write)."""
    code = "import apsw, sys; apsw.Connection(sys.argv[1]).execute('PRAGMA wal_checkpoint(FULL)')"
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)


def _write_elsewhere(db: Path) -> None:
    """Another process commits through SQLite."""
    code = (
        "import apsw, sys; c = apsw.Connection(sys.argv[1]); "
        "c.execute('CREATE TABLE IF NOT EXISTS foreign_notes(x)'); "
        "c.execute('INSERT INTO foreign_notes VALUES (1)')"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)


@pytest.mark.parametrize(
    "change", [_checkpoint_elsewhere, _write_elsewhere, _same_size_same_mtime, _replaced_older]
)
def test_a_change_between_two_adds_breaks_the_chain_while_the_digest_is_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[Path], None]
) -> None:
    """The session's chain reuses the database's digest once its stat proves it (the racy
    rule); another process's write, a checkpoint, or bytes changed under the same size and
    mtime between two adds still break the chain: nothing is recorded, the next open checks."""
    with _open(tmp_path) as memory:
        assert memory.add("the store's first fact").success
    db = _db(tmp_path)
    with _open(tmp_path) as memory:
        assert memory.add("the second fact, while the database settles").success
        _settle(db)
        assert memory.add("the third fact: the chain learns the settled digest").success
        assert memory.add("the fourth fact: the chain reuses it").success
        assert _cached(memory, db)
        before = read_checked(db)
        change(db)
        if change in (_checkpoint_elsewhere, _write_elsewhere):
            assert memory.add("a fact after the other process").success
    assert read_checked(db) == before  # the close recorded nothing
    checks = _Checks(monkeypatch)
    with _open(tmp_path) as memory:  # (the close's checkpoint may write over a smashed page)
        if change in (_checkpoint_elsewhere, _write_elsewhere):
            assert memory.read_only is None
    assert checks.count == 1


def test_a_file_changed_within_the_tick_is_hashed_every_time(tmp_path: Path) -> None:
    """The racy rule: a file stamped within a clock tick of its last change is not remembered
    (a same-tick write could keep its stat); once older than the tick it is, under its stat."""
    path = tmp_path / "store.db"
    path.write_bytes(b"a" * 10_000)
    cache = StampCache()
    first = stamp_of(path, cache)
    assert first is not None
    st = os.stat(path)
    if not settled(st.st_mtime_ns, st.st_ctime_ns, time.time_ns()):  # (nor when hashed)
        assert cache.digest(str(path), st) is None
    _settle(path)
    assert stamp_of(path, cache) == first
    assert cache.digest(str(path), os.stat(path)) == first[0][4]
    assert settled(1, 1, tick_ns(1, 1) + 2) and not settled(1, 1, tick_ns(1, 1) + 1)
    assert tick_ns(10**9, 2 * 10**9) >= 2 * 10**9  # whole seconds: FAT's two-second clock
    assert tick_ns(10**6 + 7, 2 * 10**6) > tick_ns(10**6 + 7, 3)


_FILE_STEPS = st.lists(
    st.sampled_from(["settle", "same_size", "same_size_mtime", "append", "replace", "wal"]),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None)
@given(steps=_FILE_STEPS)
@example(steps=["settle", "same_size_mtime"])
@example(steps=["settle", "replace", "settle", "same_size"])
def test_a_cached_stamp_equals_a_fresh_one_whatever_happens_to_the_files(
    steps: list[str],
) -> None:
    """Whatever is written to the database and its WAL, in whatever tick, the stamp with the
    cache equals the stamp read afresh: a digest is reused only when it is the file's."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "store.db"
        wal = Path(folder) / "store.db-wal"
        db.write_bytes(os.urandom(20_000))
        cache = StampCache()
        assert stamp_of(db, cache) == stamp_of(db)
        for n, step in enumerate(steps):
            if step == "settle":
                _settle(db)
            elif step == "same_size":
                with open(db, "r+b") as f:
                    f.write(bytes([n]) * 4096)
            elif step == "same_size_mtime":
                _same_size_same_mtime(db)
            elif step == "append":
                with open(db, "ab") as f:
                    f.write(bytes([n]) * 100)
            elif step == "replace":
                _replaced_older(db)
            else:
                with open(wal, "ab") as f:
                    f.write(bytes([n]) * 5000)
            assert stamp_of(db, cache) == stamp_of(db)
            assert stamp_of(db, cache) == stamp_of(db)
