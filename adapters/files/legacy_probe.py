"""Whether an old layout is there to migrate (ADR 0013): the cheap look every open takes.

The directories and files of the legacy layout, and the look `migrate_legacy_layout`
(`legacy_layout.py`) takes before it locks anything. Apart from the migration so that an open
with nothing to migrate loads neither the migration nor its report classes (ADR 0105).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
from pi_hermes_memory.adapters.markdown.store import LOCK_FILE_NAME
from pi_hermes_memory.config.settings import (
    DB_FILE_NAME,
    DEFAULT_MEMORY_DIR_NAME,
    DEFAULT_PROJECTS_MEMORY_DIR_NAME,
)
from pi_hermes_memory.domain.memory.model import is_safe_project_name

__all__ = [
    "LEGACY_MEMORY_DIR_NAME",
    "MEMORY_FILE_NAME",
    "Layout",
    "Source",
    "anything_to_do",
    "children",
    "flat_skills",
    "project_sources",
    "same_file",
]

LEGACY_MEMORY_DIR_NAME = "memory"
MEMORY_FILE_NAME = "MEMORY.md"
# Directories directly under agentRoot that are never a legacy project directory.
_NOT_PROJECTS = frozenset(
    {
        LEGACY_MEMORY_DIR_NAME,
        DEFAULT_MEMORY_DIR_NAME,
        DEFAULT_PROJECTS_MEMORY_DIR_NAME,
        "sessions",
        "skills",
    }
)
# A directory holding one of these is a memory directory (e.g. an earlier memoryDir), whose
# MEMORY.md is global memory: merging it as project memory would misfile every entry.
_MEMORY_DIR_FILES = (DB_FILE_NAME, "USER.md", "failures.md", LOCK_FILE_NAME)


@attrs.frozen(kw_only=True)
class Layout:
    agent_root: Path
    memory_dir: Path
    projects_dir: Path

    @property
    def legacy_dir(self) -> Path | None:
        """`<agentRoot>/memory` when it is to move into memoryDir (the default one only)."""
        if self.memory_dir != self.agent_root / DEFAULT_MEMORY_DIR_NAME:
            return None
        return self.agent_root / LEGACY_MEMORY_DIR_NAME

    @property
    def skills_dir(self) -> Path:
        return self.memory_dir / "skills"

    @property
    def flat_file(self) -> Path:
        return self.projects_dir / MEMORY_FILE_NAME


@attrs.frozen
class Source:
    path: Path
    project: str


def anything_to_do(layout: Layout) -> bool:
    """A cheap look without the lock, so an ordinary open never waits for it."""
    try:
        legacy = layout.legacy_dir
        if legacy is not None and legacy.is_dir():
            return True
        if any(True for _ in flat_skills(layout.skills_dir)):
            return True
        skipped: list[Path] = []
        found = any(True for _ in project_sources(layout, lambda path, _: skipped.append(path)))
        return found or bool(skipped)
    except OSError:
        return True  # let the locked run report what it cannot read


def children(directory: Path) -> list[Path]:
    try:
        return sorted(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def flat_skills(skills_dir: Path) -> Iterator[Path]:
    for child in children(skills_dir):
        if child.name.startswith(".") or child.suffix.lower() != ".md":
            continue
        if child.is_file():
            yield child


def project_sources(layout: Layout, skip: Callable[[Path, str], None]) -> Iterator[Source]:
    """`<agentRoot>/<project>/MEMORY.md`, then `<projectsDir>/<project>/MEMORY.md`."""
    ours = [layout.memory_dir, layout.projects_dir]
    for folder in children(layout.agent_root):
        name = folder.name
        if name.startswith(".") or name in _NOT_PROJECTS or name == layout.projects_dir.name:
            continue
        if not is_safe_project_name(name) or not folder.is_dir():
            continue
        if any(same_file(folder, dir_) for dir_ in ours):
            continue
        source = folder / MEMORY_FILE_NAME
        if not source.is_file():
            continue
        if any((folder / marker).exists() for marker in _MEMORY_DIR_FILES):
            skip(source, "its directory looks like a memory directory, not a project")
            continue
        yield Source(source, name)
    for folder in children(layout.projects_dir):
        name = folder.name
        source = folder / MEMORY_FILE_NAME
        if name.startswith(".") or not folder.is_dir() or not source.is_file():
            continue
        if not is_safe_project_name(name):
            skip(source, f"{name!r} is not a safe project name")
            continue
        yield Source(source, name)


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False
