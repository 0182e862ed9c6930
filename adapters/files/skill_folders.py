"""Skill folders on disk: `<root>/<slug>/SKILL.md` plus support files (ADR 0030).

A skill's replica is its folder packed into one byte string (`domain/skills/bundle.py`): SKILL.md
and every regular file under `references/`, `templates/`, `scripts/` and `assets/`. Anything else in
the folder is not ours and is never read, written or deleted. A symlink is never followed: a
symlinked SKILL.md makes the skill unreadable (left as it is), a symlinked support file is not part
of the skill. A folder without SKILL.md and support files packs to `b""` (no skill).
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
import time
from pathlib import Path

from pi_hermes_memory.adapters.markdown.atomic import atomic_write
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.skills.bundle import pack, unpack
from pi_hermes_memory.errors import (
    MarkdownChanged,
    MarkdownTooLarge,
    MarkdownUnreadable,
    StorageFailed,
)
from pi_hermes_memory.ports.store import UNCHECKED

__all__ = ["SKILL_FILE", "SUPPORT_DIRS", "SkillFolders"]

SKILL_FILE = "SKILL.md"
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
#: a skill folder above this is not read: it is not a skill this library wrote
MAX_FOLDER_BYTES = 8 * 2**20
_STABLE_READ_TRIES = 5


class SkillFolders:
    """The skill folders of one agent root, addressed by stream (`skill:<skill id>`):
    `skill:global:<slug>` under `global_root`, `skill:project:<project>:<slug>` under
    `<project_root>/<project>/skills`."""

    def __init__(self, *, global_root: Path, project_root: Path) -> None:
        self.global_root = global_root
        self.project_root = project_root
        self._folders: dict[str, Path] = {}

    # -- addressing ------------------------------------------------------------------------

    def folder(self, stream: str) -> Path:
        known = self._folders.get(stream)
        if known is not None:
            return known
        kind, _, rest = stream.removeprefix("skill:").partition(":")
        project, _, slug = rest.rpartition(":")
        if kind == "global" and rest:
            path = self.global_root / rest
        elif kind == "project" and project and slug:
            path = self.project_root / project / "skills" / slug
        else:
            raise InvariantViolation(f"not a skill stream: {stream!r}")
        self._folders[stream] = path
        return path

    def slugs(self, project: str | None) -> list[str]:
        """The skill ids whose folder holds a SKILL.md: global ones, and `project`'s."""
        found = [f"global:{slug}" for slug in _skill_dirs(self.global_root)]
        if project is not None:
            root = self.project_root / project / "skills"
            found.extend(f"project:{project}:{slug}" for slug in _skill_dirs(root))
        return found

    def link_problem(self, stream: str, rel: str) -> str | None:
        """Why a support file at `rel` could not be written without following a symlink (a
        link anywhere between the skill folder and the file, or the folder itself), or None.
        Checked before a write is decided, so a refused path is never journaled."""
        folder = self.folder(stream)
        link = folder if folder.is_symlink() else _first_link(folder, folder / rel)
        if link is None:
            return None
        return f"{link} is a symlink; support files are never written through links"

    # -- Replicas ----------------------------------------------------------------------------

    def describe(self, stream: str) -> str:
        return str(self.folder(stream) / SKILL_FILE)

    def replica(self, stream: str) -> str:
        from pi_hermes_memory.adapters.files.config_file import physical_path

        return str(physical_path(self.folder(stream)))

    def stamp(self, stream: str) -> object:
        """(path, mtime_ns, size, inode) of every file of the skill, or None without any."""
        folder = self.folder(stream)
        marks = []
        for rel, path in _members(folder):
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StorageFailed.from_os_error("stat", path, exc) from exc
            marks.append((rel, st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(marks) or None

    def read(self, stream: str) -> bytes | None:
        """The packed folder (`b""` when it holds no skill); stable against a save in place:
        taken only when the stamps before and after agree."""
        data = b""
        for attempt in range(_STABLE_READ_TRIES):
            before = self.stamp(stream)
            data = self._read_once(stream)
            if self.stamp(stream) == before:
                return data
            time.sleep(0.01 * (attempt + 1))
        return data

    def _read_once(self, stream: str) -> bytes:
        folder = self.folder(stream)
        files: dict[str, bytes] = {}
        total = 0
        for rel, path in _members(folder):
            try:
                st = path.lstat()
                if stat_module.S_ISLNK(st.st_mode):
                    if rel == SKILL_FILE:
                        raise MarkdownUnreadable(
                            f"{path} is a symlink; skills are never read through links. It was "
                            "left as it is; replace it by a regular file."
                        )
                    continue
                if not stat_module.S_ISREG(st.st_mode):
                    continue
                total += st.st_size
                if total > MAX_FOLDER_BYTES:
                    raise MarkdownTooLarge(
                        f"{folder} holds more than {MAX_FOLDER_BYTES // 2**20} MiB; it was left "
                        "untouched and not read as a skill."
                    )
                files[rel] = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StorageFailed.from_os_error("read", path, exc) from exc
        return pack(files)

    def write(self, stream: str, data: bytes, *, expected: object = UNCHECKED) -> None:
        """Make the folder hold exactly the packed files: write each atomically (SKILL.md
        last), delete our files it no longer has, then the folders left empty. With
        `expected`, a folder changed since it was read raises `MarkdownChanged` before
        anything is replaced."""
        folder = self.folder(stream)
        files = unpack(data)
        if expected is not UNCHECKED and self.stamp(stream) != expected:
            raise MarkdownChanged(f"{folder} changed while it was being rendered")
        for rel in sorted(files, key=lambda r: r == SKILL_FILE):
            path = folder / rel
            _refuse_links(folder, path)
            try:
                current = path.read_bytes()
            except OSError:
                current = None
            if current != files[rel]:
                self._put(path, files[rel])
        for rel, path in _members(folder):
            if rel not in files and not path.is_symlink():  # a link is not ours: kept
                self._remove(path)
        _prune(folder)

    # one file at a time: each step is atomic, a crash between two leaves a mix of the old
    # and the new folder (the skill kind tells that from a hand edit, `skill_documents.py`)

    def _put(self, path: Path, data: bytes) -> None:
        atomic_write(path, data)

    def _remove(self, path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageFailed.from_os_error("delete", path, exc) from exc


def _skill_dirs(root: Path) -> list[str]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    return [
        e.name
        for e in entries
        if e.is_dir(follow_symlinks=False)
        and not e.name.startswith(".")
        and (Path(e.path) / SKILL_FILE).is_file()
    ]


def _members(folder: Path) -> list[tuple[str, Path]]:
    """SKILL.md and the files under the support folders (relative POSIX path, path); links
    are listed (the caller decides), never followed. One directory scan of the folder (most
    skills have no support folder): discovery reads every skill folder."""
    found: list[tuple[str, Path]] = []
    tops: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name == SKILL_FILE:
                    found.append((SKILL_FILE, folder / SKILL_FILE))
                elif entry.name in SUPPORT_DIRS and entry.is_dir(follow_symlinks=False):
                    tops.append(entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StorageFailed.from_os_error("list", folder, exc) from exc
    if not found and os.path.lexists(folder / SKILL_FILE):  # a case-insensitive file system
        found.append((SKILL_FILE, folder / SKILL_FILE))
    for name in sorted(tops, key=SUPPORT_DIRS.index):
        for here, dirs, names in os.walk(folder / name, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not (Path(here) / d).is_symlink())
            for file_name in sorted(names):
                path = Path(here) / file_name
                found.append((path.relative_to(folder).as_posix(), path))
    return found


def _first_link(folder: Path, path: Path) -> Path | None:
    """The first symlink from `path` up to (not including) the skill folder, or None."""
    here = path
    while here != folder and folder in here.parents:
        if here.is_symlink():
            return here
        here = here.parent
    return None


def _refuse_links(folder: Path, path: Path) -> None:
    """Never write through a symlink: any link between the skill folder and the file."""
    link = _first_link(folder, path)
    if link is not None:
        raise StorageFailed(f"{link} is a symlink; nothing was written through it", path=link)


def _prune(folder: Path) -> None:
    """Remove the support folders left empty, then the skill folder if it is empty."""
    for name in SUPPORT_DIRS:
        top = folder / name
        if top.is_symlink() or not top.is_dir():
            continue
        for here, _dirs, _names in sorted(os.walk(top), key=lambda w: -len(w[0])):
            with contextlib.suppress(OSError):
                os.rmdir(here)  # fails (kept) when not empty
    with contextlib.suppress(OSError):
        folder.rmdir()
