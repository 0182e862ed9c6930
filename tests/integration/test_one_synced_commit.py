"""One synced commit per add (ADR 0085), on the real adapters.

- the render ledger's record is committed by `SqliteStorage.bookkeeping` (synchronous=NORMAL
  for that commit alone): the connection is back at FULL afterwards, also after a failure, and
  the record is visible to other connections at once;
- `MarkdownFiles.replica` (folder resolution cached per process) equals `physical_path` of the
  file (the old way) for every layout of symlinks, also after the file became a symlink;
- SIGKILL at random moments of an add loop, with hand edits between the kills: every
  acknowledged add and every hand-written entry is in the store afterwards, and journal ==
  Markdown == rows.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.files.config_file import physical_path
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target

from tests.support.consistency import (
    check_store,
    db_path,
    markdown_path,
    open_memory,
    write_config,
)


def _synchronous(storage: SqliteStorage) -> int:
    return int(storage.connection.execute("PRAGMA synchronous").get)


def test_bookkeeping_commits_unsynced_and_restores_full(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "s.db", event_log=None)
    other = SqliteStorage(tmp_path / "s.db", event_log=None)
    try:
        assert _synchronous(storage) == 2  # FULL
        with storage.bookkeeping() as uow:
            assert _synchronous(storage) == 1  # NORMAL, for this commit only
            uow.ledger.record("memory:memory", "/x/MEMORY.md", 3, "ab" * 32)
        assert _synchronous(storage) == 2
        with other.snapshot() as uow:  # visible to another connection at once
            assert uow.ledger.rendered("memory:memory", "/x/MEMORY.md") == (3, "ab" * 32)
        with pytest.raises(RuntimeError), storage.bookkeeping() as uow:
            uow.ledger.record("memory:memory", "/x/MEMORY.md", 4, "cd" * 32)
            raise RuntimeError("fails inside")
        assert _synchronous(storage) == 2  # back at FULL after a failure too
        with other.snapshot() as uow:  # and the failed one rolled back
            assert uow.ledger.rendered("memory:memory", "/x/MEMORY.md") == (3, "ab" * 32)
        with storage.transaction(), storage.bookkeeping() as uow:  # nested: a savepoint
            assert _synchronous(storage) == 2
            uow.ledger.record("memory:memory", "/x/MEMORY.md", 5, "ef" * 32)
    finally:
        storage.close()
        other.close()


def test_a_connection_that_cannot_go_back_to_full_is_replaced(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "s.db", event_log=None)
    try:
        with storage.bookkeeping():
            pass
        storage.connection.execute("PRAGMA synchronous=OFF")  # as if FULL were not restored
        storage._reopen = True  # what a failed `PRAGMA synchronous=FULL` sets
        with storage.transaction():
            pass
        assert _synchronous(storage) == 2  # the write ran on a fresh FULL connection
    finally:
        storage.close()


# each layout: (memoryDir is a symlink to a real folder, MEMORY.md is a symlink inside the
# folders, the file becomes a symlink after the first call, the file exists)
@settings(max_examples=25, deadline=None)
@given(
    linked_folder=st.booleans(),
    linked_file=st.booleans(),
    relinked=st.booleans(),
    exists=st.booleans(),
    target=st.sampled_from(list(Target)),
)
def test_cached_replica_equals_physical_path(
    linked_folder: bool, linked_file: bool, relinked: bool, exists: bool, target: Target
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        real = root / "real-memory"
        real.mkdir()
        memory_dir = root / "memory"
        if linked_folder:
            memory_dir.symlink_to(real, target_is_directory=True)
        else:
            memory_dir = real
        projects = root / "projects"
        projects.mkdir()
        files = MarkdownFiles(memory_dir, projects)
        path = files.path_for(target)
        elsewhere = path.parent / "kept" / path.name
        elsewhere.parent.mkdir()
        elsewhere.write_bytes(b"kept\n")
        if linked_file:
            path.symlink_to(elsewhere)
        elif exists:
            path.write_bytes(b"x\n")
        assert files.replica(target) == str(physical_path(path))
        if relinked and not linked_file:
            path.unlink(missing_ok=True)
            path.symlink_to(elsewhere)  # replaced by a symlink: seen at once, not cached
        assert files.replica(target) == str(physical_path(path))


CHILD = r"""
import sys
root, run = sys.argv[1], int(sys.argv[2])
import pi_hermes_memory
m = pi_hermes_memory.open(agent_root=root, cwd=root, project="alpha", environ={"HOME": root})
print("ready", flush=True)
i = 0
while True:
    text = f"synced commit run{run} fact{i} about the harbour crane"
    r = m.add(text, target="memory")
    if not (r.success and r.status == "added"):
        print("bad", r.status, flush=True)
        sys.exit(3)
    print("ok", text, flush=True)
    i += 1
"""

KILLS = int(os.environ.get("PHM_SYNCED_KILLS", "16"))
SEED = int(os.environ.get("PHM_KILL_SEED", "0")) or random.SystemRandom().randrange(1, 2**31)


def test_kills_between_commit_file_and_ledger_lose_nothing_with_hand_edits(
    tmp_path: Path,
) -> None:
    print(f"seed {SEED}")
    rng = random.Random(SEED)
    write_config(tmp_path)
    acknowledged: list[str] = []
    by_hand: list[str] = []
    for run in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path), str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n", child.stderr.read() if child.stderr else ""
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=60)
        assert "bad" not in out
        acknowledged += [line[3:] for line in out.splitlines() if line.startswith("ok ")]
        if rng.random() < 0.5:  # a person adds an entry by hand while no process runs
            path = markdown_path(tmp_path, Target.MEMORY)
            if path.exists():
                text = f"typed by hand after kill {run} about the ferry"
                path.write_bytes(path.read_bytes() + f"\n§\n{text}\n".encode())
                by_hand.append(text)
    assert acknowledged, "no add was acknowledged before a kill: raise the sleep"
    with open_memory(tmp_path, "alpha") as memory:
        texts = [e.text for e in memory.entries("memory")]
    for text in acknowledged + by_hand:
        assert texts.count(text) == 1, (text, SEED)
    check_store(tmp_path)
    conn = apsw.Connection(str(db_path(tmp_path)))
    try:
        assert conn.execute("PRAGMA integrity_check").get == "ok"
    finally:
        conn.close()
