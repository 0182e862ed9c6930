"""Readers never wait for writers, waits end in typed errors, size caps, temp clean-up
(ADR 0024). The writer that holds the store is a real second process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.markdown.atomic import FileLock
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.store import MAX_FILE_BYTES, MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.commands import AddMemory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import HermesMemoryError, LockTimeout, MarkdownTooLarge, StoreBusy
from pi_hermes_memory.memory.service import MemoryService

from tests.support.builders import settings
from tests.support.fakes import SequentialIds, StepClock

_HOLDER = r"""
import sys, apsw
from pathlib import Path
from pi_hermes_memory.adapters.markdown.atomic import FileLock
lock = FileLock(Path(sys.argv[1]))
lock.acquire()
conn = apsw.Connection(sys.argv[2])
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
conn.execute("ROLLBACK")
lock.release()
"""


def _service(root: Path, *, lock_timeout: float = 30.0) -> MemoryService:
    memory_dir = root / "pi-hermes-memory"
    return MemoryService(
        storage=SqliteStorage(memory_dir / "sessions.db"),
        markdown=MarkdownFiles(memory_dir, root / "projects-memory"),
        fmt=MarkdownFormat(),
        clock=StepClock(),
        ids=SequentialIds(),
        settings=settings(),
        lock_timeout=lock_timeout,
    )


def _add(text: str, target: Target = Target.MEMORY) -> AddMemory:
    return AddMemory(target=target, text=text, entry_id=f"x{abs(hash(text))}", at=StepClock().now())


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A second process holding the store lock and an IMMEDIATE transaction on sessions.db."""
    svc = _service(tmp_path)
    svc.execute(_add("The CI runs on GitHub Actions"))
    svc.entries()  # every file rendered and recorded
    memory_dir = tmp_path / "pi-hermes-memory"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(memory_dir / ".pi-hermes-memory.lock"),
         str(memory_dir / "sessions.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def test_readers_do_not_wait_for_a_writer_holding_the_store(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    reader = _service(tmp_path, lock_timeout=0.2)  # would raise LockTimeout if it waited
    assert [v.text for v in reader.entries()] == ["The CI runs on GitHub Actions"]
    assert reader.document(Target.MEMORY).version == 1
    reader.refresh()


def test_a_writer_waiting_too_long_gets_a_typed_error(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    writer = _service(tmp_path, lock_timeout=0.2)
    with pytest.raises(StoreBusy) as caught:
        writer.execute(_add("Deploys need the VPN"))
    assert isinstance(caught.value, HermesMemoryError) and isinstance(caught.value, LockTimeout)
    assert "another process" in str(caught.value)


def test_a_busy_database_is_a_typed_error_not_a_driver_error(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    storage = SqliteStorage(tmp_path / "pi-hermes-memory" / "sessions.db")
    storage.connection.set_busy_timeout(50)
    with pytest.raises(StoreBusy, match="busy"), storage.transaction():
        pass
    storage.close()


def test_a_lock_given_up_on_is_handed_back_when_it_arrives(tmp_path: Path) -> None:
    """The helper thread of an abandoned wait releases the lock the moment it gets it."""
    path = tmp_path / "x.lock"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), str(tmp_path / "db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    with pytest.raises(LockTimeout):
        FileLock(path, timeout=0.1).acquire()
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)
    lock = FileLock(path, timeout=30)
    with lock:  # the abandoned waiter got the lock, then closed it
        assert lock.held


def test_a_too_large_file_is_left_alone_and_blocks_only_its_document(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    svc.execute(_add("Prefers short answers", Target.USER))
    big = tmp_path / "pi-hermes-memory" / "MEMORY.md"
    line = b"A hand-written fact that is long enough to fill the file quickly.\n\xc2\xa7\n"
    big.write_bytes(line * (MAX_FILE_BYTES // len(line) + 1))
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    fresh = _service(tmp_path)
    assert [v.text for v in fresh.entries(Target.USER)] == ["Prefers short answers"]
    assert fresh.execute(_add("Answers in English", Target.USER)).success
    with pytest.raises(MarkdownTooLarge, match="larger than 16 MiB"):
        fresh.execute(_add("Deploys need the VPN"))
    assert hashlib.sha256(big.read_bytes()).hexdigest() == digest


def test_temp_files_of_killed_writers_are_removed_by_the_next_write(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    svc.execute(_add("The CI runs on GitHub Actions"))
    folder = tmp_path / "pi-hermes-memory"
    old = folder / ".MEMORY.md.abcd1234.tmp"
    young = folder / ".MEMORY.md.wxyz5678.tmp"
    foreign = folder / ".notes.md.abcd1234.tmp"
    for path in (old, young, foreign):
        path.write_bytes(b"partial")
    an_hour_ago = time.time() - 3600
    for path in (old, foreign):
        os.utime(path, (an_hour_ago, an_hour_ago))
    svc.execute(_add("Deploys need the VPN"))
    assert not old.exists()
    assert not young.exists()  # under the store lock no writer of ours is mid-write
    assert foreign.exists()  # not one of our files


def test_open_and_list_through_the_api_do_not_wait_for_a_writer(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    import pi_hermes_memory

    with pi_hermes_memory.open(
        agent_root=tmp_path, environ={"HOME": str(tmp_path)}, cwd=tmp_path, project="app"
    ) as memory:
        assert [v.text for v in memory.entries("memory")] == ["The CI runs on GitHub Actions"]
        assert memory.search("GitHub").hits
