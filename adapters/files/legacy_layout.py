"""Moving an older on-disk layout into the current one, once, when the store is opened (ADR 0013).

The seed's migration table:

| old location                                    | new location                                  |
|-------------------------------------------------|-----------------------------------------------|
| `<agentRoot>/memory`                            | `<agentRoot>/pi-hermes-memory`                |
| `<memoryDir>/skills/*.md`                       | `<memoryDir>/skills/<slug>/SKILL.md`          |
| `<agentRoot>/<project>/MEMORY.md`               | `<agentRoot>/projects-memory/MEMORY.md`       |
| `<agentRoot>/projects-memory/<project>/MEMORY.md` | `<agentRoot>/projects-memory/MEMORY.md`     |

Rules: best effort (a step that fails becomes a warning and the store still opens), never lose
bytes (nothing is overwritten or deleted; a file that cannot be read as UTF-8 stays where it
is), and idempotent (a second run finds nothing to do). A merged per-project `MEMORY.md` is
renamed to `MEMORY.md.migrated` so that it is never merged again: an entry deleted from the flat
file later is not resurrected. The flat file's new entries reach the journal through the
ordinary hand-edit import on open (origin `markdown`); this module never touches SQLite.
"""

from __future__ import annotations

import contextlib
import os
import re
import unicodedata
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import attrs
from pi_hermes_memory.adapters.files.legacy_probe import LEGACY_MEMORY_DIR_NAME
from pi_hermes_memory.adapters.files.legacy_probe import Layout as _Layout
from pi_hermes_memory.adapters.files.legacy_probe import Source as _Source
from pi_hermes_memory.adapters.files.legacy_probe import anything_to_do as _anything_to_do
from pi_hermes_memory.adapters.files.legacy_probe import children as _children
from pi_hermes_memory.adapters.files.legacy_probe import flat_skills as _flat_skills
from pi_hermes_memory.adapters.files.legacy_probe import project_sources as _project_sources
from pi_hermes_memory.adapters.files.legacy_probe import same_file as _same_file
from pi_hermes_memory.adapters.markdown.atomic import atomic_write
from pi_hermes_memory.adapters.markdown.format import (
    COMMENT_CLOSE,
    COMMENT_OPEN,
    ENTRY_JOINER,
    encode_project64,
    parse_document,
    speaks_project64,
)
from pi_hermes_memory.adapters.markdown.store import LOCK_FILE_NAME
from pi_hermes_memory.config.settings import DB_FILE_NAME
from pi_hermes_memory.domain.memory.markdown_doc import ParsedEntry
from pi_hermes_memory.domain.memory.model import (
    SEPARATOR_LINE,
    Target,
    normalize_text,
)

__all__ = [
    "LEGACY_MEMORY_DIR_NAME",
    "MIGRATED_SUFFIX",
    "Merge",
    "MigrationReport",
    "Move",
    "Skip",
    "migrate_legacy_layout",
    "skill_slug",
]

MIGRATED_SUFFIX = ".migrated"
SKILL_FILE_NAME = "SKILL.md"
MAX_SLUG_CHARS = 64
# Written into the new memory directory while the old one's contents move in, so that a move
# interrupted by a crash is finished by the next open instead of being taken for a second store.
MOVE_MARKER_NAME = ".legacy-memory-move"
_SLUG_JUNK = re.compile(r"[^a-z0-9]+")


@attrs.frozen(kw_only=True)
class Move:
    source: Path
    destination: Path


@attrs.frozen(kw_only=True)
class Merge:
    """A per-project MEMORY.md whose entries were appended to the flat file."""

    source: Path
    project: str
    added: int
    duplicates: int


@attrs.frozen(kw_only=True)
class Skip:
    path: Path
    reason: str


@attrs.frozen(kw_only=True)
class MigrationReport:
    """What one run did. `deferred`: the project merge waits until the flat file exists again
    (it was missing while a journal exists; open renders it, then runs the migration again)."""

    moved: tuple[Move, ...] = ()
    merged: tuple[Merge, ...] = ()
    renamed: tuple[Move, ...] = ()
    skipped: tuple[Skip, ...] = ()
    warnings: tuple[str, ...] = ()
    deferred: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.moved or self.merged or self.renamed)


@attrs.define
class _Run:
    moved: list[Move] = attrs.Factory(list)
    merged: list[Merge] = attrs.Factory(list)
    renamed: list[Move] = attrs.Factory(list)
    skipped: list[Skip] = attrs.Factory(list)
    warnings: list[str] = attrs.Factory(list)
    deferred: bool = False

    def skip(self, path: Path, reason: str, *, warn: bool = True) -> None:
        self.skipped.append(Skip(path=path, reason=reason))
        if warn:
            self.warnings.append(f"legacy migration: {path} was left in place: {reason}")

    def report(self) -> MigrationReport:
        return MigrationReport(
            moved=tuple(self.moved),
            merged=tuple(self.merged),
            renamed=tuple(self.renamed),
            skipped=tuple(self.skipped),
            warnings=tuple(self.warnings),
            deferred=self.deferred,
        )


