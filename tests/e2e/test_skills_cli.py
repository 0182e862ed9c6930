"""The skill commands of the installed `pi-hermes-memory` console script, on real folders:
`tool skill`, `skills list|view|discover`, `skill-visibility`, `skill-stats`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SCRIPT = Path(sys.executable).with_name("pi-hermes-memory")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A working directory: its name, `shop`, is the current project."""
    path = tmp_path / "shop"
    path.mkdir()
    return path


def cli(root: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.exists(), f"the console script is not installed beside {sys.executable}"
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def ok_json(root: Path, cwd: Path, *args: str) -> Any:
    done = cli(root, cwd, *args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout)


def create(root: Path, cwd: Path, scope: str, name: str, description: str) -> str:
    out = ok_json(
        root,
        cwd,
        "tool",
        "skill",
        json.dumps(
            {
                "action": "create",
                "scope": scope,
                "name": name,
                "description": description,
                "when_to_use": f"When you need to {description.lower()}",
                "procedure_steps": ["Read the notes", "Do the work"],
                "pitfalls": ["Do not skip the check"],
                "verification_steps": ["Check the result"],
            }
        ),
    )
    assert out["status"] == "created"
    return str(out["skill_id"])


def test_create_list_view_use_discover_and_stats(root: Path, repo: Path) -> None:
    bisect = create(root, repo, "global", "Git bisect", "Find the commit that broke a test")
    deploy = create(root, repo, "project", "Deploy shop", "Ship the shop to staging")
    assert (bisect, deploy) == ("global:git-bisect", "project:shop:deploy-shop")
    global_md = root / "pi-hermes-memory" / "skills" / "git-bisect" / "SKILL.md"
    project_md = root / "projects-memory" / "shop" / "skills" / "deploy-shop" / "SKILL.md"
    assert global_md.is_file() and project_md.is_file()
    wrote = ok_json(
        root,
        repo,
        "tool",
        "skill",
        json.dumps(
            {
                "action": "write_file",
                "skill_id": deploy,
                "path": "references/hosts.md",
                "content": "staging only",
            }
        ),
    )
    assert wrote["status"] == "file_written"

    listed = cli(root, repo, "skills")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("global:git-bisect  global  v1  ") and lines[0].endswith(
        "Git bisect"
    )
    assert lines[1].startswith("project:shop:deploy-shop  project  v1  ")
    as_json = ok_json(root, repo, "skills", "list", "--json")
    assert [(s["id"], s["version"], s["hidden"]) for s in as_json["skills"]] == [
        (bisect, 1, False),
        (deploy, 1, False),
    ]
    assert as_json["skills"][1]["path"] == str(project_md)

    viewed = cli(root, repo, "skills", "view", deploy)
    assert viewed.returncode == 0, viewed.stderr
    assert viewed.stdout.startswith(f"# {project_md}\n---\nname: deploy-shop\n")
    assert "1. Read the notes" in viewed.stdout
    assert viewed.stdout.rstrip().endswith("Support files: references/hosts.md")
    view_json = ok_json(root, repo, "skills", "view", deploy, "--json")
    assert view_json["skill"]["files"] == ["references/hosts.md"]
    assert view_json["skill"]["content"] == project_md.read_text()

    # view records nothing; use records one piece of usage evidence
    before = ok_json(root, repo, "skill-stats", "--json")
    assert before["skills"] == [
        {**row, "loads": 0, "usage": {**row["usage"], "count": 0}} for row in before["skills"]
    ]
    used = ok_json(
        root,
        repo,
        "tool",
        "skill",
        json.dumps({"action": "use", "skill_id": deploy, "task_domain": "deployment"}),
    )
    assert used["status"] == "ok" and used["skill"]["id"] == deploy

    offered = ok_json(root, repo, "skills", "discover", "--json")
    assert [s["id"] for s in offered["skills"]] == [bisect, deploy]
    assert offered["skills"][0]["path"] == str(global_md)

    stats = ok_json(root, repo, "skill-stats", "--since-days", "1", "--json")
    assert "never that it was used or that it worked" in stats["note"]
    assert stats["window"]["since_days"] == 1
    assert stats["window"]["first_day"] == stats["window"]["last_day"]
    rows = {r["id"]: r for r in stats["skills"]}
    assert rows[bisect]["loads"] == 1 and rows[bisect]["usage"]["count"] == 0
    assert rows[bisect]["promotion"]["status"] == "not_applicable"
    assert rows[deploy]["loads"] == 1
    assert rows[deploy]["usage"]["count"] == 1
    assert rows[deploy]["usage"]["task_domains"] == [{"task_domain": "deployment", "count": 1}]
    assert rows[deploy]["usage"]["last_used"] is not None
    assert rows[deploy]["governance"] is None
    promotion = rows[deploy]["promotion"]
    assert promotion["status"] == "not_candidate"
    uses = next(c for c in promotion["criteria"] if c["name"] == "same-domain-uses")
    assert (uses["actual"], uses["required"], uses["passed"]) == (1, 3, False)

    # the same through the tool, and the text form explains one skill in full
    tool = ok_json(root, repo, "tool", "memory_skill_stats", json.dumps({"since_days": 1}))
    assert tool == stats
    text = cli(root, repo, "skill-stats", "--skill", deploy)
    assert text.returncode == 0, text.stderr
    assert "loads (offered): 1" in text.stdout
    assert "a load means only that the skill was offered" in text.stdout
    assert "[NO] same-domain-uses: 1 (needs >= 3)" in text.stdout
    assert "git-bisect" not in text.stdout


def test_visibility_hide_show_reset_changes_skills_list(root: Path, repo: Path) -> None:
    bisect = create(root, repo, "global", "Git bisect", "Find the commit that broke a test")
    create(root, repo, "global", "Profile python", "Measure where a program spends time")

    def marks() -> dict[str, bool]:
        return {s["id"]: s["hidden"] for s in ok_json(root, repo, "skills", "--json")["skills"]}

    def visibility(*extra: str) -> dict[str, str]:
        out = ok_json(root, repo, "skill-visibility", "list", "--json", *extra)
        return {s["id"]: s["visibility"] for s in out["skills"]}

    assert visibility() == {bisect: "default", "global:profile-python": "default"}
    hidden = cli(root, repo, "skill-visibility", "hide", bisect)
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout.strip() == f"hide: {bisect} for project shop."
    assert marks() == {bisect: True, "global:profile-python": False}
    assert "(hidden in shop)" in cli(root, repo, "skills").stdout.splitlines()[0]
    offered = ok_json(root, repo, "skills", "discover", "--json")["skills"]
    assert [s["id"] for s in offered] == ["global:profile-python"]
    assert visibility()[bisect] == "hidden"

    assert cli(root, repo, "skill-visibility", "show", bisect).returncode == 0
    assert marks()[bisect] is False and visibility()[bisect] == "shown"
    assert cli(root, repo, "skill-visibility", "reset", bisect).returncode == 0
    assert visibility()[bisect] == "default"

    # another project's choice: --for-project targets it, the current project is untouched
    assert (
        cli(root, repo, "skill-visibility", "hide", bisect, "--for-project", "web").returncode == 0
    )
    assert visibility("--for-project", "web")[bisect] == "hidden"
    assert marks()[bisect] is False
    assert ok_json(root, repo, "--project", "web", "skills", "--json")["skills"][0]["hidden"]

    # a project skill cannot be hidden: the command ran and failed
    deploy = create(root, repo, "project", "Deploy shop", "Ship the shop to staging")
    refused = cli(root, repo, "skill-visibility", "hide", deploy, "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["status"] == "invalid"


def test_a_hand_edit_of_skill_md_is_seen_by_view(root: Path, repo: Path) -> None:
    deploy = create(root, repo, "project", "Deploy shop", "Ship the shop to staging")
    path = root / "projects-memory" / "shop" / "skills" / "deploy-shop" / "SKILL.md"
    path.write_text(path.read_text().replace("Do the work", "Run the deploy script twice"))
    viewed = cli(root, repo, "skills", "view", deploy)
    assert viewed.returncode == 0, viewed.stderr
    assert "2. Run the deploy script twice" in viewed.stdout
    assert "version: 2" in viewed.stdout
    assert "v2" in cli(root, repo, "skills").stdout
    assert "Run the deploy script twice" in path.read_text()  # imported, never overwritten


def test_a_secret_in_a_create_is_refused_without_echo(root: Path, repo: Path) -> None:
    done = cli(
        root,
        repo,
        "tool",
        "skill",
        json.dumps(
            {
                "action": "create",
                "scope": "global",
                "name": "Call the API",
                "description": f"Use the token {SECRET}",
                "content": "Call it.",
            }
        ),
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "blocked"
    assert SECRET not in done.stdout + done.stderr
    assert not (root / "pi-hermes-memory" / "skills" / "call-the-api").exists()
    assert cli(root, repo, "skills").stdout.strip() == "(no skills)"
    # a secret given as a skill id is not echoed either
    bad = cli(root, repo, "skills", "view", SECRET)
    assert bad.returncode == 2 and SECRET not in bad.stdout + bad.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["skills", "view", "not-an-id"], "is not a skill id"),
        (["skills", "view", "project:web:deploy"], "belongs to another project"),
        (["skills", "frobnicate"], "invalid choice"),
        (["skills", "view"], "the following arguments are required: skill_id"),
        (["skill-visibility", "hide"], "needs at least one global SKILL_ID"),
        (["skill-visibility", "hide", "global:Bad Name"], "is not a skill id"),
        (["skill-visibility", "list", "global:git-bisect"], "list takes no SKILL_ID"),
        (["skill-visibility", "hide", "global:x", "--for-project", "a/b"], "not a valid project"),
        (["skill-visibility", "global:x"], "invalid choice"),
        (["skill-stats", "--since-days", "0"], "must be from 1 to 36500, got 0"),
        (["skill-stats", "--since-days", "week"], "not an integer"),
        (["skill-stats", "--skill", "nope"], "is not a skill id"),
        (["skill-stats", "--skill", "project:web:deploy"], "belongs to another project"),
    ],
)
def test_bad_arguments_exit_2(root: Path, repo: Path, args: list[str], says: str) -> None:
    done = cli(root, repo, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert says in done.stderr
    assert done.stdout == ""


def test_visibility_needs_a_project(root: Path) -> None:
    done = cli(root, Path("/"), "skill-visibility", "list")
    assert done.returncode == 2
    assert "no current project: pass --for-project P" in done.stderr
    listed = cli(root, Path("/"), "skill-visibility", "list", "--for-project", "shop")
    assert listed.returncode == 0, listed.stderr


def test_bad_tool_arguments_are_invalid_arguments(root: Path, repo: Path) -> None:
    for arguments, says in [
        ({"since_days": 0}, "since_days must be from 1 to 36500"),
        ({"since_days": "7"}, "since_days must be an integer, got string"),
        ({"since_days": True}, "since_days must be an integer, got boolean"),
        ({"skill_id": 3}, "skill_id must be a string, got number"),
        ({"days": 3}, "unknown argument(s): days; allowed: project, since_days, skill_id"),
        ({"project": "../x"}, "is not a valid project name"),
    ]:
        done = cli(root, repo, "tool", "memory_skill_stats", json.dumps(arguments))
        assert done.returncode == 1
        out = json.loads(done.stdout)
        assert out["status"] == "invalid_arguments" and says in out["message"], out


def test_skills_list_shows_the_hosts_own_skills_as_external(root: Path, repo: Path) -> None:
    """issue 28 §3: the seed's /memory-skills lists <agentRoot>/skills/… as [E] read-only."""
    bisect = create(root, repo, "global", "Git bisect", "Find the commit that broke a test")
    host = root / "skills" / "pdf-tools"
    host.mkdir(parents=True)
    (host / "SKILL.md").write_text(
        "---\nname: pdf-tools\ndescription: Split and merge PDF files\n---\n\nUse qpdf.\n"
    )
    (root / "skills" / "notes.md").write_text(
        "---\ndescription: Keep meeting notes\n---\n\nA root-level skill file.\n"
    )
    listed = ok_json(root, repo, "skills", "--json")
    assert [s["id"] for s in listed["skills"]] == [bisect]
    external = {e["name"]: e for e in listed["external"]}
    assert sorted(external) == ["notes", "pdf-tools"]
    pdf = external["pdf-tools"]
    assert pdf["id"].startswith("external:pdf-tools:") and pdf["external"] and pdf["read_only"]
    assert (pdf["description"], pdf["path"]) == (
        "Split and merge PDF files",
        str(host / "SKILL.md"),
    )
    text = cli(root, repo, "skills")
    assert text.returncode == 0, text.stderr
    assert f"{pdf['id']}  external  pdf-tools  (read-only: {host / 'SKILL.md'})" in text.stdout
    assert text.stdout.splitlines()[0].startswith(bisect)  # managed skills first


def test_skill_stats_reads_a_time_without_fractional_seconds(root: Path, repo: Path) -> None:
    """A row another writer stored as `2026-01-01T00:00:00Z` (no fraction) no longer crashes."""
    import apsw

    deploy = create(root, repo, "project", "Deploy shop", "Ship the shop to production")
    used = ok_json(root, repo, "tool", "skill", json.dumps({"action": "use", "skill_id": deploy}))
    assert used["status"] == "ok"
    db = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        db.execute("UPDATE skill_usage_events SET at = '2026-01-01T00:00:00Z'")
        assert db.changes() == 1
    finally:
        db.close()
    stats = ok_json(root, repo, "skill-stats", "--json")
    row = next(r for r in stats["skills"] if r["id"] == deploy)
    assert row["usage"]["last_used"] == "2026-01-01T00:00:00Z"
    text = cli(root, repo, "skill-stats", "--skill", deploy)
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
