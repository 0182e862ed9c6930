"""The knowledge folders on disk: the walk and the reads (`KnowledgeSource`, ADR 0048).

The walk visits each root (its real path) depth first, in name order, and skips, counting
each by reason: hidden names (a leading dot: `.git`, `.venv`, `.env`…), paths the
`.gitignore` files on the way ignore (the subset in `pi_hermes_memory.domain.knowledge.gitignore`),
names that are no document (`domain.knowledge.file_kind`), special files, symlinks whose real
path is outside every root (`symlink_outside`), symlinks to a file or folder inside a root and
directories already visited (by device and inode: a symlink loop or a second way in,
`already_seen`) and the folders holding this library's own state (`state_dir`: the index is
never inside what it indexes). Every file is reported once, by its real path and its path
below its root. No symlink is followed: one leading inside the roots is a second name for
something the walk reaches under its own name (where the hidden and `.gitignore` rules see
its real path, so a link cannot expose an ignored or hidden folder), one leading out is never
followed.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
from pi_hermes_memory.domain.knowledge.chunks import file_kind
from pi_hermes_memory.domain.knowledge.gitignore import IgnoreRule, is_ignored, parse_gitignore
from pi_hermes_memory.ports.knowledge import SourceFile

#: bytes of a `.gitignore` that are read at all
_MAX_GITIGNORE = 256 * 1024


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _read_regular(path: str, limit: int) -> bytes:
    """At most `limit` bytes of the regular file at `path`. Opened without blocking, so a FIFO
    (say a `.gitignore` made with mkfifo, or a document swapped for one after the walk) raises
    OSError instead of hanging the run, as would waiting for a writer that never comes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            return handle.read(limit)
    finally:
        if fd >= 0:
            os.close(fd)


class KnowledgeFiles:
    """`KnowledgeSource` over the real file system. `exclude`: folders never walked (the
    store's own state)."""

    def __init__(self, *, exclude: Sequence[str | os.PathLike[str]] = ()) -> None:
        self._exclude = tuple(os.path.realpath(p) for p in exclude)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def real_path(self, path: str) -> str:
        return os.path.realpath(path)

    def scan(self, roots: Sequence[str], skipped: Counter[str]) -> Iterator[SourceFile]:
        real_roots: list[str] = []
        for root in roots:
            real = os.path.realpath(root)
            if not os.path.isdir(real):
                skipped["missing_root"] += 1
            elif real not in real_roots:
                real_roots.append(real)
        visited: set[tuple[int, int]] = set()
        seen: set[str] = set()
        for root in real_roots:
            yield from self._walk(root, real_roots, visited, seen, skipped)

    def _walk(
        self,
        root: str,
        roots: Sequence[str],
        visited: set[tuple[int, int]],
        seen: set[str],
        skipped: Counter[str],
    ) -> Iterator[SourceFile]:
        stack: list[tuple[str, str, tuple[IgnoreRule, ...]]] = [(root, "", ())]
        while stack:
            directory, rel, rules = stack.pop()
            try:
                info = os.stat(directory)
            except OSError:
                skipped["unreadable"] += 1
                continue
            key = (info.st_dev, info.st_ino)
            if key in visited:
                skipped["already_seen"] += 1
                continue
            visited.add(key)
            rules = (*rules, *self._gitignore(directory, rel))
            try:
                with os.scandir(directory) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:
                skipped["unreadable"] += 1
                continue
            below: list[tuple[str, str, tuple[IgnoreRule, ...]]] = []
            for entry in entries:
                found = self._entry(entry, rel, rules, roots, seen, skipped, root)
                if isinstance(found, SourceFile):
                    yield found
                elif found is not None:
                    below.append((found[0], found[1], rules))
            stack.extend(reversed(below))

    def _entry(
        self,
        entry: os.DirEntry[str],
        rel: str,
        rules: tuple[IgnoreRule, ...],
        roots: Sequence[str],
        seen: set[str],
        skipped: Counter[str],
        root: str,
    ) -> SourceFile | tuple[str, str] | None:
        """A document, a directory to walk (real path, relative path), or None (skipped)."""
        name = entry.name
        if name.startswith("."):
            skipped["hidden"] += 1
            return None
        child = f"{rel}/{name}" if rel else name
        try:
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                if not any(_inside(target, r) for r in roots):
                    skipped["symlink_outside"] += 1
                    return None
                os.stat(target)
                # a second name for something inside the folders: the walk reaches it under
                # its own name, where the hidden and .gitignore rules apply to its real path
                skipped["already_seen"] += 1
                return None
            target = entry.path
            info = os.stat(target)
        except OSError:
            skipped["unreadable"] += 1
            return None
        is_dir = stat.S_ISDIR(info.st_mode)
        if is_ignored(rules, child, is_dir=is_dir):
            skipped["gitignored"] += 1
            return None
        if is_dir:
            if any(_inside(target, x) for x in self._exclude):
                skipped["state_dir"] += 1
                return None
            return target, child
        if not stat.S_ISREG(info.st_mode):
            skipped["special"] += 1
            return None
        kind = file_kind(name)
        if kind is None:
            skipped["unsupported"] += 1
            return None
        if target in seen:
            skipped["already_seen"] += 1
            return None
        seen.add(target)
        return SourceFile(
            path=target,
            root=root,
            rel=child,
            size=info.st_size,
            mtime_ns=info.st_mtime_ns,
            kind=kind,
        )

    @staticmethod
    def _gitignore(directory: str, rel: str) -> tuple[IgnoreRule, ...]:
        path = os.path.join(directory, ".gitignore")
        try:
            data = _read_regular(path, _MAX_GITIGNORE)
        except OSError:
            return ()
        return parse_gitignore(data.decode("utf-8", "replace"), rel)

    @staticmethod
    def _read_bytes(path: str, limit: int) -> bytes:
        return _read_regular(path, limit)

    def read(self, file: SourceFile, max_bytes: int) -> tuple[SourceFile | None, bytes] | None:
        try:
            before = os.stat(file.path)
            data = self._read_bytes(file.path, max_bytes + 1)
            after = os.stat(file.path)
        except OSError:
            return None
        stamp = (after.st_size, after.st_mtime_ns)
        if (before.st_size, before.st_mtime_ns) != stamp or (
            len(data) <= max_bytes and len(data) != after.st_size
        ):
            return None, data
        return attrs.evolve(file, size=after.st_size, mtime_ns=after.st_mtime_ns), data


def knowledge_db_path(memory_dir: Path) -> Path:
    return memory_dir / "knowledge.db"


__all__ = ["KnowledgeFiles", "knowledge_db_path"]
