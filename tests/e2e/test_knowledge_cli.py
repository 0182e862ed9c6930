"""`pi-hermes-memory knowledge index|search|stats` and the knowledge tools, run as a real
process on a real folder (ADR 0048)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "api").mkdir(parents=True)
    (root / "README.md").write_text("# Project\n\nThe deploy uses blue green slots.\n")
    (root / "api" / "auth.md").write_text("# Auth\n\n## Tokens\n\nRotate tokens weekly.\n")
    (root / "中文.md").write_text("# 说明\n\n知识库支持中文检索。\n", encoding="utf-8")
    return root


def cli(tmp_path: Path, *args: str, paths: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_MEMORY_", "PI_CODING"))}
    env.update({"PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)})
    if paths is not None:
        env["PI_MEMORY_KNOWLEDGE_PATHS"] = paths
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_index_search_stats(tmp_path: Path, docs: Path) -> None:
    paths = json.dumps([str(docs)])
    done = cli(tmp_path, "knowledge", "index", paths=paths)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Indexed 3 files in 1 folders: 3 new, 0 changed")
    again = json.loads(cli(tmp_path, "knowledge", "index", "--json", paths=paths).stdout)
    assert (again["files_unchanged"], again["bytes_read"]) == (3, 0)
    found = cli(tmp_path, "knowledge", "search", "rotate tokens", paths=paths)
    assert found.returncode == 0, found.stderr
    first, snippet = found.stdout.splitlines()[:2]
    assert first.startswith(f"[1] {docs / 'api' / 'auth.md'}:3-5  § Auth > Tokens")
    assert snippet.strip() == "## Tokens Rotate tokens weekly."
    cjk = json.loads(cli(tmp_path, "knowledge", "search", "中文检索", "--json", paths=paths).stdout)
    assert [r["relative_path"] for r in cjk["results"]] == ["中文.md"]
    assert "untrusted" in cjk["message"] and cjk["untrusted"]
    filtered = cli(tmp_path, "knowledge", "search", "deploy", "--path", "api/", paths=paths)
    assert filtered.stdout.strip() == "(no matches)"
    stats = json.loads(cli(tmp_path, "knowledge", "stats", "--json", paths=paths).stdout)
    assert (stats["files"], stats["roots"], stats["embeddings"]) == (3, [str(docs)], False)
    # the database lives with the store's state, not in the indexed folder
    assert (tmp_path / "agent" / "pi-hermes-memory" / "knowledge.db").is_file()
    assert sorted(p.name for p in docs.iterdir()) == ["README.md", "api", "中文.md"]


def test_tools_through_the_cli(tmp_path: Path, docs: Path) -> None:
    paths = json.dumps([str(docs)])
    listed = cli(tmp_path, "tools", "--json", paths=paths)
    names = [t["function"]["name"] for t in json.loads(listed.stdout)]
    assert {"knowledge_search", "knowledge_index", "knowledge_stats"} <= set(names)
    without = cli(tmp_path, "tools", "--json", paths=None)
    assert not [t for t in json.loads(without.stdout) if "knowledge" in t["function"]["name"]]
    indexed = cli(tmp_path, "tool", "knowledge_index", "{}", paths=paths)
    assert json.loads(indexed.stdout)["report"]["files_new"] == 3
    hit = json.loads(
        cli(tmp_path, "tool", "knowledge_search", '{"query": "blue"}', paths=paths).stdout
    )
    assert hit["results"][0]["relative_path"] == "README.md"
    bad = cli(tmp_path, "tool", "knowledge_search", '{"query": "x", "limit": 99}', paths=paths)
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["status"] == "invalid_arguments"
    extra = cli(tmp_path, "tool", "knowledge_stats", '{"verbose": true}', paths=paths)
    assert json.loads(extra.stdout)["message"] == "unknown argument(s): verbose; it takes none"
    wordless = cli(tmp_path, "tool", "knowledge_search", '{"query": "!!!"}', paths=paths)
    assert json.loads(wordless.stdout)["status"] == "invalid_arguments"  # like memory_search
    none = cli(tmp_path, "tool", "knowledge_search", '{"query": "zzzq"}', paths=paths)
    assert json.loads(none.stdout)["message"] == "No knowledge-base chunks match 'zzzq'."


def test_errors_are_one_clear_line(tmp_path: Path) -> None:
    off = cli(tmp_path, "knowledge", "index", paths=None)
    assert off.returncode == 1
    assert "no knowledge folders are configured" in off.stderr and "Traceback" not in off.stderr
    bad = cli(tmp_path, "knowledge", "stats", paths="/a,/b")
    assert "PI_MEMORY_KNOWLEDGE_PATHS: expected a JSON array" in bad.stderr
    assert bad.returncode == 1
    usage = cli(tmp_path, "knowledge", "search", "x", "--limit", "0", paths="[]")
    assert usage.returncode == 2


def test_a_symlink_never_exposes_an_ignored_folder_nor_renames_a_file(
    tmp_path: Path, docs: Path
) -> None:
    # qa15: `notes -> private` indexed the .gitignored folder, `a-api -> api` indexed api/
    # under the link's name so `--path api/` found nothing
    (docs / ".gitignore").write_text("private/\n")
    (docs / "private").mkdir()
    (docs / "private" / "plan.md").write_text("the private rollout plan\n")
    os.symlink(docs / "private", docs / "notes")
    os.symlink(docs / "api", docs / "a-api")
    paths = json.dumps([str(docs)])
    done = cli(tmp_path, "knowledge", "index", paths=paths)
    assert done.returncode == 0, done.stderr
    assert "already_seen 2" in done.stdout
    hidden = cli(tmp_path, "knowledge", "search", "rollout", paths=paths)
    assert hidden.stdout.strip() == "(no matches)"
    args = ("knowledge", "search", "rotate", "--path", "api/", "--json")
    found = json.loads(cli(tmp_path, *args, paths=paths).stdout)
    assert [r["relative_path"] for r in found["results"]] == ["api/auth.md"]
