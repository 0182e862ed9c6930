"""Crash-safe file replacement and a cross-process lock (docs/reliability.md, section 2).

`atomic_write` guarantees that after a crash at any moment a reader sees the whole old file or
the whole new one, never a mix, and that a reported success is durable. What it cannot avoid is a
leftover `.NAME.xxxxxxxx.tmp` when the process dies mid-write; `stale_temp_files` finds those.
"""

from __future__ import annotations

import contextlib
import errno as errno_codes
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from pi_hermes_memory.errors import LockTimeout, StorageFailed

__all__ = [
    "FileLock",
    "LockTimeout",
    "atomic_write",
    "discard_temp",
    "replace_temp",
    "stale_temp_files",
    "try_file_lock",
    "write_all",
    "write_temp",
]

# pip's numbers: antivirus and indexers hold files open on Windows for well under a second.
_REPLACE_RETRY_S = 1.0
_REPLACE_RETRY_WAIT_S = 0.1
# Errors that mean "this filesystem cannot sync that way", not "the data may be lost".
_SYNC_UNSUPPORTED = frozenset({errno_codes.EINVAL, errno_codes.ENOTSUP, errno_codes.ENOTTY})
# mkstemp names are prefix + 8 characters from [a-z0-9_] + suffix. Matching the 8 exactly keeps
# other tools' temp files (e.g. Syncthing's `.syncthing.MEMORY.md.tmp`) out of a cleanup.
_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")
#: bytes of the target's name a temp name keeps: 255 minus ".", ".", 8 random, ".tmp"
_TEMP_NAME_ROOM = 255 - 14


# --- atomic replacement ------------------------------------------------------------------------


def atomic_write(
    path: Path,
    data: bytes,
    *,
    before_replace: Callable[[], None] | None = None,
    real: Path | None = None,
    sync_directory: bool = True,
) -> None:
    """Replace the content of `path` with `data`, all or nothing, durably.

    Steps: temp file in the same directory (so the rename stays on one filesystem), write, fsync,
    rename over the target, fsync the directory. A failure before the rename leaves the old file
    untouched and removes the temp file. An fsync error is never retried: Linux reports a
    writeback error once and then forgets it, so a retry could "succeed" over lost data.

    A symlink at `path` is followed, so a memory file linked into e.g. a dotfiles repository
    stays linked. Raises StorageFailed on any OS failure. `before_replace` runs once the temp
    file is durable, just before the rename; if it raises, nothing is replaced.

    `real`: `path` with its symlinks already resolved by the caller (who checked it), so it is
    not resolved again. `sync_directory=False` leaves the rename's durability to a later
    directory fsync of the same folder (the caller's next `atomic_write` there): the new
    content is durable (its temp file was synced) but the rename may be undone by a power
    loss until then (ADR 0085).
    """
    target = real if real is not None else Path(os.path.realpath(path))
    replace_temp(
        write_temp(target, data),
        target,
        before_replace=before_replace,
        sync_directory=sync_directory,
    )


def write_temp(target: Path, data: bytes | Callable[[int], None]) -> Path:
    """`atomic_write`'s first half: a synced temp file next to `target` (its symlinks already
    resolved) holding `data`, or what `data(fd)` wrote to the descriptor (a copy streamed from
    another file, ADR 0088). Anything raised removes the temp file and propagates (an OSError
    as StorageFailed). Hand the path to `replace_temp`, or `discard_temp` it."""
    return _write_temp(target, data)


def replace_temp(
    tmp: Path,
    target: Path,
    *,
    before_replace: Callable[[], None] | None = None,
    sync_directory: bool = True,
) -> None:
    """`atomic_write`'s second half: rename `tmp` (from `write_temp`) over `target`, after
    `before_replace` (if it raises, `tmp` is removed and nothing replaced)."""
    try:
        if before_replace is not None:
            before_replace()
        _replace_file(tmp, target)
    except BaseException:
        _discard(tmp)
        raise
    # After the rename the new content is visible but not yet durable; an error here still means
    # "not saved", although readers may already see the new content.
    if sync_directory:
        _fsync_directory(target.parent)


