"""The skill service on real folders and a real SQLite journal (ADR 0030)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
from pi_hermes_memory.adapters.markdown.atomic import FileLock
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.skills.service import SkillService


class _Clock:
    def now(self) -> datetime:
        return datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def service(tmp_path: Path, storage: SqliteStorage) -> SkillService:
    folders = SkillFolders(global_root=tmp_path / "skills", project_root=tmp_path / "projects")
    return SkillService(
        storage=storage,
        folders=folders,
        list_folders=folders.slugs,
        lock=lambda timeout: FileLock(tmp_path / ".lock", timeout=timeout),
        clock=_Clock(),
        logger=_Log(),
        project="demo",
    )


class _Log:
    def __getattr__(self, name: str) -> object:
        return lambda *a, **k: None


def test_create_renders_skill_md_and_a_hand_edit_is_imported(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        svc = service(tmp_path, storage)
        made = svc.create(
            scope="global",
            name="Release Checklist",
            description="Cut a release safely",
            when_to_use="Before tagging a release",
            procedure_steps=["Run the tests", "Tag the commit"],
        )
        assert made.success, made.message
        path = tmp_path / "skills" / "release-checklist" / "SKILL.md"
        text = path.read_text()
        assert text.startswith("---\nname: release-checklist\n")
        assert "version: 1" in text and "1. Run the tests" in text
        # a hand edit is imported, never overwritten; the version grows
        path.write_text(text.replace("Tag the commit", "Tag the commit and push it"))
        again = service(tmp_path, storage)
        skill = again.get("global:release-checklist")
        assert skill is not None and "push it" in skill.body and skill.revision == 2
        assert "version: 2" in path.read_text() and "push it" in path.read_text()
        # support files and delete
        wrote = again.write_file("global:release-checklist", "references/notes.md", "hello")
        assert wrote.success, wrote.message
        assert (path.parent / "references" / "notes.md").read_text() == "hello"
        refused = again.write_file("global:release-checklist", "../escape.md", "x")
        assert not refused.success and not (tmp_path / "skills" / "escape.md").exists()
        gone = again.delete("global:release-checklist")
        assert gone.success and gone.status is Status.DELETED
        assert not path.parent.exists()
        assert again.get("global:release-checklist") is None
    finally:
        storage.close()


def test_a_hand_written_skill_folder_loads_and_a_secret_is_refused(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        folder = tmp_path / "projects" / "demo" / "skills" / "deploy"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_bytes(
            b"---\r\nname: deploy\r\ndescription: Deploy it\r\nlicense: MIT\r\n---\r\n# Deploy\r\n"
        )
        svc = service(tmp_path, storage)
        [skill] = svc.skills()
        assert skill.skill_id == "project:demo:deploy" and skill.description == "Deploy it"
        assert "license: MIT" in (folder / "SKILL.md").read_text()
        blocked = svc.create(
            scope="project",
            name="leaky",
            description="uses token ghp_R8x2LmQ4vT7nK9pW3zY6bC1dF5gH0jS2aE4u",
            content="do it",
        )
        assert (
            not blocked.success
            and "ghp_R8x2LmQ4vT7nK9pW3zY6bC1dF5gH0jS2aE4u" not in blocked.message
        )
        assert not (folder.parent / "leaky").exists()
        dup = svc.create(scope="project", name="deploy", description="again", content="x")
        assert dup.status is Status.DUPLICATE
    finally:
        storage.close()


def test_skills_survive_a_database_rebuilt_from_the_event_log(tmp_path: Path) -> None:
    import pi_hermes_memory

    cwd = tmp_path / "demo"
    cwd.mkdir()
    agent = tmp_path / "agent"
    with pi_hermes_memory.open(agent_root=agent, cwd=cwd, environ={}) as memory:
        made = memory.call_tool(
            "skill",
            {
                "action": "create",
                "scope": "project",
                "name": "bump-version",
                "description": "Bump the version before a release",
                "content": "Edit pyproject.toml, then tag.",
            },
        )
        assert made["success"], made
        db = memory.config.db_path
    for side in ("", "-wal", "-shm"):
        (db.parent / (db.name + side)).unlink(missing_ok=True)
    with pi_hermes_memory.open(agent_root=agent, cwd=cwd, environ={}) as memory:
        assert any("rebuilt from" in w for w in memory.warnings)
        skill = memory.skills.get("project:demo:bump-version")
        assert skill is not None and skill.revision == 1 and "tag" in skill.body
        patched = memory.skills.update("project:demo:bump-version", description="Bump it")
        assert patched.success and patched.skill is not None and patched.skill.revision == 2


def test_a_support_file_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        svc = service(tmp_path, storage)
        assert svc.create(scope="global", name="linky", description="d", content="x").success
        outside = tmp_path / "outside"
        outside.mkdir()
        (tmp_path / "skills" / "linky" / "references").symlink_to(outside)
        refused = svc.write_file("global:linky", "references/a.md", "hello")
        assert not refused.success and "symlink" in refused.message
        assert list(outside.iterdir()) == []
        skill = svc.get("global:linky")
        assert skill is not None and skill.files == ()
    finally:
        storage.close()


def test_a_skill_that_would_shadow_the_hosts_own_is_refused(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        folders = SkillFolders(global_root=tmp_path / "skills", project_root=tmp_path / "p")
        host = tmp_path / "agent-skills"
        (host / "deploy").mkdir(parents=True)
        (host / "deploy" / "SKILL.md").write_text("---\nname: deploy\n---\n")
        svc = SkillService(
            storage=storage,
            folders=folders,
            list_folders=folders.slugs,
            lock=lambda timeout: FileLock(tmp_path / ".lock", timeout=timeout),
            clock=_Clock(),
            logger=_Log(),
            project="demo",
            host_skills_dir=host,
        )
        refused = svc.create(scope="global", name="Deploy", description="d", content="x")
        assert refused.status is Status.NAME_COLLISION and "agent-skills" in refused.message
        assert not (tmp_path / "skills" / "deploy").exists()
    finally:
        storage.close()
