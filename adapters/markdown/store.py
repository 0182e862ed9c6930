"""Where the Markdown memory files live, and raw byte access to them.

Bytes, not text: decoding and parsing belong to `format.py`, and keeping the raw bytes lets a
caller back up a file it cannot parse exactly as it was.
"""

from __future__ import annotations

from pathlib import Path

import attrs
from pi_hermes_memory.adapters.markdown.atomic import (
    FileLock,
    StorageError,
    atomic_write,
)
from pi_hermes_memory.domain.model import Target

__all__ = ["LOCK_FILE_NAME", "MarkdownFiles"]

LOCK_FILE_NAME = ".pi-hermes-memory.lock"
_GLOBAL_FILES = {
    Target.MEMORY: "MEMORY.md",
    Target.USER: "USER.md",
    Target.FAILURE: "failures.md",
}


@attrs.frozen
class MarkdownFiles:
    """The memory files of one agent root.

    All project entries share one flat `projects_dir/MEMORY.md`; each entry records its project
    in its metadata (the seed's layout).
    """

    memory_dir: Path
    projects_dir: Path

    def path_for(self, target: Target) -> Path:
        if target is Target.PROJECT:
            return self.projects_dir / "MEMORY.md"
        return self.memory_dir / _GLOBAL_FILES[target]

    def stamp(self, target: Target) -> object:
        """(mtime_ns, size, inode, ctime_ns), or None when the file does not exist."""
        try:
            st = self.path_for(target).stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError.from_os_error("stat", self.path_for(target), exc) from exc
        return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)

    def distinct_roots(self) -> bool:
        """memoryDir and projectsMemoryDir resolve (symlinks included) to different places,
        neither inside the other. Checked again before every move: a move across one physical
        root would write and delete the same file."""
        from pi_hermes_memory.adapters.config_file import physical_path

        a, b = physical_path(self.memory_dir), physical_path(self.projects_dir)
        return a != b and a not in b.parents and b not in a.parents

    def describe(self, target: Target) -> str:
        return str(self.path_for(target))

    def read(self, target: Target) -> bytes | None:
        """The file's bytes, or None when it does not exist yet. Raises StorageError."""
        path = self.path_for(target)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError.from_os_error("read", path, exc) from exc

    def write(self, target: Target, data: bytes) -> None:
        """Replace the file atomically and durably. Raises StorageError: then nothing was saved.

        Take `lock()` around the read-modify-write that produced `data`.
        """
        atomic_write(self.path_for(target), data)

    @property
    def lock_path(self) -> Path:
        return self.memory_dir / LOCK_FILE_NAME

    def lock(self, timeout: float = 30.0) -> FileLock:
        """The store-wide lock (one for all files, so multi-file changes need no lock ordering)."""
        return FileLock(self.lock_path, timeout=timeout)
