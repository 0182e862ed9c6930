"""`pi-hermes-memory skill-governance ...` as a real process on real folders (ADR 0031).

Exit status: 0 ok, 1 refused or failed, 2 usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import cli

P, G = "project:web:deploy", "global:deploy"
BODY = "## Procedure\n1. Build the docker image.\n2. Roll it out."


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    root.mkdir()
    # the CLI records uses without a session id: one session is enough here
    configure(root, promotionMinSessions=1)
    return root


def configure(root: Path, **governance: Any) -> None:
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"projectName": "web", "skillGovernance": governance})
    )


def skill(root: Path, **arguments: Any) -> dict[str, Any]:
    done = cli(root, "tool", "skill", json.dumps(arguments))
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def gov(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = cli(root, "skill-governance", *args, "--json")
    return done.returncode, json.loads(done.stdout)


def make_candidate(root: Path) -> None:
    made = skill(root, action="create", scope="project", name="deploy", description="Ship it",
                 content=BODY)  # fmt: skip
    assert made["success"], made
    for _ in range(3):
        assert skill(root, action="use", skill_id=P, task_domain="deployment")["success"]


def test_promote_restore_and_reload_move_the_folder(root: Path) -> None:
    make_candidate(root)
    project_dir = root / "projects-memory" / "web" / "skills" / "deploy"
    global_dir = root / "pi-hermes-memory" / "skills" / "deploy"
    rc, status = gov(root, "status")
    assert rc == 0 and status["skills"][0]["skill_id"] == P and status["skills"][0]["candidate"]
    rc, explained = gov(root, "explain", P)
    assert rc == 0 and "[ok] same-domain-uses: 3 (needs >= 3)" in "\n".join(explained["lines"])
    rc, promoted = gov(root, "promote", P)
    assert rc == 0 and promoted["status"] == "promoted" and promoted["moved_to"] == G
    assert (global_dir / "SKILL.md").exists() and not project_dir.exists()
    rc, reloaded = gov(root, "reload")
    assert rc == 0 and reloaded["visible"] == [G]
    rc, restored = gov(root, "restore", G)
    assert rc == 0 and restored["status"] == "restored"
    assert (project_dir / "SKILL.md").exists() and not global_dir.exists()
    rc, again = gov(root, "restore", G)
    assert rc == 1 and again["status"] == "not_found"
    text = cli(root, "skill-governance", "status")
    assert text.returncode == 0 and "global:deploy: state restored" in text.stdout


def test_a_refused_promote_exits_1_and_force_overrides_the_evidence(root: Path) -> None:
    assert skill(root, action="create", scope="project", name="deploy", description="Ship it",
                 content=BODY)["success"]  # fmt: skip
    refused = cli(root, "skill-governance", "promote", P)
    assert refused.returncode == 1 and "not a promotion candidate" in refused.stdout
    assert "[NO] same-domain-uses: 0 (needs >= 3)" in refused.stdout
    rc, forced = gov(root, "promote", P, "--force")
    assert rc == 0 and forced["status"] == "promoted"


def test_block_overwrite_and_disabled_promotion(root: Path) -> None:
    make_candidate(root)
    assert skill(root, action="create", scope="global", name="deploy", description="Old",
                 content="## Procedure\n1. The old way.")["success"]  # fmt: skip
    rc, blocked = gov(root, "promote", P)
    assert rc == 1 and blocked["status"] == "conflict"
    configure(root, promotionMinSessions=1, promotionConflictStrategy="overwrite")
    rc, done = gov(root, "promote", P)
    assert rc == 0 and done["status"] == "promoted"
    rc, demoted = gov(root, "demote", G)
    assert rc == 0 and demoted["moved_to"] == P
    configure(root, promotionEnabled=False)
    rc, off = gov(root, "promote", P, "--force")
    assert rc == 1 and off["status"] == "forbidden"


def test_curate_records_a_job_that_status_shows(root: Path) -> None:
    make_candidate(root)
    rc, curated = gov(root, "curate")
    assert rc == 0 and curated["state"] == "succeeded" and curated["reason_code"] == "ok"
    status = cli(root, "skill-governance", "status")
    assert "Curation Jobs:" in status.stdout
    assert f"last: job {curated['job_id']} (manual) succeeded, reason ok" in status.stdout
    assert f"{P}: state candidate; candidate" in status.stdout
    rc, cleared = gov(root, "clear", P)
    assert rc == 0 and cleared["status"] == "ok"


@pytest.mark.parametrize(
    "args",
    [
        ("explain",),
        ("promote",),
        ("status", P),
        ("reload", P),
        ("demote", G, "--force"),
        ("curate", "--force"),
        ("undo", P),
    ],
)
def test_usage_errors_exit_2(root: Path, args: tuple[str, ...]) -> None:
    done = cli(root, "skill-governance", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert "skill-governance" in done.stderr
