"""sync-markdown on the real adapters: a SQLite mirror damaged by hand is repaired (ADR 0013)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pi_hermes_memory
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import rule
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.sqlite.mirror import fts_consistent
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import Target

from tests.integration.test_state_machine_disk import DiskMachine
from tests.support.machine import PROJECTS, MemoryMachine


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


def open_memory(root: Path, project: str = "alpha") -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, cwd=root.parent, project=project, environ={"HOME": str(root.parent)}
    )


def db(root: Path) -> apsw.Connection:
    return apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))


def rows(root: Path) -> dict[str, tuple[object, ...]]:
    conn = db(root)
    try:
        return {
            r[0]: tuple(r[1:])
            for r in conn.execute(
                "SELECT id, target, project, text, superseded_by, created, last_referenced "
                "FROM memories"
            )
        }
    finally:
        conn.close()


def fts_ok(root: Path) -> bool:
    conn = db(root)
    try:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
        # rank = 1: also compare the index with the rows of the external content table
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
        return True
    except apsw.CorruptError:
        return False
    finally:
        conn.close()


def search(root: Path, words: str) -> list[str]:
    conn = db(root)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT m.text FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
                "WHERE memories_fts MATCH ?",
                (words,),
            )
        ]
    finally:
        conn.close()


def zeros(report: pi_hermes_memory.memory.sync.SyncReport) -> bool:
    return not report.changed and all(
        (t.imported, t.added, t.updated, t.removed) == (0, 0, 0, 0) for t in report.targets
    )


def test_sync_repairs_a_mirror_damaged_by_hand(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Builds run with make")
        m.add("Deploys go through fly")
        m.add("Prefers tabs", target="user")
        m.add("Alpha staging is on port 8080", target="project")
        healthy = rows(root)
        assert zeros(m.sync_markdown())
    ids = {v[2]: k for k, v in healthy.items()}
    conn = db(root)
    with conn:
        conn.execute("DELETE FROM memories WHERE id = ?", (ids["Builds run with make"],))
        conn.execute(
            "UPDATE memories SET text = 'Deploys go through heroku' WHERE id = ?",
            (ids["Deploys go through fly"],),
        )
        conn.execute(
            "INSERT INTO memories (id, target, text, created, last_referenced) "
            "VALUES ('bogus', 'memory', 'A row nobody wrote', '2026-01-01', '2026-01-01')"
        )
    conn.close()
    assert search(root, "heroku") and not search(root, "make")
    with open_memory(root) as m:
        report = m.sync_markdown()
        memory = report.target("memory")
        assert (memory.added, memory.updated, memory.removed) == (1, 1, 1)
        assert (report.added, report.updated, report.removed, report.imported) == (1, 1, 1, 0)
        assert not report.fts_rebuilt  # the triggers kept the index in step with the repairs
        for other in ("user", "project", "failure"):
            assert report.target(other).repaired == 0
        assert rows(root) == healthy
        assert fts_ok(root)
        assert search(root, "make") == ["Builds run with make"]
        assert search(root, "heroku") == [] and search(root, "nobody") == []
        assert zeros(m.sync_markdown())


def test_history_survives_sync_and_is_restored_from_the_journal(root: Path) -> None:
    with open_memory(root) as m:
        m.add("The CI runs on GitHub")
        m.replace("CI runs on GitHub", "The CI runs on Buildkite")
        history = [e for e in m.entries("memory", include_history=True) if e.superseded_by]
        assert len(history) == 1
        assert zeros(m.sync_markdown())  # Markdown lacks the history row: it stays
    assert history[0].id in rows(root)
    conn = db(root)
    with conn:
        conn.execute("DELETE FROM memories WHERE id = ?", (history[0].id,))
    conn.close()
    with open_memory(root) as m:
        assert m.sync_markdown().target("memory").added == 1
    restored = rows(root)[history[0].id]
    assert restored[3] == history[0].superseded_by and restored[2] == "The CI runs on GitHub"
    assert fts_ok(root)


def test_superseded_rows_the_journal_does_not_know_are_kept(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Current fact")
    conn = db(root)
    with conn:
        conn.execute(
            "INSERT INTO memories (id, target, text, created, last_referenced, superseded_by, "
            "superseded_at) VALUES ('old', 'memory', 'Old fact', '2026-01-01', '2026-01-01', "
            "'x', '2026-01-02')"
        )
    conn.close()
    with open_memory(root) as m:
        report = m.sync_markdown()
        assert report.target("memory").kept_history == 1 and zeros(report)
    assert "old" in rows(root)


def test_markdown_edits_are_imported_and_counted(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Builds run with make")
    path = root / "pi-hermes-memory" / "MEMORY.md"
    path.write_text(path.read_text() + "§\nTests run with pytest\n", encoding="utf-8")
    with pi_hermes_memory.open(
        agent_root=root, cwd=root.parent, project="alpha", environ={"HOME": str(root.parent)}
    ) as m:
        pass  # open imports it already
    path.write_text(path.read_text() + "§\nLint runs with ruff\n", encoding="utf-8")
    with open_memory(root) as m:
        path.write_text(path.read_text() + "§\nDocs build with mkdocs\n", encoding="utf-8")
        report = m.sync_markdown()
        # ruff's edit (imported when this session opened) and mkdocs' (imported by the sync):
        # the report names what this session imported, not only the sync's own step
        assert report.target("memory").imported == 2
        assert m.sync_markdown().target("memory").imported == 0
        assert report.added == 0  # the import writes its rows itself; nothing to repair
    assert search(root, "mkdocs") == ["Docs build with mkdocs"]


def test_unattributed_project_entries_are_reported_and_kept(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Alpha fact", target="project")
    flat = root / "projects-memory" / "MEMORY.md"
    flat.write_text(flat.read_text() + "§\nAn entry without attribution\n", encoding="utf-8")
    with open_memory(root) as m:
        report = m.sync_markdown()
        project = report.target("project")
        assert project.skipped == 1 and project.repaired == 0
        assert any("no project= attribution" in w and "An entry" in w for w in report.warnings)
        again = m.sync_markdown()
        assert zeros(again) and again.target("project").skipped == 1
    assert "An entry without attribution" in flat.read_text()
    assert "An entry without attribution" not in {v[2] for v in rows(root).values()}


def test_retired_migrated_files_are_never_read(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Alpha fact", target="project")
    retired = root / "projects-memory" / "alpha" / "MEMORY.md.migrated"
    retired.parent.mkdir(parents=True)
    retired.write_text("A retired entry\n", encoding="utf-8")
    with open_memory(root) as m:
        assert zeros(m.sync_markdown())
        assert [e.text for e in m.entries("project")] == ["Alpha fact"]
    assert retired.read_text() == "A retired entry\n"


def test_a_full_text_index_out_of_step_is_rebuilt(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Builds run with make")
    conn = db(root)
    with conn:
        rowid, text, grams = conn.execute("SELECT rowid, text, grams FROM memories").fetchone()
        conn.execute(
            "INSERT INTO memories_fts (memories_fts, rowid, text, grams) "
            "VALUES ('delete', ?, ?, ?)",
            (rowid, text, grams),
        )
        assert not fts_consistent(conn)
    conn.close()
    assert search(root, "make") == []
    with open_memory(root) as m:
        report = m.sync_markdown()
        assert report.fts_rebuilt and report.changed
        assert zeros(m.sync_markdown())
    assert fts_ok(root) and search(root, "make") == ["Builds run with make"]


def test_cli_sync_markdown_json(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Builds run with make")
        m.add("Deploys go through fly")
    conn = db(root)
    with conn:
        conn.execute("DELETE FROM memories WHERE text = 'Builds run with make'")
    conn.close()
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", "sync-markdown", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=root.parent,
            timeout=60,
        )

    first = cli("--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["success"] is True and report["added"] == 1 and report["changed"] is True
    memory = next(t for t in report["targets"] if t["target"] == "memory")
    assert memory["added"] == 1 and memory["removed"] == 0
    second = cli("--json")
    assert second.returncode == 0
    assert json.loads(second.stdout)["changed"] is False
    human = cli()
    assert human.returncode == 0
    assert "0 added, 0 updated, 0 removed" in human.stdout and "memory:" in human.stdout


# --- a mirror equal to the fold on every column, after any sequence of operations -------------


class SyncMachine(DiskMachine):
    """The disk state machine, with days passing, checking that a rebuild finds nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.clock.step = timedelta(hours=7)

    # Moves without the simulated crash: the crash branch's own check reads the whole source
    # document, so it trips over an equal entry of another project; DiskMachine covers crashes.
    @rule(
        data=st.data(),
        project=st.sampled_from(PROJECTS),
        promote=st.booleans(),
        force=st.booleans(),
    )
    def move(  # type: ignore[override]
        self, data: Any, project: str, promote: bool, force: bool
    ) -> None:
        MemoryMachine.move(self, data, project, promote, force, False)

    def check_projection(self, doc: MemoryDocument) -> None:
        super().check_projection(doc)
        with self.storage.transaction() as uow:
            report = uow.projection.rebuild([doc])
        repair = report.of(doc.target)
        assert (repair.added, repair.updated, repair.removed, repair.kept_history) == (0,) * 4
        assert not report.fts_rebuilt
        expected = sum(1 for e in doc.active if e.target is Target.PROJECT and e.project is None)
        assert repair.skipped == expected


SyncMachine.TestCase.settings = settings(
    SyncMachine.TestCase.settings, stateful_step_count=20, max_examples=20
)
TestSyncMachine = SyncMachine.TestCase
