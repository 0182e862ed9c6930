"""The knowledge base is no secret dump (issue 26 §2, ADR 0063): on a real folder, through the
CLI in a child process, the public API on the real SQLite file and the REST route of a real
server, secrets are redacted in what is stored (the database file and its WAL) and in what is
returned, and the answers say so; refused roots name their rule (config file and
PI_MEMORY_KNOWLEDGE_PATHS); the index budget stops a run with a message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pi_hermes_memory
import pytest

from tests.support.memory_server import running
from tests.support.secret_documents import Secrets, secrets, write_secret_folder

DB = Path("pi-hermes-memory") / "knowledge.db"


def cli(
    tmp: Path, *args: str, paths: str | None = None, config: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    agent = tmp / "agent"
    agent.mkdir(exist_ok=True)
    if config is not None:
        (agent / "hermes-memory-config.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_MEMORY_", "PI_CODING"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent), "HOME": str(tmp / "home")})
    if paths is not None:
        env["PI_MEMORY_KNOWLEDGE_PATHS"] = paths
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=120,
    )


def stored_bytes(agent: Path) -> bytes:
    """The index file and whatever WAL and shared-memory files sit beside it."""
    db = agent / DB
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())


def assert_free_of(data: str | bytes, found: Secrets) -> None:
    for secret in found.all():
        needle = secret.encode() if isinstance(data, bytes) else secret
        assert needle not in data, f"a secret ({secret[:4]}…) is in the output"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_cli_index_and_search_redact_and_say_so(tmp_path: Path, home: Path) -> None:
    found = secrets("cli")
    docs = write_secret_folder(home / "docs", found)
    paths = json.dumps([str(docs)])
    indexed = cli(tmp_path, "knowledge", "index", paths=paths)
    assert indexed.returncode == 0, indexed.stderr
    assert "Redacted: 4 secrets in 3 chunks" in indexed.stdout
    assert_free_of(indexed.stdout + indexed.stderr, found)
    for query in ("CI token rotate", "aws secret access key", "staging database password"):
        shown = cli(tmp_path, "knowledge", "search", query, paths=paths)
        assert shown.returncode == 0, shown.stderr
        assert " redacted]" in shown.stdout.splitlines()[0]
        assert "[REDACTED " in shown.stdout
        assert_free_of(shown.stdout + shown.stderr, found)
        data = json.loads(cli(tmp_path, "knowledge", "search", query, "--json", paths=paths).stdout)
        assert data["results"][0]["redacted"] >= 1 and data["redacted"] >= 1
        assert "replaced by [REDACTED rule] markers" in data["message"]
        assert_free_of(json.dumps(data), found)
    flagged = json.loads(
        cli(tmp_path, "knowledge", "search", "forum page", "--json", paths=paths).stdout
    )
    assert flagged["results"][0]["flags"] == ["prompt_injection"]
    assert "[flagged: prompt_injection]" in flagged["message"]
    stats = json.loads(cli(tmp_path, "knowledge", "stats", "--json", paths=paths).stdout)
    assert stats["secrets_redacted"] == 4
    assert_free_of(stored_bytes(tmp_path / "agent"), found)
    # the documents themselves are untouched
    assert found.github in (docs / "deploy.md").read_text()


def test_the_database_and_its_wal_never_hold_a_secret(tmp_path: Path, home: Path) -> None:
    found = secrets("wal")
    docs = write_secret_folder(home / "docs", found)
    agent = tmp_path / "agent"
    (agent).mkdir()
    (agent / "hermes-memory-config.json").write_text(
        json.dumps({"knowledge": {"paths": [str(docs)]}})
    )
    env = {"HOME": str(home)}
    with pi_hermes_memory.open(agent_root=agent, cwd=tmp_path, environ=env) as memory:
        report = memory.knowledge.index()
        assert (report.secrets_redacted, report.chunks_redacted) == (4, 3)
        hits = memory.knowledge.search("CI token")
        assert hits[0].redacted == 1 and "[REDACTED github-pat]" in hits[0].text
        assert (agent / DB).with_name("knowledge.db-wal").is_file()  # still open: WAL in use
        assert_free_of(stored_bytes(agent), found)
        # a document edited to hold a new secret: re-indexed, still redacted
        (docs / "clean.md").write_text(f"# Runbook\n\nPager token {found.github}\n")
        assert memory.knowledge.index().secrets_redacted == 1
        assert_free_of(stored_bytes(agent), found)
    assert_free_of(stored_bytes(agent), found)


def test_rest_search_redacts_and_says_so(tmp_path: Path) -> None:
    found = secrets("rest")
    docs = write_secret_folder(tmp_path / "docs", found)
    env = {"PI_MEMORY_KNOWLEDGE_PATHS": json.dumps([str(docs)])}
    with running(tmp_path / "srv", env=env) as srv, httpx.Client(base_url=srv.url) as c:
        report = c.post("/api/knowledge/index", json={}, timeout=60)
        assert report.status_code == 200, report.text
        assert report.json()["data"]["secrets_redacted"] == 4
        for query in ("CI token", "aws secret access key", "database password"):
            answer = c.post("/api/knowledge/search", json={"query": query}, timeout=60)
            assert answer.status_code == 200, answer.text
            data = answer.json()["data"]
            assert data["redacted"] >= 1 and data["results"][0]["redacted"] >= 1
            assert_free_of(answer.text, found)
        assert_free_of(stored_bytes(srv.root), found)


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        ("/", "filesystem_root"),
        ("~", "home_directory"),
        ("{tmp}", "holds_home_directory"),
        ("/etc", "system_folder"),
        ("/usr", "system_folder"),
        ("{tmp}/agent", "agent_root"),
        ("{tmp}/agent/pi-hermes-memory", "memory_folder"),
        ("{tmp}/to-etc", "system_folder"),  # a symlink to /etc
        ("{tmp}/to-home", "home_directory"),  # a symlink to the home directory
    ],
)
def test_refused_roots_through_the_environment(
    tmp_path: Path, home: Path, entry: str, rule: str
) -> None:
    (tmp_path / "to-etc").symlink_to("/etc")
    (tmp_path / "to-home").symlink_to(home)
    (home / "docs").mkdir()
    paths = json.dumps([str(home / "docs"), entry.format(tmp=tmp_path)])
    for action in ("index", "search"):
        args = ("knowledge", action) + (("anything",) if action == "search" else ())
        done = cli(tmp_path, *args, paths=paths)
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert f"is refused by the rule {rule}" in done.stderr
        assert "entry 2 of knowledge.paths" in done.stderr
        if entry.startswith("{tmp}/to-"):
            assert "through a symlink" in done.stderr
    assert not (tmp_path / "agent" / DB).exists()  # nothing was read, nothing stored


def test_refused_root_through_the_config_file_and_rest(tmp_path: Path) -> None:
    config = {"knowledge": {"paths": ["/"]}}
    done = cli(tmp_path, "knowledge", "index", config=config)
    assert done.returncode == 1
    assert "is refused by the rule filesystem_root: it is the file system root (/)" in done.stderr
    (tmp_path / "srv" / "agent").mkdir(parents=True)
    (tmp_path / "srv" / "agent" / "hermes-memory-config.json").write_text(json.dumps(config))
    with running(tmp_path / "srv") as srv, httpx.Client(base_url=srv.url) as c:
        answer = c.post("/api/knowledge/index", json={}, timeout=60)
        assert answer.status_code == 503
        assert "filesystem_root" in answer.json()["error"]


def test_the_budget_stops_the_index_and_says_what_was_left(tmp_path: Path, home: Path) -> None:
    docs = home / "docs"
    docs.mkdir()
    for i in range(5):
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\nPager rotation {i}.\n")
    paths = json.dumps([str(docs)])
    small = {"knowledge": {"maxIndexFiles": 2}}
    done = cli(tmp_path, "knowledge", "index", paths=paths, config=small)
    assert done.returncode == 0, done.stderr
    assert "reached its budget (knowledge.maxIndexFiles 2 files" in done.stderr
    assert (
        "2 files (" in done.stderr and "3 files (" in done.stderr and "were left out" in done.stderr
    )
    report = json.loads(cli(tmp_path, "knowledge", "index", "--json", paths=paths).stdout)
    budget = report["budget"]
    assert (budget["exceeded"], budget["files_left"], report["files_indexed"]) == (True, 3, 2)
    assert "Raise knowledge.maxIndexFiles" in budget["message"]
    stats = json.loads(cli(tmp_path, "knowledge", "stats", "--json", paths=paths).stdout)
    assert stats["files"] == 2
    by_bytes = {"knowledge": {"maxIndexBytes": 60}}
    report = json.loads(
        cli(tmp_path, "knowledge", "index", "--json", paths=paths, config=by_bytes).stdout
    )
    assert report["budget"]["exceeded"] and report["files_indexed"] == 2
    assert report["bytes_indexed"] <= 60 < report["bytes_indexed"] + report["budget"]["bytes_left"]
    report = json.loads(
        cli(tmp_path, "knowledge", "index", "--json", paths=paths, config={}).stdout
    )
    assert (report["budget"]["exceeded"], report["files_indexed"]) == (False, 5)
    assert "budget" not in cli(tmp_path, "knowledge", "index", paths=paths).stderr
