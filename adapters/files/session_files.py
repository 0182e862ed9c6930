"""The Pi sessions tree as a `SessionSource` (ADR 0020), and Claude Code's transcripts beside it.

Pi writes one JSONL file per session under `<agentRoot>/sessions/`: in one folder per working
directory (`--home-me-src-app--/<time>_<uuid>.jsonl`), and sometimes directly in the root. Those
two levels are listed; deeper folders (e.g. `subagent-artifacts/`) and symbolic links are not.
Paths are absolute and physical (the root is resolved once), so a file has one spelling.

Claude Code writes `~/.claude/projects/<cwd slug>/<session uuid>.jsonl` (issue 30): one level of
folders, no files at the root. `SessionSources` lists several trees as one source (reading and
`stat` are by absolute path, the same for every tree).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from pi_hermes_memory.domain.history.transcripts import SessionFile

SUFFIX = ".jsonl"


def _entry(path: str, st: os.stat_result) -> SessionFile:
    return SessionFile(
        path=path, size=st.st_size, mtime_ns=st.st_mtime_ns, device=st.st_dev, inode=st.st_ino
    )


class PiSessionFiles:
    """`<agentRoot>/sessions/*.jsonl` and `<agentRoot>/sessions/*/*.jsonl`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self) -> Iterator[SessionFile]:
        root = os.path.realpath(self.root)
        yield from self._scan(root, depth=0)

    #: the folder depths (0: the root) whose `*.jsonl` files are sessions
    FILE_DEPTHS: frozenset[int] = frozenset({0, 1})

    def _scan(self, folder: str, depth: int) -> Iterator[SessionFile]:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return
        for entry in sorted(entries, key=lambda e: e.name):
            try:
                if (
                    depth in self.FILE_DEPTHS
                    and entry.name.endswith(SUFFIX)
                    and entry.is_file(follow_symlinks=False)
                ):
                    yield _entry(entry.path, entry.stat(follow_symlinks=False))
                elif depth == 0 and entry.is_dir(follow_symlinks=False):
                    yield from self._scan(entry.path, depth + 1)
            except FileNotFoundError:  # removed while listing
                continue

    def stat(self, path: str) -> SessionFile | None:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        return _entry(real, st) if stat.S_ISREG(st.st_mode) else None

    def read(self, path: str, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)


class ClaudeCodeSessionFiles(PiSessionFiles):
    """`<claude dir>/projects/*/*.jsonl`: Claude Code's transcripts (their lines are read by
    the same parser: `parse_line` knows both formats)."""

    FILE_DEPTHS = frozenset({1})


class SessionSources:
    """Several session trees listed as one `SessionSource` (Pi's first)."""

    def __init__(self, *sources: PiSessionFiles) -> None:
        self.sources = sources
        self.root = sources[0].root

    def files(self) -> Iterator[SessionFile]:
        seen: set[str] = set()
        for source in self.sources:
            for file in source.files():
                if file.path not in seen:  # one tree inside another: listed once
                    seen.add(file.path)
                    yield file

    def stat(self, path: str) -> SessionFile | None:
        return self.sources[0].stat(path)

    def read(self, path: str, offset: int, length: int) -> bytes:
        return self.sources[0].read(path, offset, length)
