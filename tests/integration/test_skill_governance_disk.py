"""Skill governance (ADR 0031) on real folders, the SQLite journal and the SQLite skill tables:
a promote moves the folder in one transaction, a crash between COMMIT and the render converges,
restore brings the folder back, block vs overwrite, the lease, and the curate tool's limits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
from pi_hermes_memory.adapters.markdown.atomic import FileLock
from pi_hermes_memory.adapters.sqlite.skill_tables import SqliteSkillTables
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.config.settings import PromotionConflictStrategy
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.journal.pipeline import Pipeline
from pi_hermes_memory.ports.skills import CurationKind
from pi_hermes_memory.skills.stats import curation_limits

from tests.support.skill_world import DEPLOY_BODY, World, config

P, G = "project:web:deploy", "global:deploy"


class Crash(BaseException):
    """The process dies here (not an error the library handles)."""


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    storage = SqliteStorage(tmp_path / "sessions.db")
    folders = SkillFolders(
        global_root=tmp_path / "pi-hermes-memory" / "skills",
        project_root=tmp_path / "projects-memory",
    )
    yield World(
        storage=storage,
        folders=folders,
        telemetry=SqliteSkillTables(storage),
        lock=lambda timeout: FileLock(tmp_path / ".lock", timeout=timeout),
        host_skills_dir=tmp_path / "skills",
    )
    storage.close()


def project_dir(world: World) -> Path:
    return Path(world.folders.project_root) / "web" / "skills" / "deploy"


def global_dir(world: World) -> Path:
    return Path(world.folders.global_root) / "deploy"


def candidate(world: World) -> None:
    world.create()
    world.use(P, 3)
    skills, _ = world.session()
    assert skills.write_file(P, "scripts/check.sh", "echo ok").success


def events_of(world: World, skill_id: str) -> list[str]:
    with world.storage.snapshot() as uow:
        return [type(e).__name__ for e in uow.journal.read("skill:" + skill_id)]


def test_promote_moves_the_folder_with_a_hand_edit_imported_first(world: World) -> None:
    candidate(world)
    skill_md = project_dir(world) / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("docker image", "container image"))
    _, gov = world.session()
    done = gov.promote(P)
    assert done.success, done.message
    assert not project_dir(world).exists()
    text = (global_dir(world) / "SKILL.md").read_text()
    assert text.startswith("---\nname: deploy\n") and "container image" in text
    assert (global_dir(world) / "scripts" / "check.sh").read_text() == "echo ok"
    assert events_of(world, P)[-1] == "SkillDeleted"
    assert events_of(world, G) == ["SkillCreated", "SkillFileWritten"]
    assert world.telemetry.governance(G).backup is not None
    log = world.storage.event_log.path.read_text()
    assert '"skill:global:deploy"' in log  # the outer commit copied the events to the log


def test_the_move_and_its_record_commit_together_or_not_at_all(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    candidate(world)
    log_before = world.storage.event_log.path.read_text()

    def fail(*args: object) -> None:
        raise OSError("disk gone before COMMIT")

    monkeypatch.setattr(Pipeline, "_keep_snapshots", fail)
    _, gov = world.session()
    with pytest.raises(OSError, match="before COMMIT"):
        gov.promote(P)
    monkeypatch.undo()
    # rolled back as one: no events, no governance record, no line in the event log
    assert events_of(world, G) == [] and events_of(world, P)[-1] != "SkillDeleted"
    assert world.telemetry.governance(G) is None and world.telemetry.governance(P) is None
    assert world.storage.event_log.path.read_text() == log_before
    assert project_dir(world).exists() and not global_dir(world).exists()
    assert world.session()[1].promote(P).success


def test_a_crash_between_commit_and_render_converges_on_the_next_operation(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    candidate(world)
    real = SkillFolders.write

    def crash(self: SkillFolders, stream: str, data: bytes, **kw: object) -> None:
        raise Crash

    monkeypatch.setattr(SkillFolders, "write", crash)
    _, gov = world.session()
    with pytest.raises(Crash):
        gov.promote(P)
    monkeypatch.setattr(SkillFolders, "write", real)
    # committed: the journal and the record say promoted; the folders were not touched yet
    assert events_of(world, P)[-1] == "SkillDeleted" and world.telemetry.governance(G)
    assert project_dir(world).exists() and not global_dir(world).exists()
    # any next operation over the skills (a new process) renders both folders
    status = world.session()[1].status()
    assert [r.skill_id for r in status.skills if r.exists] == [G]
    assert not project_dir(world).exists()
    assert (global_dir(world) / "scripts" / "check.sh").read_text() == "echo ok"
    assert world.session()[1].restore(G).success
    assert project_dir(world).exists() and not global_dir(world).exists()


def test_restore_brings_the_project_folder_back(world: World) -> None:
    candidate(world)
    _, gov = world.session()
    assert gov.promote(P).success
    restored = world.session()[1].restore(P)
    assert restored.success and restored.status is Status.RESTORED
    assert not global_dir(world).exists()
    assert (project_dir(world) / "scripts" / "check.sh").read_text() == "echo ok"
    assert DEPLOY_BODY.split("\n")[0] in (project_dir(world) / "SKILL.md").read_text()
    assert len(world.telemetry.usages(P)) == 3  # the evidence was never moved


def test_block_and_overwrite_on_disk(world: World) -> None:
    candidate(world)
    world.create(scope="global", body="## Procedure\n1. The old global way.")
    old = (global_dir(world) / "SKILL.md").read_text()
    blocked = world.session()[1].promote(P)
    assert blocked.status is Status.CONFLICT
    assert (global_dir(world) / "SKILL.md").read_text() == old and project_dir(world).exists()
    world.settings = config(promotion_conflict_strategy=PromotionConflictStrategy.OVERWRITE)
    assert world.session()[1].promote(P).success
    new = (global_dir(world) / "SKILL.md").read_text()
    assert "docker image" in new and "version: 2" in new and not project_dir(world).exists()
    assert world.session()[1].restore(G).success
    assert "The old global way" in (global_dir(world) / "SKILL.md").read_text()
    assert (project_dir(world) / "SKILL.md").exists()


def test_a_skill_shadowing_the_agents_own_is_not_promoted(world: World) -> None:
    candidate(world)
    own = Path(world.host_skills_dir or "") / "deploy"
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text("---\nname: deploy\ndescription: theirs\n---\n")
    result = world.session()[1].promote(P)
    assert result.status is Status.NAME_COLLISION and project_dir(world).exists()


def test_the_lease_is_shared_with_other_processes(world: World) -> None:
    world.create()
    other = SqliteStorage(Path(world.storage.path))  # another process's connection
    try:
        held = SqliteSkillTables(other).begin_curation(
            "web", CurationKind.AUTO, world.clock.now(), curation_limits(world.settings)
        )
        busy = world.session()[1].curate()
        assert busy.status is Status.BUSY
        SqliteSkillTables(other).finish_curation(held.job_id, "succeeded", "ok", world.clock.now())
    finally:
        other.close()
    done = world.session()[1].curate()
    assert done.success and world.telemetry.governance(P).state == "global-safe"
    assert world.session()[1].status().curation.skips == {"busy": 1}


def test_curated_words_survive_reopening_and_timing_keys_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    kwargs = {"agent_root": root, "cwd": root / "web", "environ": {}, "session_id": "c1"}
    with pi_hermes_memory.open(child_session=True, **kwargs) as child:  # type: ignore[arg-type]
        made = child.skills.create(
            scope="project", name="deploy", description="Ship it", content="1. Roll out."
        )
        assert made.success
        refused = child.call_tool(
            "skill_governance_curate",
            {"classifications": [], "autoCurationCooldownMs": 0, "scope_policy_words": ["x"]},
        )
        assert refused["status"] == "forbidden" and "autoCurationCooldownMs" in refused["message"]
        ok = child.call_tool(
            "skill_governance_curate",
            {
                "classifications": [
                    {"skill_id": P, "scope_verdict": "project-only", "reasons": ["ships web"]}
                ],
                "task_domains": [{"id": "release-ops", "terms": ["canary"]}],
            },
        )
        assert ok["status"] == "ok", ok
    with pi_hermes_memory.open(**kwargs) as main:  # type: ignore[arg-type]
        gov = main.skill_governance
        assert "release-ops" in gov.status().task_domains
        [row] = gov.status().skills
        assert row.state == "project-only" and row.record is not None
        assert "skill_governance_curate" not in [t.name for t in main.tool_definitions()]
