"""The skill folder adapter on a real file system: what is part of a skill, links, pruning."""

from __future__ import annotations

from pathlib import Path

import pytest
from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
from pi_hermes_memory.domain.skills.bundle import pack, unpack
from pi_hermes_memory.errors import MarkdownUnreadable, StorageFailed

STREAM = "skill:global:deploy"


@pytest.fixture
def folders(tmp_path: Path) -> SkillFolders:
    return SkillFolders(global_root=tmp_path / "skills", project_root=tmp_path / "projects")


def test_a_missing_folder_packs_to_nothing(folders: SkillFolders) -> None:
    assert folders.read(STREAM) == b"" and folders.stamp(STREAM) is None
    assert folders.folder("skill:project:web:lint") == folders.project_root / "web/skills/lint"


def test_only_skill_md_and_the_support_folders_are_the_skill(
    folders: SkillFolders, tmp_path: Path
) -> None:
    root = folders.folder(STREAM)
    for rel, text in {
        "SKILL.md": "---\nname: deploy\n---\n",
        "references/a.md": "a",
        "scripts/deep/b.sh": "b",
        "README.md": "not ours",
        ".git/config": "not ours",
        "notes/c.md": "not ours",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("linked")
    (root / "assets").symlink_to(outside)  # a linked support folder is not followed
    (root / "templates").mkdir()
    (root / "templates" / "t.md").symlink_to(outside / "secret.md")  # nor a linked file
    assert set(unpack(folders.read(STREAM))) == {"SKILL.md", "references/a.md", "scripts/deep/b.sh"}
    assert {mark[0] for mark in folders.stamp(STREAM)} == {  # type: ignore[attr-defined]
        "SKILL.md",
        "references/a.md",
        "scripts/deep/b.sh",
        "templates/t.md",
    }
    # the render deletes our files it no longer has; links and other files stay
    folders.write(STREAM, pack({"SKILL.md": b"new", "references/z.md": b"z"}))
    assert (root / "SKILL.md").read_bytes() == b"new"
    assert (root / "references" / "z.md").read_bytes() == b"z"
    assert not (root / "references" / "a.md").exists() and not (root / "scripts").exists()
    assert (root / "README.md").exists() and (root / ".git" / "config").exists()
    assert (root / "templates" / "t.md").is_symlink() and (outside / "secret.md").exists()
    # a deleted skill removes every file of ours, and the folder only when it is empty
    folders.write(STREAM, b"")
    assert not (root / "SKILL.md").exists() and (root / "README.md").exists()


def test_a_linked_skill_md_is_unreadable_and_nothing_is_written_through_a_link(
    folders: SkillFolders, tmp_path: Path
) -> None:
    root = folders.folder(STREAM)
    root.mkdir(parents=True)
    target = tmp_path / "elsewhere.md"
    target.write_text("---\nname: deploy\n---\n")
    (root / "SKILL.md").symlink_to(target)
    with pytest.raises(MarkdownUnreadable):
        folders.read(STREAM)
    (root / "SKILL.md").unlink()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "references").symlink_to(outside)
    with pytest.raises(StorageFailed):
        folders.write(STREAM, pack({"SKILL.md": b"x", "references/a.md": b"a"}))
    assert list(outside.iterdir()) == []


def test_an_emptied_folder_is_removed(folders: SkillFolders) -> None:
    folders.write(STREAM, pack({"SKILL.md": b"x", "assets/a/b/c.txt": b"c"}))
    folders.write(STREAM, b"")
    assert not folders.folder(STREAM).exists() and folders.read(STREAM) == b""
