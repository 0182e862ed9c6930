"""The legacy layout migration at open (ADR 0013), on real directories.

One test per row of the seed's migration table, plus idempotence, no resurrection of deleted
entries, attribution, names that are not projects, and bytes that are never lost.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.files.legacy_layout import (
    MOVE_MARKER_NAME,
    MigrationReport,
    migrate_legacy_layout,
    skill_slug,
)
from pi_hermes_memory.adapters.markdown.format import parse_document
from pi_hermes_memory.adapters.markdown.store import LOCK_FILE_NAME, MarkdownFiles
from pi_hermes_memory.domain.memory.model import Target


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "agent"
    path.mkdir()
    return path


def open_memory(root: Path, project: str = "alpha") -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, cwd=root.parent, project=project, environ={"HOME": str(root.parent)}
    )


def migrate(root: Path, memory_dir: Path | None = None) -> MigrationReport:
    memory_dir = memory_dir or root / "pi-hermes-memory"
    projects = root / "projects-memory"
    return migrate_legacy_layout(
        agent_root=root,
        memory_dir=memory_dir,
        projects_dir=projects,
        lock=MarkdownFiles(memory_dir, projects).lock(),
    )


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def flat(root: Path) -> Path:
    return root / "projects-memory" / "MEMORY.md"


def flat_entries(root: Path) -> list[tuple[str | None, str]]:
    text = flat(root).read_text(encoding="utf-8")
    return [(e.project, e.text) for e in parse_document(text, target=Target.PROJECT).entries]


def mirror_rows(root: Path, target: str = "project") -> set[tuple[str | None, str]]:
    conn = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        return {
            (r[0], r[1])
            for r in conn.execute(
                "SELECT project, text FROM memories WHERE target = ? AND superseded_by IS NULL",
                (target,),
            )
        }
    finally:
        conn.close()


def tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != LOCK_FILE_NAME
    }


# --- row 1: <agentRoot>/memory -> <agentRoot>/pi-hermes-memory ---------------------------------


def test_old_memory_dir_moves_to_the_new_default(root: Path) -> None:
    old = root / "memory"
    write(old / "MEMORY.md", "Builds use make <!-- created=2026-01-02, last=2026-01-03 -->\n")
    write(old / "USER.md", "Prefers tabs\n")
    write(old / "skills" / "deploy" / "SKILL.md", "# deploy\n")
    before = tree(old)
    report = migrate(root)
    new = root / "pi-hermes-memory"
    assert not old.exists()
    assert tree(new) == before  # every byte, same names
    assert {m.destination.name for m in report.moved} == {"MEMORY.md", "USER.md", "skills"}
    assert report.warnings == ()
    assert not (new / MOVE_MARKER_NAME).exists()
    with open_memory(root) as m:
        assert [e.text for e in m.entries("memory")] == ["Builds use make"]
        assert m.entries("memory")[0].created.isoformat() == "2026-01-02"
        assert [e.text for e in m.entries("user")] == ["Prefers tabs"]
        assert m.warnings == ()


def test_old_dir_is_left_when_the_new_one_exists(root: Path) -> None:
    write(root / "memory" / "MEMORY.md", "old fact\n")
    write(root / "pi-hermes-memory" / "MEMORY.md", "new fact\n")
    with open_memory(root) as m:
        assert [e.text for e in m.entries("memory")] == ["new fact"]
        assert any("memory was left in place" in w and "already exists" in w for w in m.warnings)
    assert (root / "memory" / "MEMORY.md").read_text() == "old fact\n"


def test_old_dir_moves_when_the_new_one_holds_only_our_lock(root: Path) -> None:
    write(root / "memory" / "MEMORY.md", "old fact\n")
    write(root / "pi-hermes-memory" / LOCK_FILE_NAME, b"")
    with open_memory(root) as m:
        assert [e.text for e in m.entries("memory")] == ["old fact"]
        assert m.warnings == ()
    assert not (root / "memory").exists()


def test_an_interrupted_dir_move_is_finished(root: Path) -> None:
    write(root / "memory" / "USER.md", "user fact\n")
    new = root / "pi-hermes-memory"
    write(new / "MEMORY.md", "moved before the crash\n")
    write(new / MOVE_MARKER_NAME, b"")
    report = migrate(root)
    assert report.warnings == ()
    assert (new / "USER.md").read_text() == "user fact\n"
    assert (new / "MEMORY.md").read_text() == "moved before the crash\n"
    assert not (root / "memory").exists() and not (new / MOVE_MARKER_NAME).exists()


def test_a_custom_memory_dir_leaves_the_old_dir_alone(root: Path) -> None:
    write(root / "hermes-memory-config.json", json.dumps({"memoryDir": "custom"}))
    write(root / "memory" / "MEMORY.md", "old global fact\n")
    with open_memory(root, "memory") as m:
        assert m.entries("memory") == []
        # the old global MEMORY.md is not mistaken for the project "memory" either
        assert m.entries("project") == []
    assert (root / "memory" / "MEMORY.md").read_text() == "old global fact\n"
    # an empty project file, no entry; its version line (ADR 0022) in the sidecar (ADR 0077)
    assert flat(root).read_text() == ""
    sidecar = flat(root).with_name(".MEMORY.md.meta").read_text()
    assert sidecar.split("\n")[2].startswith("<!-- pi-hermes-memory: project v0, ")
    assert sidecar.count("\n") == 3


# --- row 2: <memoryDir>/skills/*.md -> <memoryDir>/skills/<slug>/SKILL.md ----------------------


def test_flat_skills_move_into_slug_folders(root: Path) -> None:
    skills = root / "pi-hermes-memory" / "skills"
    write(skills / "Deploy To Fly.md", "# Deploy\nsteps\n")
    write(skills / "café_notes.md", "# Café\n")
    write(skills / "existing" / "SKILL.md", "# kept\n")
    write(skills / "Existing.md", "# would overwrite\n")
    write(skills / "技能.md", "# no latin letters\n")
    write(skills / ".hidden.md", "hidden\n")
    write(skills / "notes.txt", "not a skill\n")
    report = migrate(root)
    assert (skills / "deploy-to-fly" / "SKILL.md").read_text() == "# Deploy\nsteps\n"
    assert (skills / "cafe-notes" / "SKILL.md").read_text() == "# Café\n"
    assert not (skills / "Deploy To Fly.md").exists()
    # never overwritten, never dropped
    assert (skills / "existing" / "SKILL.md").read_text() == "# kept\n"
    assert (skills / "Existing.md").read_text() == "# would overwrite\n"
    assert (skills / "技能.md").exists() and (skills / ".hidden.md").exists()
    assert (skills / "notes.txt").exists()
    assert len(report.moved) == 2
    assert {s.path.name for s in report.skipped} == {"Existing.md", "技能.md"}
    assert len(report.warnings) == 2


def test_skills_of_the_old_dir_are_moved_then_split(root: Path) -> None:
    write(root / "memory" / "skills" / "review.md", "# Review\n")
    migrate(root)
    assert (root / "pi-hermes-memory" / "skills" / "review" / "SKILL.md").read_text() == (
        "# Review\n"
    )


@pytest.mark.parametrize(
    ("stem", "slug"),
    [
        ("Deploy To Fly", "deploy-to-fly"),
        ("already-a-slug", "already-a-slug"),
        ("  --Weird__Name!!  ", "weird-name"),
        ("Crème brûlée", "creme-brulee"),
        ("日本語", ""),
        ("a" * 80, "a" * 64),
    ],
)
def test_skill_slug(stem: str, slug: str) -> None:
    assert skill_slug(stem) == slug


# --- rows 3 and 4: per-project MEMORY.md -> projects-memory/MEMORY.md --------------------------


LEGACY_ALPHA = (
    "Alpha deploys with fly <!-- created=2026-03-01, last=2026-03-02 -->\n"
    "§\n"
    "Shared runner note <!-- created=2026-03-01, last=2026-03-01, project=beta -->\n"
    "§\n"
    "Hand-written alpha note\n"
)


def test_agent_root_project_file_is_merged_with_attribution(root: Path) -> None:
    source = write(root / "alpha" / "MEMORY.md", LEGACY_ALPHA)
    original = source.read_bytes()
    report = migrate(root)
    assert flat_entries(root) == [
        ("alpha", "Alpha deploys with fly"),
        ("beta", "Shared runner note"),  # an existing attribution is kept
        ("alpha", "Hand-written alpha note"),
    ]
    assert "created=2026-03-01, last=2026-03-02, project=alpha" in flat(root).read_text()
    migrated = root / "alpha" / "MEMORY.md.migrated"
    assert not source.exists() and migrated.read_bytes() == original
    assert [(m.project, m.added, m.duplicates) for m in report.merged] == [("alpha", 3, 0)]
    assert [r.destination for r in report.renamed] == [migrated]
    with open_memory(root, "alpha") as m:
        assert [e.text for e in m.entries("project")] == [
            "Alpha deploys with fly",
            "Hand-written alpha note",
        ]
        assert m.entries("project")[0].created.isoformat() == "2026-03-01"
        assert m.warnings == ()
    assert mirror_rows(root) == {
        ("alpha", "Alpha deploys with fly"),
        ("beta", "Shared runner note"),
        ("alpha", "Hand-written alpha note"),
    }


def test_projects_memory_subdir_file_is_merged(root: Path) -> None:
    source = write(root / "projects-memory" / "beta" / "MEMORY.md", "Beta uses pnpm\n")
    with open_memory(root, "beta") as m:
        assert [(e.project, e.text) for e in m.entries("project")] == [("beta", "Beta uses pnpm")]
    assert not source.exists()
    assert source.with_name("MEMORY.md.migrated").read_text() == "Beta uses pnpm\n"
    assert mirror_rows(root) == {("beta", "Beta uses pnpm")}


def test_the_flat_files_own_entries_are_untouched(root: Path) -> None:
    own = (
        "Gamma fact <!-- created=2026-01-01, last=2026-01-01, project=gamma -->\n"
        "§\n"
        "Unattributed old note"  # no trailing newline, no metadata
    )
    write(flat(root), own)
    write(root / "alpha" / "MEMORY.md", "Alpha fact\n")
    migrate(root)
    data = flat(root).read_text(encoding="utf-8")
    assert data.startswith(own + "\n§\n")
    assert flat_entries(root) == [
        ("gamma", "Gamma fact"),
        (None, "Unattributed old note"),
        ("alpha", "Alpha fact"),
    ]


def test_a_flat_file_of_the_typescript_extension_gets_project64_entries(root: Path) -> None:
    # ADR 0027: the TypeScript extension (0.9.x) reads only `project64=` attributions
    own = "Gamma fact <!-- created=2026-01-01, last=2026-01-01, project64=Z2FtbWE -->"
    write(flat(root), own)
    write(root / "alpha" / "MEMORY.md", "Alpha fact <!-- created=2026-02-01, last=2026-02-02 -->\n")
    migrate(root)
    assert flat(root).read_text(encoding="utf-8").splitlines() == [
        own,
        "§",
        "Alpha fact <!-- created=2026-02-01, last=2026-02-02, project64=YWxwaGE -->",
    ]
    assert flat_entries(root) == [("gamma", "Gamma fact"), ("alpha", "Alpha fact")]


def test_entries_already_present_for_the_project_are_not_appended_twice(root: Path) -> None:
    write(flat(root), "Alpha fact <!-- created=2026-01-01, last=2026-01-01, project=alpha -->\n")
    write(root / "alpha" / "MEMORY.md", "Alpha   fact\n§\nAlpha second\n§\nAlpha second\n")
    write(root / "beta" / "MEMORY.md", "Alpha fact\n")  # same text, other project: kept
    report = migrate(root)
    assert flat_entries(root) == [
        ("alpha", "Alpha fact"),
        ("alpha", "Alpha second"),
        ("beta", "Alpha fact"),
    ]
    assert [(m.project, m.added, m.duplicates) for m in report.merged] == [
        ("alpha", 1, 2),
        ("beta", 1, 0),
    ]
    assert len(report.renamed) == 2


def test_a_crash_before_the_rename_does_not_duplicate(root: Path) -> None:
    write(root / "alpha" / "MEMORY.md", "Alpha fact\n")
    migrate(root)
    merged = flat(root).read_bytes()
    # the rename is lost (as if the process died right after writing the flat file)
    (root / "alpha" / "MEMORY.md.migrated").rename(root / "alpha" / "MEMORY.md")
    report = migrate(root)
    assert flat(root).read_bytes() == merged
    assert [(m.added, m.duplicates) for m in report.merged] == [(0, 1)]
    assert (root / "alpha" / "MEMORY.md.migrated").exists()


def test_a_second_source_never_overwrites_a_retired_one(root: Path) -> None:
    write(root / "alpha" / "MEMORY.md", "first\n")
    migrate(root)
    write(root / "alpha" / "MEMORY.md", "second\n")  # an old tool wrote the file again
    migrate(root)
    assert (root / "alpha" / "MEMORY.md.migrated").read_text() == "first\n"
    assert (root / "alpha" / "MEMORY.md.migrated-2").read_text() == "second\n"
    assert [t for _, t in flat_entries(root)] == ["first", "second"]


# --- idempotence and no resurrection ------------------------------------------------------------


def test_a_second_run_does_nothing(root: Path) -> None:
    write(root / "memory" / "MEMORY.md", "global fact\n")
    write(root / "memory" / "skills" / "lint.md", "# lint\n")
    write(root / "alpha" / "MEMORY.md", "Alpha fact\n")
    write(root / "projects-memory" / "beta" / "MEMORY.md", "Beta fact\n")
    with open_memory(root):
        pass
    snapshot = tree(root)
    assert migrate(root) == MigrationReport()
    with open_memory(root) as m:
        assert m.warnings == ()
    after = tree(root)
    assert {k: v for k, v in after.items() if "sessions.db" not in k} == {
        k: v for k, v in snapshot.items() if "sessions.db" not in k
    }


def test_an_entry_deleted_after_migration_stays_deleted(root: Path) -> None:
    write(root / "alpha" / "MEMORY.md", "Keep me\n§\nDelete me\n")
    with open_memory(root) as m:
        assert [e.text for e in m.entries("project")] == ["Keep me", "Delete me"]
    text = flat(root).read_text(encoding="utf-8")
    kept = [b for b in text.split("\n§\n") if not b.startswith("Delete me")]
    flat(root).write_text("\n§\n".join(kept), encoding="utf-8")
    for _ in range(2):
        with open_memory(root) as m:
            assert [e.text for e in m.entries("project")] == ["Keep me"]
    assert [t for _, t in flat_entries(root)] == ["Keep me"]
    assert mirror_rows(root) == {("alpha", "Keep me")}


def test_a_missing_flat_file_is_rendered_before_the_merge(root: Path) -> None:
    with open_memory(root) as m:
        m.add("Journal fact", target="project")
    flat(root).unlink()  # gone, while the journal still holds its entry
    write(root / "alpha" / "MEMORY.md", "Legacy fact\n")
    with open_memory(root) as m:
        assert sorted(e.text for e in m.entries("project")) == ["Journal fact", "Legacy fact"]
        assert m.warnings == ()
    assert [t for _, t in flat_entries(root)] == ["Journal fact", "Legacy fact"]


# --- what is not a project, and bytes that are never lost -------------------------------------


def test_directories_that_are_not_projects_are_ignored(root: Path) -> None:
    ignored = [
        root / "a,b" / "MEMORY.md",
        root / "x<y" / "MEMORY.md",
        root / " padded" / "MEMORY.md",
        root / ".hidden" / "MEMORY.md",
        root / "sessions" / "MEMORY.md",
        root / "skills" / "MEMORY.md",
        root / "projects-memory" / ".cache" / "MEMORY.md",
    ]
    for path in ignored:
        write(path, f"not project memory ({path.parent.name})\n")
    # an earlier memory directory: its MEMORY.md is global memory, not a project's
    write(root / "oldmem" / "MEMORY.md", "global fact\n")
    write(root / "oldmem" / "USER.md", "user fact\n")
    unsafe_sub = write(root / "projects-memory" / "p<q" / "MEMORY.md", "unsafe\n")
    everything = [*ignored, root / "oldmem" / "MEMORY.md", unsafe_sub]
    before = {path: path.read_bytes() for path in everything}
    report = migrate(root)
    assert {path: path.read_bytes() for path in everything} == before
    assert report.merged == () and report.renamed == ()
    assert not flat(root).exists()
    reasons = {s.path: s.reason for s in report.skipped}
    assert "safe project name" in reasons[unsafe_sub]
    assert "memory directory" in reasons[root / "oldmem" / "MEMORY.md"]


def test_a_source_that_is_not_utf8_is_left_in_place(root: Path) -> None:
    bad = write(root / "alpha" / "MEMORY.md", b"caf\xe9 latin-1\n")
    write(root / "beta" / "MEMORY.md", "Beta fact\n")
    with open_memory(root, "beta") as m:
        assert [e.text for e in m.entries("project")] == ["Beta fact"]
        assert any(str(bad) in w and "UTF-8" in w for w in m.warnings)
    assert bad.read_bytes() == b"caf\xe9 latin-1\n"
    assert not bad.with_name("MEMORY.md.migrated").exists()


def test_a_flat_file_that_is_not_utf8_blocks_the_merge(root: Path) -> None:
    write(flat(root), b"\xff\xfe broken\n")
    source = write(root / "alpha" / "MEMORY.md", "Alpha fact\n")
    report = migrate(root)
    assert flat(root).read_bytes() == b"\xff\xfe broken\n"
    assert source.read_text() == "Alpha fact\n"
    assert report.merged == () and any("not valid UTF-8" in w for w in report.warnings)


def test_nothing_to_migrate_takes_no_lock_and_creates_nothing(root: Path) -> None:
    assert migrate(root) == MigrationReport()
    assert list(root.iterdir()) == []
