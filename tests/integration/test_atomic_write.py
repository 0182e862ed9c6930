"""Crash safety of atomic_write and FileLock, on real files and real processes.

The kill tests SIGKILL child processes; each child loads `atomic.py` straight from its file (it
only needs the standard library), so a child starts in milliseconds without importing the
whole package.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_hermes_memory.adapters.markdown import atomic
from pi_hermes_memory.adapters.markdown.atomic import FileLock, atomic_write, stale_temp_files
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import LockTimeout, StorageFailed

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL and flock")

OLD = b"old content\n" * 1_000
NEW = "new content, 新内容\n".encode() * 10_000


def temp_leftovers(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(".tmp"))


def fail_on_call(real: Callable[..., Any], n: int, exc: BaseException) -> Callable[..., Any]:
    """`real`, except that call number `n` raises `exc` instead."""
    calls = 0

    def fake(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == n:
            raise exc
        return real(*args, **kwargs)

    return fake


# --- atomic_write: success and fault injection -------------------------------------------------


def test_writes_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    atomic_write(path, OLD)
    assert path.read_bytes() == OLD
    atomic_write(path, NEW)
    assert path.read_bytes() == NEW
    atomic_write(path, b"")
    assert path.read_bytes() == b""
    assert temp_leftovers(tmp_path) == []


def test_creates_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "USER.md"
    atomic_write(path, NEW)
    assert path.read_bytes() == NEW


@posix_only
def test_new_files_are_private_and_existing_modes_are_kept(tmp_path: Path) -> None:
    fresh, shared = tmp_path / "fresh.md", tmp_path / "shared.md"
    atomic_write(fresh, OLD)
    shared.write_bytes(OLD)
    shared.chmod(0o644)
    atomic_write(shared, NEW)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644


@posix_only
def test_a_symlinked_file_stays_linked(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "MEMORY.md"
    real.parent.mkdir()
    real.write_bytes(OLD)
    link = tmp_path / "MEMORY.md"
    link.symlink_to(real)
    atomic_write(link, NEW)
    assert link.is_symlink()
    assert real.read_bytes() == NEW


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:1000])))
    atomic_write(tmp_path / "f.md", NEW)
    assert (tmp_path / "f.md").read_bytes() == NEW


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("fsync", errno.EIO),
        ("replace", errno.ENOSPC),
        ("write", errno.ENOSPC),
        ("open", errno.EMFILE),
    ],
)
def test_a_failure_at_every_step_leaves_old_or_new_never_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, function: str, error: int
) -> None:
    # Fail the Nth call for N = 1, 2, ... until a write gets through: every earlier attempt must
    # have raised StorageFailed and left one whole version and no temp file behind.
    path = tmp_path / "MEMORY.md"
    real = getattr(os, function)
    failures = 0
    for n in range(1, 50):
        atomic_write(path, OLD)
        with monkeypatch.context() as patch:
            patch.setattr(os, function, fail_on_call(real, n, OSError(error, os.strerror(error))))
            try:
                atomic_write(path, NEW)
            except StorageFailed as exc:
                failures += 1
                assert exc.errno == error
                assert path.read_bytes() in (OLD, NEW)
                assert temp_leftovers(tmp_path) == []
                continue
        assert path.read_bytes() == NEW
        break
    else:
        pytest.fail(f"os.{function} kept failing")
    assert failures >= 1
    assert temp_leftovers(tmp_path) == []


def test_a_failed_file_fsync_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "MEMORY.md"
    atomic_write(path, OLD)
    calls = []

    def broken_fsync(fd: int) -> None:
        calls.append(fd)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(StorageFailed) as raised:
        atomic_write(path, NEW)
    assert raised.value.errno == errno.EIO
    assert len(calls) == 1  # never retried: a second fsync could "succeed" over lost pages
    assert path.read_bytes() == OLD


def test_mkstemp_failure_is_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "MEMORY.md"
    atomic_write(path, OLD)

    real_open = os.open

    def no_space(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(name).endswith(".tmp") and flags & os.O_EXCL:  # the temp file, not the lock
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_space)
    with pytest.raises(StorageFailed, match="temporary file"):
        atomic_write(path, NEW)
    assert path.read_bytes() == OLD


def test_a_temp_name_taken_already_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file is made as `tempfile.mkstemp` makes it (ADR 0111): exclusively, owner
    only, named `.<target>.<8 random>.tmp`; a name another writer holds is passed over."""
    path = tmp_path / "MEMORY.md"
    atomic_write(path, OLD)
    taken = tmp_path / ".MEMORY.md.00000000.tmp"
    taken.write_bytes(b"someone else's")
    draws = iter([b"\0\0\0\0", b"\0\0\0\1"])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    made: list[tuple[str, int]] = []
    real_open = os.open

    def watch(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(name, flags, *args, **kwargs)
        if str(name).endswith(".tmp"):
            made.append((str(name), os.fstat(fd).st_mode & 0o777))
        return fd

    monkeypatch.setattr(os, "open", watch)
    atomic_write(path, NEW)
    assert path.read_bytes() == NEW and taken.read_bytes() == b"someone else's"
    assert made == [(str(tmp_path / ".MEMORY.md.00000001.tmp"), 0o600)]


def test_an_interrupt_mid_write_cleans_up_and_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "MEMORY.md"
    atomic_write(path, OLD)
    monkeypatch.setattr(os, "write", fail_on_call(os.write, 1, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, NEW)
    assert path.read_bytes() == OLD
    assert temp_leftovers(tmp_path) == []


def test_windows_replace_is_retried_while_the_target_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = tmp_path / "src", tmp_path / "dst"
    source.write_bytes(NEW)
    busy = PermissionError(errno.EACCES, "in use")
    flaky = fail_on_call(fail_on_call(os.replace, 1, busy), 1, busy)
    monkeypatch.setattr(os, "replace", flaky)
    atomic._replace_with_retry(source, target, retry_s=1.0, wait_s=0.001)
    assert target.read_bytes() == NEW


def test_windows_replace_gives_up_after_the_retry_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def always_busy(src: Path, dst: Path) -> None:
        raise PermissionError(errno.EACCES, "in use")

    monkeypatch.setattr(os, "replace", always_busy)
    started = time.monotonic()
    with pytest.raises(PermissionError):
        atomic._replace_with_retry(tmp_path / "a", tmp_path / "b", retry_s=0.05, wait_s=0.01)
    assert time.monotonic() - started < 1.0


# --- stale temp files --------------------------------------------------------------------------


def test_stale_temp_files_only_finds_our_old_leftovers(tmp_path: Path) -> None:
    ours = tmp_path / ".MEMORY.md.a1b2c3_4.tmp"
    fresh = tmp_path / ".USER.md.zzzzzzzz.tmp"
    for p in (ours, fresh, tmp_path / ".syncthing.MEMORY.md.tmp", tmp_path / "MEMORY.md"):
        p.write_bytes(b"x")
    (tmp_path / ".dir.abcdefgh.tmp").mkdir()
    old = time.time() - 600
    os.utime(ours, (old, old))
    assert stale_temp_files(tmp_path) == [ours]
    assert stale_temp_files(tmp_path, older_than_s=0) == [ours, fresh]
    assert stale_temp_files(tmp_path / "missing") == []


# --- the kill test -----------------------------------------------------------------------------

WRITER = r"""
import hashlib, importlib.util, sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("atomic", sys.argv[1])
atomic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atomic)
path, run = Path(sys.argv[2]), int(sys.argv[3])

def version(n):
    # ~200 KB, a different length per version, with a header that lets a reader check it.
    body = (f"version {n} ".encode() * 20_000)[: 200_000 + n % 97]
    return f"{len(body)} {hashlib.sha256(body).hexdigest()}\n".encode() + body

versions = [version(2 * run), version(2 * run + 1)]
print("ready", flush=True)
i = 0
while True:
    atomic.atomic_write(path, versions[i % 2])
    i += 1
"""


def complete_version(data: bytes) -> bool:
    header, newline, body = data.partition(b"\n")
    try:
        length, digest = header.decode().split(" ")
    except ValueError:
        return False
    return bool(newline) and int(length) == len(body) and hashlib.sha256(body).hexdigest() == digest


def start_child(script: str, *args: object) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", script, atomic.__file__, *map(str, args)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() in ("ready", "locked")
    return child


def kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait()
    if child.stdout is not None:
        child.stdout.close()


@posix_only
def test_sigkill_at_random_moments_never_tears_the_file(tmp_path: Path) -> None:
    seed = int(os.environ.get("ATOMIC_KILL_SEED", "20260729"))
    rng = random.Random(seed)
    path = tmp_path / "MEMORY.md"
    atomic_write(path, b"0 " + hashlib.sha256(b"").hexdigest().encode() + b"\n")
    kills, torn, leftovers = 200, 0, 0
    for run in range(kills):
        child = start_child(WRITER, path, run)
        time.sleep(rng.uniform(0, 0.03))
        kill(child)
        if not complete_version(path.read_bytes()):
            torn += 1
        leftovers = len(temp_leftovers(tmp_path))
    found = stale_temp_files(tmp_path, older_than_s=0)
    print(f"\nkill test: seed={seed} kills={kills} torn={torn} leftover temps={leftovers}")
    assert torn == 0
    assert found == temp_leftovers(tmp_path)
    assert len(found) == leftovers


# --- FileLock ----------------------------------------------------------------------------------

HOLDER = r"""
import importlib.util, sys, time
from pathlib import Path

spec = importlib.util.spec_from_file_location("atomic", sys.argv[1])
atomic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atomic)
lock = atomic.FileLock(Path(sys.argv[2]))
lock.acquire()
print("locked", flush=True)
time.sleep(60)
"""

CONTENDER = r"""
import importlib.util, os, sys, time
from pathlib import Path

spec = importlib.util.spec_from_file_location("atomic", sys.argv[1])
atomic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atomic)
lock_path, log, go = map(Path, sys.argv[2:5])
rounds = int(sys.argv[5])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
me = os.getpid()
for _ in range(rounds):
    with atomic.FileLock(lock_path, timeout=30):
        with log.open("a") as f:
            f.write(f"start {me}\n")
        time.sleep(0.002)
        with log.open("a") as f:
            f.write(f"end {me}\n")
"""


@posix_only
def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    lock_path = tmp_path / ".pi-hermes-memory.lock"
    child = start_child(HOLDER, lock_path)
    with pytest.raises(LockTimeout) as raised:
        FileLock(lock_path, timeout=0.1).acquire()
    assert raised.value.errno == errno.EWOULDBLOCK
    kill(child)
    started = time.monotonic()
    with FileLock(lock_path, timeout=1.0):
        waited = time.monotonic() - started
    assert waited < 1.0
    assert lock_path.exists()


@posix_only
def test_contending_processes_never_overlap(tmp_path: Path) -> None:
    lock_path, log, go = tmp_path / "x.lock", tmp_path / "log", tmp_path / "go"
    rounds = 40
    children = [start_child(CONTENDER, lock_path, log, go, rounds) for _ in range(2)]
    go.touch()
    for child in children:
        assert child.wait(timeout=60) == 0
        assert child.stdout is not None
        child.stdout.close()
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * 2 * rounds
    for start, end in zip(lines[::2], lines[1::2], strict=True):
        assert start.startswith("start ")
        assert end == "end " + start.removeprefix("start ")
    assert len({line.split()[1] for line in lines}) == 2  # both really ran
    assert lock_path.exists()


def test_a_lock_is_not_reentrant(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "x.lock")
    with lock:
        assert lock.held
        with pytest.raises(RuntimeError, match="already held"):
            lock.acquire()
    assert not lock.held
    with lock:  # reusable after release
        pass


@posix_only
def test_two_lock_objects_exclude_each_other_even_in_one_process(tmp_path: Path) -> None:
    with FileLock(tmp_path / "x.lock"), pytest.raises(LockTimeout):
        FileLock(tmp_path / "x.lock", timeout=0.05).acquire()


@posix_only
def test_the_lock_descriptor_is_close_on_exec(tmp_path: Path) -> None:
    import fcntl

    with FileLock(tmp_path / "x.lock") as lock:
        assert lock._fd is not None
        assert fcntl.fcntl(lock._fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC


# --- MarkdownFiles -----------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Iterator[MarkdownFiles]:
    yield MarkdownFiles(tmp_path / "pi-hermes-memory", tmp_path / "projects-memory")


def test_markdown_files_layout(files: MarkdownFiles, tmp_path: Path) -> None:
    memory, projects = tmp_path / "pi-hermes-memory", tmp_path / "projects-memory"
    assert files.path_for(Target.MEMORY) == memory / "MEMORY.md"
    assert files.path_for(Target.USER) == memory / "USER.md"
    assert files.path_for(Target.FAILURE) == memory / "failures.md"
    assert files.path_for(Target.PROJECT) == projects / "MEMORY.md"
    assert files.lock_path == memory / ".pi-hermes-memory.lock"


def test_markdown_files_read_write(files: MarkdownFiles) -> None:
    assert files.read(Target.PROJECT) is None
    with files.lock(timeout=1.0):
        files.write(Target.PROJECT, NEW)
    assert files.read(Target.PROJECT) == NEW
    assert files.lock_path.exists()


def test_markdown_files_read_errors_are_storage_errors(files: MarkdownFiles) -> None:
    files.path_for(Target.USER).mkdir(parents=True)
    with pytest.raises(StorageFailed) as raised:
        files.read(Target.USER)
    assert raised.value.errno == errno.EISDIR


# --- folders made on demand (ADR 0100: no mkdir per write) ------------------------------------


def test_a_missing_folder_is_made_by_the_write_and_by_the_lock(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "MEMORY.md"
    atomic_write(target, b"one\n")
    assert target.read_bytes() == b"one\n"
    lock = FileLock(tmp_path / "c" / "d" / ".lock", timeout=1.0)
    with lock:
        assert (tmp_path / "c" / "d" / ".lock").exists()
    # a folder removed between two writes is made again
    target.unlink()
    target.parent.rmdir()
    atomic_write(target, b"two\n")
    assert target.read_bytes() == b"two\n"


def test_a_folder_that_cannot_be_made_is_a_storage_failure_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"not a folder")
    target = tmp_path / "file" / "sub" / "MEMORY.md"
    with pytest.raises(StorageFailed, match="Not a directory") as raised:
        atomic_write(target, b"x\n")
    assert raised.value.path == target
    lock = FileLock(tmp_path / "file" / "sub" / ".lock", timeout=1.0)
    with pytest.raises(StorageFailed, match="open the lock file"), lock:
        pass
    assert blocker.read_bytes() == b"not a folder"
