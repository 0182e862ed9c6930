"""The doctor, end to end: it reports what it should and changes nothing (ADR 0036)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pi_hermes_memory
from pi_hermes_memory.adapters.doctor import diagnose

from tests.support.embedding_server import FIXTURE_KEY, SECRET_PATH, EmbeddingServer

KEY_ENV = "PHM_TEST_EMBEDDING_KEY"


def write_config(root: Path, server: EmbeddingServer | None, **extra: Any) -> None:
    data: dict[str, Any] = dict(extra)
    if server is not None:
        data["embedding"] = {
            "provider": "openai-compatible",
            "baseUrl": server.url,
            "model": "fixture-embed",
            "apiKeyEnv": KEY_ENV,
            "timeoutMs": 2000,
        }
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(data))


def env(root: Path, key: str | None = FIXTURE_KEY) -> dict[str, str]:
    out = {"HOME": str(root.parent), "PI_CODING_AGENT_DIR": str(root)}
    if key is not None:
        out[KEY_ENV] = key
    return out


def cli(root: Path, *args: str, key: str | None = FIXTURE_KEY) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    environ.update(env(root, key))
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=root.parent,
        timeout=60,
    )


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file under the agent root; the SQLite shared-memory index is listed but
    not hashed (it is not data: a reader of a live WAL database updates its read marks)."""
    return {
        str(p.relative_to(root)): "present"
        if p.name.endswith("-shm")
        else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def build_store(root: Path, server: EmbeddingServer) -> None:
    """Vectors for some rows, one row without (the key was missing), a hand edit pending,
    a session file never indexed."""
    write_config(root, server)
    for project in ("web", "api"):
        (root.parent / project).mkdir(exist_ok=True)
    with pi_hermes_memory.open(cwd=root.parent / "web", environ=env(root)) as m:
        m.add("Production deploys use the blue green script", target="memory")
        m.add("Production deploys use the blue green script", target="project")
        m.add("The web app talks to the api over gRPC", target="project")
    with pi_hermes_memory.open(cwd=root.parent / "api", environ=env(root, key=None)) as m:
        m.add("The web app talks to the api over gRPC and json", target="project")
    memory_md = root / "pi-hermes-memory" / "MEMORY.md"
    with memory_md.open("a", encoding="utf-8") as f:
        f.write("§\nA hand written entry about the staging database\n")
    sessions = root / "sessions" / "--work--"
    sessions.mkdir(parents=True)
    (sessions / "s1.jsonl").write_text(
        json.dumps({"type": "session", "id": "s1", "cwd": str(root.parent / "web")}) + "\n"
    )


def test_the_doctor_reports_and_changes_nothing(root: Path, server: EmbeddingServer) -> None:
    build_store(root, server)
    server.reset()
    before = tree(root)
    assert not any(name.endswith(("-wal", "-shm")) for name in before)  # closed: no WAL

    report = diagnose(cwd=root.parent / "web", environ=env(root))
    cli_run = cli(root, "doctor", "--json")

    assert tree(root) == before  # no file created, changed or removed
    assert server.requests == []  # no provider call, no vector backfill
    targets = {t.target: t for t in report.targets}
    assert targets["memory"].pending_hand_edit_events >= 1
    assert targets["memory"].consistent and targets["project"].consistent
    assert targets["project"].markdown_active == targets["project"].sqlite_active == 3
    assert report.sessions.files == 1 and report.sessions.stale == 1
    current = {c.model: c.rows for c in report.coverage if c.current}
    assert current == {"openai-compatible/fixture-embed": 3}
    assert report.coverage_rows == 4
    near = report.near_duplicates
    assert near.rows == 4 and near.rows_with_vector == 3
    kinds = {(d.kind, d.basis) for d in near.shown}
    assert ("suspected duplicate", "cosine") in kinds  # web x global, both with vectors
    assert ("promotion candidate", "token") in kinds  # web x api, one without a vector
    assert near.total == len(near.shown) == 2
    assert report.healthy, report.problems

    assert cli_run.returncode == 0, cli_run.stderr
    data = json.loads(cli_run.stdout)
    assert data["healthy"] is True
    assert data["near_duplicates"]["total"] == 2
    assert FIXTURE_KEY not in cli_run.stdout and SECRET_PATH not in cli_run.stdout


def test_the_doctor_of_an_open_store_leaves_the_database_and_wal_bytes(
    root: Path, server: EmbeddingServer
) -> None:
    build_store(root, server)
    with pi_hermes_memory.open(cwd=root.parent / "web", environ=env(root)) as m:
        m.add("one more global note about caching", target="memory")
        before = tree(root)
        assert any(name.endswith("sessions.db-wal") for name in before)
        server.reset()
        report = m.doctor()
        assert tree(root) == before
        assert server.requests == []
        assert report.paths.project == "web"


def test_text_output_and_exit_codes(root: Path, server: EmbeddingServer) -> None:
    write_config(root, server)
    healthy = cli(root, "doctor")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "no cross-scope near-duplicates" in healthy.stdout
    assert "No problems found" in healthy.stdout

    missing_key = cli(root, "doctor", key=None)  # apiKeyEnv names a variable without a value
    assert missing_key.returncode == 1
    assert f"embedding.apiKeyEnv names {KEY_ENV}, which is unset or empty" in missing_key.stdout

    secret = "sk-never-print-this"
    with_key = cli(root, "doctor", "--json", key=secret)
    assert with_key.returncode == 0
    assert secret not in with_key.stdout + with_key.stderr
    assert SECRET_PATH not in with_key.stdout + with_key.stderr


def test_same_physical_root_is_a_problem(root: Path) -> None:
    write_config(root, None, memoryDir="shared", projectsMemoryDir="shared")
    result = cli(root, "doctor", "--json")
    assert result.returncode == 1
    problems = json.loads(result.stdout)["problems"]
    assert any("memoryDir" in p or "projectsMemoryDir" in p for p in problems)
    assert not (root / "shared").exists()  # nothing created


def test_an_unreadable_agent_root_exits_2(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "agent"
    not_a_folder.write_text("a file, not a folder")
    result = cli(not_a_folder, "doctor", "--json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["success"] is False
    assert "could not run" in result.stderr


def test_a_mirror_that_lost_a_row_is_a_problem(root: Path) -> None:
    import apsw

    root.mkdir(parents=True)
    with pi_hermes_memory.open(cwd=root.parent, environ=env(root, key=None)) as m:
        m.add("the staging database is postgres 16", target="memory")
        m.add("the cache is redis", target="memory")
    conn = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    with conn:
        conn.execute("DELETE FROM memories WHERE text = 'the cache is redis'")
    conn.close()
    result = cli(root, "doctor", "--json", key=None)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    memory = next(t for t in data["targets"] if t["target"] == "memory")
    assert (memory["missing"], memory["sqlite_active"], memory["markdown_active"]) == (1, 1, 2)
    assert memory["consistent"] is False
    assert any("sync-markdown" in p for p in data["problems"])
    assert cli(root, "sync-markdown", key=None).returncode == 0
    assert cli(root, "doctor", key=None).returncode == 0


def test_config_warnings_and_skill_problems_are_reported(root: Path) -> None:
    import apsw

    root.mkdir(parents=True)
    (root / "hermes-memory-config.json").write_text('{"memoryCharLimit": "lots"}')
    skills = root / "pi-hermes-memory" / "skills"
    good = "---\nname: deploy\ndescription: How to deploy\n---\n\n# Deploy\n\nRun it.\n"
    (skills / "deploy").mkdir(parents=True)
    (skills / "deploy" / "SKILL.md").write_text(good)
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("no front matter here")
    (root / "skills" / "deploy").mkdir(parents=True)  # the host agent's own skill
    (root / "skills" / "deploy" / "SKILL.md").write_text(good)
    with pi_hermes_memory.open(cwd=root.parent, project="web", environ=env(root)) as m:
        m.add("a first note", target="memory")
    conn = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    with conn:
        conn.execute(
            "INSERT INTO skill_visibility (project, skill_id, state) "
            "VALUES ('web', 'global:deploy', 'hidden')"
        )
    conn.close()
    result = cli(root, "doctor", "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert any(p.startswith("memoryCharLimit:") for p in data["problems"])
    assert data["paths"]["warnings"] and data["skills"]["skills"] == 2
    assert [u.split(":")[0].endswith("broken/SKILL.md") for u in data["skills"]["unreadable"]] == [
        True
    ]
    assert len(data["skills"]["shadowed"]) == 1 and "global:deploy" in data["skills"]["shadowed"][0]
    assert data["skills"]["hidden"] == {"web": ["global:deploy"]}
    text = cli(root, "doctor").stdout
    assert "hidden in web: global:deploy" in text and "shadowed: global:deploy" in text
