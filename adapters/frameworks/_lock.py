"""One writer at a time per front-end scope, across threads and processes (ADR 0103).

A front end checks something against the store (a path is new, a key's entry) and then
writes; the store serialises writes, not the check before them. `ScopeLock` holds an
exclusive `flock` on `<memory_dir>/.<name>.lock` around both, so a second process's check
runs after the first one's write. The kernel drops the lock when its holder dies (SIGKILL
included): a crashed writer never blocks the next one. A session opened over a custom
storage (no `memory_dir`) serialises its own threads only.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory


class ScopeLock:
    def __init__(self, memory: Memory, front_end: str, scope: str) -> None:
        self._threads = threading.RLock()
        config = memory.config
        digest = hashlib.sha256(scope.encode()).hexdigest()[:16]
        self.path: Path | None = (
            None if config is None else Path(config.memory_dir) / f".{front_end}-{digest}.lock"
        )
        self._depth = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._threads:
            if self.path is None or self._depth:  # re-entered by this thread: already held
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._depth = 1
                try:
                    yield
                finally:
                    self._depth = 0
            finally:
                os.close(fd)  # closing the only descriptor releases the flock