def discard_temp(tmp: Path) -> None:
    """Remove a temp file `write_temp` made that will not be renamed (best effort)."""
    _discard(tmp)


def _make_parent(target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageFailed.from_os_error("create the directory of", target, exc) from exc


#: what `tempfile.mkstemp` opens a temp file with: created here, never an existing file or a
#: symlink, readable and writable by the owner only (0o600 below)
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
#: names tried before giving up (`tempfile` tries `os.TMP_MAX`, 238,328 on Linux; 8 random hex
#: characters collide once in 4 billion, so a hundred clashes in a row means something else)
_TEMP_ATTEMPTS = 100


def _mkstemp(target: Path) -> tuple[int, str]:
    """A new temp file beside `target`, as `tempfile.mkstemp(dir=…, prefix=…, suffix=".tmp")`
    makes it (same flags and mode, 8 random characters between prefix and suffix), without
    importing `tempfile` and `random` (about 1.2 ms of a CLI add's start, ADR 0111);
    FileNotFoundError when its folder is missing, any other failure as StorageFailed."""
    folder = os.path.abspath(target.parent)
    prefix = _temp_prefix(target)
    for _ in range(_TEMP_ATTEMPTS):
        name = os.path.join(folder, f"{prefix}{os.urandom(4).hex()}.tmp")
        try:
            return os.open(name, _TEMP_FLAGS, 0o600), name
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise StorageFailed.from_os_error("create a temporary file for", target, exc) from exc
    taken = FileExistsError(errno_codes.EEXIST, "no unused temporary file name")
    raise StorageFailed.from_os_error("create a temporary file for", target, taken)


def _write_temp(target: Path, data: bytes | Callable[[int], None]) -> Path:
    """A synced temp file next to `target` holding `data`; removed again if anything fails."""
    try:
        fd, name = _mkstemp(target)
    except FileNotFoundError:  # the folder is made when missing, not checked per write
        _make_parent(target)  # StorageFailed naming the folder when it cannot be made
        try:
            fd, name = _mkstemp(target)
        except FileNotFoundError as exc:
            raise StorageFailed.from_os_error("create a temporary file for", target, exc) from exc
    tmp = Path(name)
    try:
        try:
            _copy_mode(target, fd)
            if isinstance(data, bytes):
                _write_all(fd, data)
            else:
                data(fd)
            _fsync_file(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        _discard(tmp)
        if isinstance(exc, OSError):
            raise StorageFailed.from_os_error("write", target, exc) from exc
        raise
    return tmp


def _temp_prefix(target: Path) -> str:
    """`.NAME.`, with NAME clipped so that the temp name fits in one 255-byte component: a
    name the file system holds must not fail for want of room for its temp name (a skill's
    255-byte support file did, and its folder was never rendered again, issue 26 §6)."""
    raw = os.fsencode(target.name)
    if len(raw) > _TEMP_NAME_ROOM:
        # a cut inside a UTF-8 sequence decodes to surrogate escapes, which encode back to the
        # same bytes: the name on disk is still a byte prefix of the target's
        return "." + os.fsdecode(raw[:_TEMP_NAME_ROOM]) + "."
    return f".{target.name}."


def _copy_mode(target: Path, fd: int) -> None:
    """Keep an existing file's permissions; mkstemp's 0600 is the right default for new ones."""
    if not hasattr(os, "fchmod"):
        return
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return
    os.fchmod(fd, mode)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to the raw descriptor `fd`."""
    _write_all(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write less than asked (signals, quotas); there is no userspace buffer to flush
    # because we write to the raw descriptor.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_file(fd: int) -> None:
    if sys.platform == "darwin":
        import fcntl

        # macOS fsync only reaches the drive's cache; F_FULLFSYNC asks the drive to flush too.
        try:
            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
            return
        except OSError as exc:
            if exc.errno not in _SYNC_UNSUPPORTED:
                raise
    os.fsync(fd)


def _replace_file(tmp: Path, target: Path) -> None:
    try:
        if sys.platform == "win32":
            _replace_with_retry(tmp, target)
        else:
            os.replace(tmp, target)
    except OSError as exc:
        raise StorageFailed.from_os_error("replace", target, exc) from exc


def _replace_with_retry(
    tmp: Path,
    target: Path,
    *,
    retry_s: float = _REPLACE_RETRY_S,
    wait_s: float = _REPLACE_RETRY_WAIT_S,
) -> None:
    """os.replace, retried on PermissionError: on Windows a reader holding the target open
    blocks the rename for a moment."""
    deadline = time.monotonic() + retry_s
    while True:
        try:
            os.replace(tmp, target)
            return
        except PermissionError:
            if time.monotonic() + wait_s > deadline:
                raise
            time.sleep(wait_s)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable. Windows has no directory fsync (and no way to open a directory)."""
    if sys.platform == "win32":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in _SYNC_UNSUPPORTED:
            return
        raise StorageFailed.from_os_error("sync the directory", directory, exc) from exc


def _discard(tmp: Path) -> None:
    # Best effort: the original error is the one worth reporting; a leftover is doctor's job.
    with contextlib.suppress(OSError):
        tmp.unlink()


def stale_temp_files(directory: Path, older_than_s: float = 300) -> list[Path]:
    """Temp files `atomic_write` left behind in `directory` (a writer died mid-write).

    Only files untouched for `older_than_s` seconds: a younger one may belong to a write that is
    still running in another process. Sorted; empty when the directory does not exist.
    """
    cutoff = time.time() - older_than_s
    try:
        candidates = list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(p for p in candidates if _TEMP_NAME.fullmatch(p.name) and _older(p, cutoff))


def _older(path: Path, cutoff: float) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False  # vanished meanwhile: its writer finished or someone cleaned it up
    return stat.S_ISREG(info.st_mode) and info.st_mtime <= cutoff


# --- cross-process lock ------------------------------------------------------------------------


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        # Lock byte 0 (locking past the end of file is allowed); position first because
        # msvcrt.locking locks from the current offset.
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            if exc.errno in (errno_codes.EACCES, errno_codes.EDEADLOCK):
                return False
            raise
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    _OPEN_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOINHERIT", 0)
    _block_lock = None  # no blocking wait that a deadline can abandon: poll

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _block_lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    # O_CLOEXEC: a program we exec must not inherit (and so prolong) the lock. O_NOFOLLOW: a
    # symlink planted at the lock path must not make us create or lock some other file.
    _OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


class _Waiter:
    """A blocking flock in a helper thread, so that the wait has a deadline.

    Blocked flock waiters are woken by the kernel the moment the holder releases, in the order
    they queued, where pollers sleep and lose the race to whoever arrives next (ADR 0024: with
    16 writers, one polling add waited past the 30 s timeout). A thread blocked in flock cannot
    be cancelled: when the caller gives up, the thread keeps waiting and hands the lock back
    (closes the descriptor) the moment it gets it.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.done = threading.Event()
        self.error: OSError | None = None
        self._mutex = threading.Lock()
        self._abandoned = False

    def run(self) -> None:
        try:
            if _block_lock is not None:
                _block_lock(self.fd)
        except OSError as exc:
            self.error = exc
        with self._mutex:
            if self._abandoned:
                os.close(self.fd)  # releases the lock we got too late
                return
            self.done.set()

    def abandon(self) -> bool:
        """Give up waiting; False when the lock (or an error) arrived first."""
        with self._mutex:
            if self.done.is_set():
                return False
            self._abandoned = True
            return True


class FileLock:
    """An exclusive lock between processes, held on a separate lock file.

    The lock file is never deleted: a process that deleted it while another waited on the old
    inode would let two holders in at once. Kernel locks (flock on POSIX, msvcrt.locking on
    Windows) are released by the OS when the holder dies, even by SIGKILL, so there are no stale
    locks to break. Waiting blocks in the kernel (POSIX; a helper thread keeps the deadline) so
    waiters are served about in arrival order; on Windows it polls. After `timeout` seconds it
    raises LockTimeout.

    Not re-entrant: acquiring a FileLock that is already held raises RuntimeError, and two
    FileLock objects on the same path in one process exclude each other (so nesting them would
    wait until the timeout). A child created by fork() shares the held lock; exec() drops it.
    flock is unreliable on some network filesystems; keep the memory directory local.
    """

    def __init__(self, path: Path, *, timeout: float = 30.0, poll_s: float = 0.05) -> None:
        self.path = path
        self.timeout = timeout
        self.poll_s = poll_s
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        fd, got = self._open_and_try()
        if not got:
            if _block_lock is not None:
                self._wait_blocking(fd)  # owns fd: closes it on failure
            else:
                try:
                    self._wait_for(fd)
                except BaseException:
                    os.close(fd)
                    raise
        self._fd = fd

    def try_acquire(self) -> bool:
        """Take the lock if it is free now, without waiting; False when another holds it."""
        fd, got = self._open_and_try()
        if not got:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _open_and_try(self) -> tuple[int, bool]:
        """Open the lock file and try the lock once without waiting: (descriptor, got it).
        The descriptor is closed if the attempt raises."""
        if self._fd is not None:
            raise RuntimeError(f"the lock {self.path} is already held by this FileLock")
        fd = self._open()
        try:
            return fd, self._try(fd)
        except BaseException:
            os.close(fd)
            raise

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock(fd)
        finally:
            # Closing alone would release it too; unlocking first is explicit for Windows.
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _open(self) -> int:
        try:
            try:  # the folder exists but at a store's first use: no mkdir and stat per lock
                return os.open(self.path, _OPEN_FLAGS, 0o600)
            except FileNotFoundError:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, _OPEN_FLAGS, 0o600)
        except OSError as exc:
            raise StorageFailed.from_os_error("open the lock file", self.path, exc) from exc

    def _try(self, fd: int) -> bool:
        try:
            return _try_lock(fd)
        except OSError as exc:
            raise StorageFailed.from_os_error("lock", self.path, exc) from exc

    def _timeout(self) -> LockTimeout:
        return LockTimeout(
            f"could not lock {self.path} within {self.timeout:g} s: another process is holding it",
            path=self.path,
            errno=errno_codes.EWOULDBLOCK,
        )

    def _wait_blocking(self, fd: int) -> None:
        waiter = _Waiter(fd)
        thread = threading.Thread(target=waiter.run, name="pi-hermes-memory-lock", daemon=True)
        thread.start()
        try:
            arrived = waiter.done.wait(max(self.timeout, 0.0))
        except BaseException:  # KeyboardInterrupt while waiting
            if not waiter.abandon():
                os.close(fd)  # the lock arrived meanwhile: hand it back
            raise
        if not arrived and waiter.abandon():
            raise self._timeout()
        if waiter.error is not None:
            os.close(fd)
            raise StorageFailed.from_os_error("lock", self.path, waiter.error) from waiter.error

    def _wait_for(self, fd: int) -> None:
        deadline = time.monotonic() + self.timeout
        # Start polling fast (locks are usually held for milliseconds), back off to poll_s.
        pause = min(0.001, self.poll_s)
        while True:
            if self._try(fd):
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout()
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, self.poll_s)


@contextlib.contextmanager
def try_file_lock(path: Path) -> Iterator[bool]:
    """The lock file at `path`, taken without waiting: yields whether it was taken (released
    on exit). For work that another process may be doing already (a consolidation)."""
    lock = FileLock(path, timeout=0)
    if not lock.try_acquire():
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