def migrate_legacy_layout(
    *,
    agent_root: Path,
    memory_dir: Path,
    projects_dir: Path,
    lock: AbstractContextManager[object],
) -> MigrationReport:
    """Migrate whatever old layout is found; take `lock` (the store lock) only when there is.

    Call before the storage is opened. Never raises for a file it cannot migrate (that is a
    warning in the report); raises only when the lock cannot be taken.
    """
    layout = _Layout(agent_root=agent_root, memory_dir=memory_dir, projects_dir=projects_dir)
    if not _anything_to_do(layout):
        return MigrationReport()
    run = _Run()
    with lock:
        _step(run, "moving the old memory directory", _move_legacy_dir, layout)
        _step(run, "moving flat skills", _move_flat_skills, layout)
        _step(run, "merging per-project MEMORY.md files", _merge_project_files, layout)
    return run.report()


def _step(run: _Run, what: str, step: Callable[[_Run, _Layout], None], layout: _Layout) -> None:
    try:
        step(run, layout)
    except OSError as exc:  # best effort: the store still opens, the person is told
        run.warnings.append(f"legacy migration: {what} stopped: {exc}")


# --- what is there -----------------------------------------------------------------------------


# --- <agentRoot>/memory -> <agentRoot>/pi-hermes-memory ----------------------------------------


def _move_legacy_dir(run: _Run, layout: _Layout) -> None:
    old, new = layout.legacy_dir, layout.memory_dir
    if old is None or not old.is_dir():
        return
    if _same_file(old, new):
        return
    # Taking the lock created `new` (it holds the lock file), so "does not exist yet" means
    # "holds nothing but the lock file" -- or the marker of a move a crash interrupted.
    present = {p.name for p in _children(new)} - {LOCK_FILE_NAME}
    marker = new / MOVE_MARKER_NAME
    if present and MOVE_MARKER_NAME not in present:
        run.skip(
            old,
            f"{new} already exists; merge the two directories by hand (the old one is not used)",
        )
        return
    new.mkdir(parents=True, exist_ok=True)
    marker.touch()
    _fsync_dir(new)
    left = False
    for child in _children(old):
        destination = new / child.name
        if child.name == LOCK_FILE_NAME and _empty_file(child):
            child.unlink()  # an old lock file holds no data; ours is already in place
            continue
        if destination.exists() or destination.is_symlink():
            run.skip(child, f"{destination} already exists")
            left = True
            continue
        try:
            os.rename(child, destination)
        except OSError as exc:
            run.skip(child, f"it could not be moved to {destination} ({_reason(exc)})")
            left = True
            continue
        run.moved.append(Move(source=child, destination=destination))
    _fsync_dir(new)
    if not left:
        with contextlib.suppress(OSError):
            old.rmdir()
            _fsync_dir(old.parent)
    marker.unlink()
    _fsync_dir(new)


# --- <memoryDir>/skills/*.md -> <memoryDir>/skills/<slug>/SKILL.md -----------------------------


def skill_slug(stem: str) -> str:
    """A skill directory name from a file stem: lowercase ASCII letters, digits and `-`.

    Accents are folded (`Café` -> `cafe`); anything else becomes one `-`; at most 64 characters.
    Empty when nothing usable is left (e.g. a stem in a non-Latin script).
    """
    folded = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_JUNK.sub("-", folded.lower()).strip("-")
    return slug[:MAX_SLUG_CHARS].rstrip("-")


def _move_flat_skills(run: _Run, layout: _Layout) -> None:
    for source in _flat_skills(layout.skills_dir):
        slug = skill_slug(source.stem)
        if not slug:
            run.skip(source, "its name gives no skill slug (letters a-z, digits, '-')")
            continue
        folder = layout.skills_dir / slug
        destination = folder / SKILL_FILE_NAME
        if destination.exists() or destination.is_symlink():
            run.skip(source, f"{destination} already exists")
            continue
        if folder.exists() and not folder.is_dir():
            run.skip(source, f"{folder} exists and is not a directory")
            continue
        try:
            folder.mkdir(exist_ok=True)
            os.rename(source, destination)
        except OSError as exc:
            run.skip(source, f"it could not be moved to {destination} ({_reason(exc)})")
            continue
        _fsync_dir(folder)
        _fsync_dir(layout.skills_dir)
        run.moved.append(Move(source=source, destination=destination))


# --- per-project MEMORY.md -> the flat projects-memory/MEMORY.md -------------------------------


