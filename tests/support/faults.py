"""Real file-system faults for tests: a full disk, a read-only folder or file (ADR 0023).

Root ignores permission bits, so where the tests run as root a read-only folder is a read-only
bind mount and a full disk a small tmpfs; as another user `chmod` makes a folder read-only and
the tmpfs tests are skipped (the RLIMIT_FSIZE test still gives a real EFBIG from the kernel).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _run(*argv: str) -> bool:
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def _can_mount(probe: Path) -> bool:
    if not _IS_ROOT or not sys.platform.startswith("linux"):
        return False
    probe.mkdir(parents=True, exist_ok=True)
    if not _run("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)):
        return False
    _unmount(probe)
    return True


def _unmount(path: Path) -> None:
    for _ in range(50):
        if _run("umount", str(path)):
            return
        import time

        time.sleep(0.1)
    _run("umount", "-l", str(path))


@contextlib.contextmanager
def small_disk(path: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` (created empty); skips the test where impossible."""
    if not _can_mount(path.parent / f".{path.name}-probe"):
        pytest.skip("needs root on Linux to mount a small tmpfs")
    path.mkdir(parents=True, exist_ok=True)
    assert _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path))
    try:
        yield path
    finally:
        _unmount(path)


def fill(directory: Path) -> Path:
    """Write a filler file until the file system is full; returns it (delete it to free)."""
    filler = directory / "filler.bin"
    block = b"\0" * 4096
    with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(block)
    return filler


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make the folder or file at `path` read-only until the block ends: a read-only bind
    mount as root, `chmod a-w` otherwise (a file: also as root, mode bits only)."""
    if _IS_ROOT and sys.platform.startswith("linux"):
        if not _run("mount", "--bind", str(path), str(path)):
            pytest.skip("needs a bind mount (root on Linux) to make a folder read-only as root")
        try:
            assert _run("mount", "-o", "remount,ro,bind", str(path))
            yield
        finally:
            _unmount(path)
        return
    mode = path.stat().st_mode
    path.chmod(mode & ~0o222)
    try:
        yield
    finally:
        path.chmod(mode)
