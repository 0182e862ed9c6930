"""A metadata-only hand edit never creates or removes an entry (ADR 0022, ADR 0113).

The store tells a person to add `project=<name>` to an unattributed entry's metadata comment.
Doing exactly that to the entry written last used to read as "an older render plus a new entry"
(the shared file's entry keys are text and project): the unattributed copy stayed active beside
the attributed one. Real files, the public API and the installed command."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory

from tests.support.processes import run_cli

WARNING = "without a project= attribution"
HAND = "Run the API with make serve"


def open_memory(root: Path, project: str = "web") -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(root.parent)}, cwd=root.parent, project=project
    )


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    return run_cli(*args, env=env, cwd=root.parent, expect=None)


def project_md(root: Path) -> Path:
    return root / "projects-memory" / "MEMORY.md"


def hand_add_unattributed(path: Path, created: str) -> None:
    """A person types an entry without project= (as the TypeScript extension reads them)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(f"§\n{HAND} <!-- created={created}, last={created} -->\n")


def attribute_by_hand(path: Path, project: str) -> None:
    """What the warning says, literally: add project=<name> to its metadata comment."""
    text = path.read_text(encoding="utf-8")
    start = text.index(HAND)
    close = text.index(" -->", start)
    path.write_text(text[:close] + f", project={project}" + text[close:], encoding="utf-8")


def counts(m: Memory) -> tuple[dict[str, int], int]:
    overview = m.project_overview()
    per_project = {c.project: c.project_entries for c in overview.projects}
    return per_project, overview.unattributed_project_entries


@pytest.mark.parametrize("created", ["2026-07-01", "today"])
def test_attributing_a_hand_added_entry_retags_it(root: Path, created: str) -> None:
    with open_memory(root) as m:
        assert m.add("Shop uses Stripe webhooks", target="project").success
        today = str(m.entries("project")[0].created)
    day = today if created == "today" else created  # the same day: a revision candidate too
    hand_add_unattributed(project_md(root), day)
    with open_memory(root) as m:
        assert any(WARNING in w for w in m.warnings)
        assert counts(m) == ({"web": 1}, 1)
    attribute_by_hand(project_md(root), "web")
    with open_memory(root) as m:
        assert not any(WARNING in w for w in m.warnings)
        assert counts(m) == ({"web": 2}, 0)  # was ({"web": 2}, 1): a duplicate
        (entry,) = [e for e in m.entries("project") if e.text == HAND]
        assert (entry.project, str(entry.created)) == ("web", day)
        assert [h.text for h in m.search("make serve", target="project").hits] == [HAND]
    assert project_md(root).read_text(encoding="utf-8").count(HAND) == 1


def _edit_last_entry(root: Path, old: str, new: str) -> None:
    path = project_md(root)
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, text
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize(
    ("edit", "expected_counts", "listed_under"),
    [
        ("project=other", ({"web": 1, "other": 1}, 0), "other"),
        ("", ({"web": 1}, 1), None),  # project= removed: unattributed, kept
        ("created=2026-01-02", ({"web": 2}, 0), "web"),
    ],
)
def test_metadata_edit_of_the_last_written_entry_keeps_one_entry(
    root: Path, edit: str, expected_counts: Any, listed_under: str | None
) -> None:
    with open_memory(root) as m:
        m.add("Shop uses Stripe webhooks", target="project")
        m.add("Deploys go through fly", target="project")
        (last,) = [e for e in m.entries("project") if e.text == "Deploys go through fly"]
    day = str(last.created)
    comment = f"Deploys go through fly <!-- created={day}, last={day}, project64=d2Vi -->"
    if edit.startswith("created="):
        changed = comment.replace(f"created={day}", edit)
    else:
        changed = comment.replace(", project64=d2Vi", f", {edit}" if edit else "")
    _edit_last_entry(root, comment, changed)
    with open_memory(root) as m:
        assert counts(m) == expected_counts
    if listed_under is not None:
        with open_memory(root, project=listed_under) as m:
            (entry,) = [e for e in m.entries("project") if e.text == "Deploys go through fly"]
            assert entry.id == last.id  # retagged: the same entry
    assert project_md(root).read_text(encoding="utf-8").count("Deploys go through fly") == 1


def test_removing_a_failures_project_keeps_its_category(root: Path) -> None:
    failures = root / "pi-hermes-memory" / "failures.md"
    with open_memory(root) as m:
        m.add("pip install failed: old setuptools", target="failure", category="tool-quirk")
        m.add("npm ci failed: lockfile drift", target="failure", category="tool-quirk")
    text = failures.read_text(encoding="utf-8")
    head, _, tail = text.rpartition(", project64=d2Vi -->")
    failures.write_text(head + " -->" + tail, encoding="utf-8")
    with open_memory(root) as m:
        rows = sorted((e.text, e.project, e.category) for e in m.entries("failure"))
    assert rows == [
        ("npm ci failed: lockfile drift", None, "tool-quirk"),
        ("pip install failed: old setuptools", "web", "tool-quirk"),
    ]
    assert failures.read_text(encoding="utf-8").count("lockfile drift") == 1


def test_cli_attribution_by_hand_leaves_no_duplicate(root: Path) -> None:
    added = cli(root, "add", "Shop uses Stripe webhooks", "--target", "project", "--project", "web")
    assert added.returncode == 0, added.stderr
    hand_add_unattributed(project_md(root), "2026-07-01")
    before = cli(root, "list", "--json", "--target", "project", "--project", "web")
    assert WARNING in before.stderr
    assert [e["text"] for e in json.loads(before.stdout)] == ["Shop uses Stripe webhooks"]
    attribute_by_hand(project_md(root), "web")
    after = cli(root, "list", "--json", "--target", "project", "--project", "web")
    assert after.returncode == 0, after.stderr
    assert WARNING not in after.stderr  # no unattributed copy left behind
    listed = json.loads(after.stdout)
    assert sorted(e["text"] for e in listed) == [HAND, "Shop uses Stripe webhooks"]
    found = cli(root, "search", "make serve", "--json", "--target", "project", "--project", "web")
    assert found.returncode == 0, found.stderr
    assert [h["text"] for h in json.loads(found.stdout)["results"]] == [HAND]
    assert project_md(root).read_text(encoding="utf-8").count(HAND) == 1