def _merge_project_files(run: _Run, layout: _Layout) -> None:
    flat = layout.flat_file
    sources = [s for s in _project_sources(layout, run.skip) if not _same_file(s.path, flat)]
    if not sources:
        return
    existing = _read_flat(flat, layout, run)
    if existing is None:
        for source in sources:
            run.skip(source.path, f"{flat} cannot be merged into now", warn=False)
        return
    present = {
        (entry.project, normalize_text(entry.text))
        for entry in parse_document(existing, target=Target.PROJECT).entries
    }
    blocks: list[str] = []
    merged: list[tuple[_Source, Merge]] = []
    for source in sources:
        text = _read_source(source.path, run)
        if text is None:
            continue
        parsed = parse_document(text, target=Target.PROJECT)
        run.warnings.extend(f"legacy migration: {source.path}: {w}" for w in parsed.warnings)
        added = duplicates = 0
        for entry in parsed.entries:
            project = entry.project or source.project  # an existing attribution is kept
            key = (project, normalize_text(entry.text))
            if key in present:
                duplicates += 1
                continue
            present.add(key)
            blocks.append(_block(entry, project, project64=speaks_project64(existing.encode())))
            added += 1
        merge = Merge(
            source=source.path, project=source.project, added=added, duplicates=duplicates
        )
        merged.append((source, merge))
    if blocks and not _append(flat, existing, blocks, run):
        return
    for source, merge in merged:
        run.merged.append(merge)
        _retire(source.path, run)


def _read_flat(flat: Path, layout: _Layout, run: _Run) -> str | None:
    try:
        data = flat.read_bytes()
    except FileNotFoundError:
        if (layout.memory_dir / DB_FILE_NAME).exists():
            # A journal exists but its flat file is gone: appending to a new file would make
            # the import read every journal entry as deleted. Open renders it; then we merge.
            run.deferred = True
            return None
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        run.warnings.append(
            f"legacy migration: {flat} is not valid UTF-8 (byte {exc.start}); no per-project "
            "MEMORY.md was merged into it. Fix the file by hand."
        )
        return None


def _read_source(path: Path, run: _Run) -> str | None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        run.skip(path, f"it could not be read ({_reason(exc)})")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        run.skip(path, f"it is not valid UTF-8 (byte {exc.start}); fix it by hand")
        return None


def _block(entry: ParsedEntry, project: str, *, project64: bool = False) -> str:
    """One entry in the flat file's format; dates only when the source had them. A flat file
    in the TypeScript extension's spelling gets `project64=` (ADR 0027)."""
    pairs = []
    if entry.created is not None:
        pairs.append(f"created={entry.created.isoformat()}")
    if entry.last is not None:
        pairs.append(f"last={entry.last.isoformat()}")
    pairs.append(f"project64={encode_project64(project)}" if project64 else f"project={project}")
    pairs.extend(f"{key}={value}" for key, value in entry.extra)
    return f"{entry.text} {COMMENT_OPEN} {', '.join(pairs)} {COMMENT_CLOSE}"


def _append(flat: Path, existing: str, blocks: list[str], run: _Run) -> bool:
    """Append `blocks` after the file's bytes (which stay as they are), atomically."""
    head = existing
    if head and not head.endswith("\n"):
        head += "\n"
    if parse_document(existing, target=Target.PROJECT).entries:
        head += f"{SEPARATOR_LINE}\n"
    updated = head + ENTRY_JOINER.join(blocks) + "\n"
    # the appended text must read back as exactly the old entries plus the new ones
    before = parse_document(existing, target=Target.PROJECT).entries
    after = parse_document(updated, target=Target.PROJECT).entries
    if after[: len(before)] != before or len(after) != len(before) + len(blocks):
        run.warnings.append(
            f"legacy migration: the entries to merge into {flat} would not read back unchanged; "
            "nothing was merged"
        )
        return False
    atomic_write(flat, updated.encode("utf-8"))
    return True


def _retire(source: Path, run: _Run) -> None:
    """Rename a merged source so that it is never merged again (its bytes stay)."""
    destination = source.with_name(source.name + MIGRATED_SUFFIX)
    number = 1
    while destination.exists() or destination.is_symlink():
        number += 1
        destination = source.with_name(f"{source.name}{MIGRATED_SUFFIX}-{number}")
    try:
        os.rename(source, destination)
    except OSError as exc:
        # merged already; the next run finds its entries present and tries the rename again
        run.warnings.append(
            f"legacy migration: {source} was merged but could not be renamed ({_reason(exc)})"
        )
        return
    _fsync_dir(source.parent)
    run.renamed.append(Move(source=source, destination=destination))


# --- small helpers -----------------------------------------------------------------------------


def _empty_file(path: Path) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and path.stat().st_size == 0
    except OSError:
        return False


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _fsync_dir(directory: Path) -> None:
    """Make renames in `directory` durable; best effort (a rename that is lost in a crash is
    redone by the next run, which is idempotent)."""
    if os.name == "nt":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
