"""A process that dies between the file writes of a skill render (after the commit) leaves a
folder that mixes the old and the new skill; the next process finishes the render from the
journal instead of importing the mix as a hand edit (ADR 0030). Each test is a failing example
the skill state machine found (`tests/support/skill_machine.py`), on SQLite and real folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.markdown.atomic import FileLock
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.skills.service import SkillService

from tests.support.fakes import StepClock
from tests.support.skill_model import CrashingFolders, SimulatedCrash

SID = "global:alpha"


class _Quiet:
    def __getattr__(self, name: str) -> object:
        return lambda *a, **k: None


class Process:
    """One process on the shared store: its own connection and service."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folders = CrashingFolders(global_root=root / "skills", project_root=root / "projects")
        self.storage = SqliteStorage(root / "sessions.db")
        self.svc = SkillService(
            storage=self.storage,
            folders=self.folders,
            list_folders=self.folders.slugs,
            lock=lambda timeout: FileLock(root / ".lock", timeout=timeout),
            clock=StepClock(),
            logger=_Quiet(),
            project="demo",
        )

    def dies_during(self, steps: int, action: object) -> None:
        """`action` commits, then its render dies after `steps` file writes."""
        self.folders.arm(steps)
        with pytest.raises(SimulatedCrash):
            action()  # type: ignore[operator]
        self.storage.close()


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def _folder(root: Path) -> Path:
    return root / "skills" / "alpha"


def _create(svc: SkillService) -> None:
    made = svc.create(scope="global", name="alpha", description="Alpha things", content="Do it")
    assert made.status is Status.CREATED, made.message


def test_a_create_whose_render_died_before_any_file_is_kept(root: Path) -> None:
    # the ledger recorded the empty folder of version 0: a missing folder is a render to do,
    # not a deletion by hand
    first = Process(root)
    first.dies_during(0, lambda: _create(first.svc))
    assert not _folder(root).exists()
    second = Process(root)
    try:
        skill = second.svc.get(SID)
        assert skill is not None and skill.description == "Alpha things"
        assert "version: 1" in (_folder(root) / "SKILL.md").read_text()
        wrote = second.svc.write_file(SID, "references/a.md", "a")
        assert wrote.status is Status.FILE_WRITTEN, wrote.message
    finally:
        second.storage.close()


def test_a_delete_whose_render_died_after_skill_md_finishes(root: Path) -> None:
    # was: support files without SKILL.md, refused as unreadable and left for ever
    first = Process(root)
    _create(first.svc)
    for path in ("references/a.md", "scripts/b.sh"):
        assert first.svc.write_file(SID, path, path).success
    first.dies_during(1, lambda: first.svc.delete(SID))
    assert not (_folder(root) / "SKILL.md").exists()
    assert (_folder(root) / "references" / "a.md").exists()
    second = Process(root)
    try:
        assert second.svc.skills() == [] and second.svc.get(SID) is None
        assert not _folder(root).exists()
        again = second.svc.create(scope="global", name="alpha", description="New", content="x")
        assert again.status is Status.CREATED, again.message
    finally:
        second.storage.close()


def test_a_remove_after_an_imported_hand_edit_is_not_undone_by_the_crash(root: Path) -> None:
    # was: the ledger held the person's bytes, so the half-rendered folder (new SKILL.md, the
    # removed file still there) was imported as a hand edit that wrote the file back
    first = Process(root)
    _create(first.svc)
    assert first.svc.write_file(SID, "references/a.md", "a").success
    skill_md = _folder(root) / "SKILL.md"
    skill_md.write_bytes(
        skill_md.read_bytes().replace(b"Alpha things", b"Alpha by hand").replace(b"\n", b"\r\n")
    )
    first.dies_during(1, lambda: first.svc.remove_file(SID, "references/a.md"))
    assert (_folder(root) / "references" / "a.md").exists()
    second = Process(root)
    try:
        skill = second.svc.get(SID)
        assert skill is not None and skill.files == () and skill.description == "Alpha by hand"
        assert skill.revision == 2  # the hand edit; removing a file keeps the revision
        assert not (_folder(root) / "references").exists()
        assert b"\r\n" not in skill_md.read_bytes() and b"version: 2\n" in skill_md.read_bytes()
    finally:
        second.storage.close()


def test_a_hand_edit_then_a_delete_that_died_midway_deletes(root: Path) -> None:
    first = Process(root)
    _create(first.svc)
    assert first.svc.write_file(SID, "references/a.md", "a").success
    skill_md = _folder(root) / "SKILL.md"
    skill_md.write_bytes(skill_md.read_bytes().replace(b"Alpha things", b"Alpha by hand"))
    first.dies_during(1, lambda: first.svc.delete(SID))
    second = Process(root)
    try:
        assert second.svc.get(SID) is None and not _folder(root).exists()
    finally:
        second.storage.close()


def test_a_person_s_edit_of_a_half_rendered_folder_is_still_imported(root: Path) -> None:
    """Only a mix of the two states is a cut-short render: a file that is neither is the
    person's and wins, as any hand edit."""
    first = Process(root)
    _create(first.svc)
    assert first.svc.write_file(SID, "references/a.md", "a").success
    first.dies_during(0, lambda: first.svc.write_file(SID, "references/b.md", "b"))
    (_folder(root) / "references" / "a.md").write_text("a, by hand")
    second = Process(root)
    try:
        skill = second.svc.get(SID)
        assert skill is not None
        assert dict(skill.files) == {"references/a.md": "a, by hand", "references/b.md": "b"}
        assert (_folder(root) / "references" / "b.md").read_text() == "b"
    finally:
        second.storage.close()


def test_a_person_s_field_edit_of_a_half_rendered_skill_md_keeps_the_committed_patch(
    root: Path,
) -> None:
    """The three-way merge is per field of SKILL.md: the person changed the description of
    the old file; the patch of the body, committed but not rendered, stays."""
    first = Process(root)
    _create(first.svc)
    first.dies_during(0, lambda: first.svc.patch(SID, section="Pitfalls", content="Mind it"))
    skill_md = _folder(root) / "SKILL.md"
    assert b"Mind it" not in skill_md.read_bytes()
    skill_md.write_bytes(skill_md.read_bytes().replace(b"Alpha things", b"Alpha by hand"))
    second = Process(root)
    try:
        skill = second.svc.get(SID)
        assert skill is not None and skill.description == "Alpha by hand"
        assert "## Pitfalls\n\nMind it" in skill.body and skill.revision == 3
        assert b"Mind it" in skill_md.read_bytes() and b"version: 3" in skill_md.read_bytes()
    finally:
        second.storage.close()
