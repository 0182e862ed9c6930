"""sync-markdown and `Projection.rebuild` on the in-memory adapters (ADR 0013)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pi_hermes_memory
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.commands import AddMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryEntry, Target
from pi_hermes_memory.memory.mirror import mirrored, plan_mirror
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.memory.sync import SyncReport, sync_markdown

from tests.support.builders import service
from tests.support.fakes import StepClock

DAY = date(2026, 7, 29)


def entry(
    entry_id: str, target: Target, text: str, project: str | None, **kw: object
) -> MemoryEntry:
    return MemoryEntry(
        id=entry_id,
        target=target,
        text=text,
        project=project,
        category=FailureCategory.FAILURE if target is Target.FAILURE else None,
        created=DAY,
        last_referenced=DAY,
        **kw,  # type: ignore[arg-type]
    )


def add(svc: MemoryService, text: str, target: Target = Target.MEMORY) -> None:
    clock = StepClock()
    result = svc.execute(
        AddMemory(
            target=target,
            text=text,
            category=None,
            force=True,
            entry_id=f"id-{abs(hash(text))}",
            at=clock.now(),
        )
    )
    assert result.success, result.message


def setup() -> tuple[MemoryService, InMemoryStorage, InMemoryMarkdown]:
    storage, markdown = InMemoryStorage(), InMemoryMarkdown()
    svc = service(storage, markdown)
    return svc, storage, markdown


def quiet(report: SyncReport) -> bool:
    return not report.changed and (report.imported, report.added, report.updated) == (0, 0, 0)


def test_plan_mirror_leaves_out_unattributed_project_entries() -> None:
    project_doc = MemoryDocument(
        stream="memory:project",
        target=Target.PROJECT,
        active=(
            entry("p1", Target.PROJECT, "attributed", "app"),
            entry("p2", Target.PROJECT, "unattributed", None),
        ),
        history=(entry("p0", Target.PROJECT, "old unattributed", None, superseded_by="p2"),),
    )
    failure_doc = MemoryDocument(
        stream="memory:failure",
        target=Target.FAILURE,
        active=(entry("f1", Target.FAILURE, "global failure", None),),
    )
    plan = plan_mirror([project_doc, failure_doc])
    assert set(plan.rows) == {"p1", "f1"}  # a global failure is mirrored
    assert [e.id for e in plan.skipped] == ["p2"]  # only active entries are reported
    assert plan.targets == {Target.PROJECT, Target.FAILURE}
    assert not mirrored(project_doc.active[1]) and mirrored(failure_doc.active[0])


def test_a_healthy_store_syncs_to_zeros() -> None:
    svc, _, _ = setup()
    add(svc, "Builds run with make")
    add(svc, "Prefers tabs", Target.USER)
    report = sync_markdown(svc)
    assert quiet(report)
    assert [t.target for t in report.targets] == [t.value for t in Target]
    assert report.warnings == ()


def test_rebuild_repairs_missing_changed_and_bogus_rows() -> None:
    svc, storage, _ = setup()
    add(svc, "Builds run with make")
    add(svc, "Deploys go through fly")
    ids = {row["text"]: key for key, row in storage.rows.items()}
    del storage.rows[ids["Builds run with make"]]
    storage.rows[ids["Deploys go through fly"]]["text"] = "tampered"
    storage.rows["bogus"] = {
        "target": "memory",
        "project": None,
        "text": "nobody wrote this",
        "superseded_by": None,
    }
    storage.rows["orphan"] = {
        "target": "user",
        "project": None,
        "text": "old history",
        "superseded_by": "gone",
    }
    report = sync_markdown(svc)
    memory = report.target(Target.MEMORY)
    assert (memory.added, memory.updated, memory.removed) == (1, 1, 1)
    assert report.target("user").kept_history == 1  # history is never deleted
    assert {row["text"] for row in storage.rows.values()} == {
        "Builds run with make",
        "Deploys go through fly",
        "old history",
    }
    assert quiet(sync_markdown(svc))


def test_history_is_mirrored_and_survives() -> None:
    svc, storage, _ = setup()
    add(svc, "The CI runs on GitHub")
    svc.execute(
        ReplaceMemory(
            target=Target.MEMORY,
            old_text="GitHub",
            text="The CI runs on Buildkite",
            category=None,
            entry_id="new",
            at=StepClock().now(),
        )
    )
    old = next(k for k, row in storage.rows.items() if row["superseded_by"] == "new")
    assert quiet(sync_markdown(svc))
    del storage.rows[old]
    assert sync_markdown(svc).target("memory").added == 1
    assert storage.rows[old]["superseded_by"] == "new"


def test_hand_edits_are_imported_first_and_counted() -> None:
    svc, storage, markdown = setup()
    add(svc, "Builds run with make")
    markdown.files[Target.MEMORY] += "§\nTests run with pytest\n".encode()
    markdown.files[Target.PROJECT] = b"Unattributed project note\n"
    report = sync_markdown(svc)
    assert report.target("memory").imported == 1 and report.target("project").imported == 1
    assert report.added == 0  # the import projected its own rows
    assert report.target("project").skipped == 1
    assert any("Unattributed project note" in w for w in report.warnings)
    assert "Tests run with pytest" in {row["text"] for row in storage.rows.values()}
    assert b"Unattributed project note" in markdown.files[Target.PROJECT]
    again = sync_markdown(svc)
    assert quiet(again) and again.skipped == 1


def test_memory_facade_sync_markdown(tmp_path: Path) -> None:
    storage, markdown = InMemoryStorage(), InMemoryMarkdown()
    with pi_hermes_memory.open(
        agent_root=tmp_path, cwd=tmp_path, environ={}, storage=storage, markdown=markdown
    ) as m:
        m.add("Builds run with make")
        storage.rows.clear()
        report = m.sync_markdown()
        assert report.added == 1 and report.to_json()["added"] == 1
        assert quiet(m.sync_markdown())
