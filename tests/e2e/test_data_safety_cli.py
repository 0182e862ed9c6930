"""Hand edits through the installed command, as a person and an agent use it (ADR 0022)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOKEN = "ghp_" + "A1b2C3d4" * 4 + "E5f6"


def cli(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=root.parent,
        timeout=60,
    )


def listed(root: Path, *args: str) -> list[dict[str, object]]:
    done = cli(root, "list", "--json", *args)
    assert done.returncode == 0, done.stderr
    entries: list[dict[str, object]] = json.loads(done.stdout)
    return entries


def texts(root: Path, *args: str) -> list[object]:
    return [e["text"] for e in listed(root, *args)]


@pytest.fixture
def memory_md(root: Path) -> Path:
    return root / "pi-hermes-memory" / "MEMORY.md"


def test_stale_editor_buffer_keeps_the_agents_write(root: Path, memory_md: Path) -> None:
    """The issue's reproduction, step by step."""
    assert cli(root, "add", "alpha entry one").returncode == 0
    buffer = memory_md.read_bytes()
    added = cli(root, "add", "gamma acknowledged by the agent", "--json")
    assert json.loads(added.stdout)["status"] == "added"
    memory_md.write_bytes(buffer + "§\nhand added delta\n".encode())
    assert texts(root) == ["alpha entry one", "gamma acknowledged by the agent", "hand added delta"]
    memory_md.write_bytes(b"")  # an emptied file deletes nothing
    assert texts(root) == ["alpha entry one", "gamma acknowledged by the agent", "hand added delta"]
    memory_md.unlink()  # nor does a deleted one
    assert len(texts(root)) == 3


def test_a_hand_deletion_the_merge_keeps_is_named_with_the_command_that_deletes_it(
    root: Path, memory_md: Path
) -> None:
    """Deleting the entry the agent wrote last and adding one in the same save reads, byte for
    byte, like a buffer loaded before that write (ADR 0022, 0116): the entry is kept. That is
    no longer silent: the warning names its id and `delete` (which works). Saving the same
    deletion again is the same ambiguity (it equals the person's own last save) and warns
    again."""
    cli(root, "add", "alpha entry one")
    cli(root, "add", "bravo entry two")
    added = cli(root, "add", "charlie entry three", "--json")
    charlie = json.loads(added.stdout)["entry_id"]

    def delete_charlie_by_hand() -> subprocess.CompletedProcess[str]:
        blocks = memory_md.read_text().rstrip("\n").split("\n§\n")
        kept = [b for b in blocks if not b.startswith("charlie")]
        if "hand added delta" not in memory_md.read_text():
            kept.append("hand added delta")
        memory_md.write_text("\n§\n".join(kept) + "\n")
        return cli(root, "list", "--json")

    for _ in range(2):
        done = delete_charlie_by_hand()
        assert done.returncode == 0, done.stderr
        entries = [e["text"] for e in json.loads(done.stdout)]
        # the merge itself is unchanged: the entry stays, the person's addition is imported
        assert entries == [
            "alpha entry one",
            "bravo entry two",
            "charlie entry three",
            "hand added delta",
        ]
        warning = [line for line in done.stderr.splitlines() if charlie in line]
        assert len(warning) == 1, done.stderr
        assert warning[0].startswith("pi-hermes-memory: warning: memory: ")
        assert f"pi-hermes-memory delete {charlie}" in warning[0]
    deleted = cli(root, "delete", charlie)
    assert deleted.returncode == 0, deleted.stderr
    assert texts(root) == ["alpha entry one", "bravo entry two", "hand added delta"]


def test_hand_deletion_can_be_restored(root: Path, memory_md: Path) -> None:
    cli(root, "add", "keep me around")
    cli(root, "add", "delete me by hand")
    first_line, body = memory_md.read_text().split("\n", 1)
    kept = [block for block in body.split("\n§\n") if "delete me" not in block]
    memory_md.write_text(first_line + "\n" + "\n§\n".join(kept))
    assert texts(root) == ["keep me around"]
    removed = cli(root, "restore", "--json")
    assert [e["text"] for e in json.loads(removed.stdout)] == ["delete me by hand"]
    done = cli(root, "restore", "delete me", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "restored"
    assert texts(root) == ["keep me around", "delete me by hand"]
    again = cli(root, "restore", "delete me")
    assert again.returncode == 1 and "No removed" in again.stdout


def test_project_added_by_hand_makes_the_entry_searchable(root: Path) -> None:
    project_md = root / "projects-memory" / "MEMORY.md"
    project_md.parent.mkdir(parents=True)
    project_md.write_text("Run the API with make serve <!-- created=2026-07-01 -->\n")
    before = cli(root, "search", "make serve", "--project", "web", "--target", "project")
    assert "Run the API" not in before.stdout and "without a project= attribution" in before.stderr
    project_md.write_text(project_md.read_text().replace("-->", ", project=web -->"))
    found = cli(root, "search", "make serve", "--project", "web", "--target", "project")
    assert "Run the API with make serve" in found.stdout
    (entry,) = listed(root, "--target", "project", "--project", "web")
    assert entry["project"] == "web"


def test_hand_typed_secret_is_kept_but_never_searched(root: Path, memory_md: Path) -> None:
    cli(root, "add", "rotate the github token monthly")
    with memory_md.open("a") as f:
        f.write(f"§\nmy github token is {TOKEN}\n")
    done = cli(root, "list", "--json")
    assert "fails the content scan" in done.stderr
    flagged = [e for e in json.loads(done.stdout) if e["flagged"]]
    assert [e["text"] for e in flagged] == [f"my github token is {TOKEN}"]
    found = cli(root, "search", "github token", "--json")
    assert TOKEN not in found.stdout
    assert "rotate the github token monthly" in found.stdout
    assert TOKEN in memory_md.read_text()  # nothing the person wrote was deleted


def test_invalid_byte_blocks_only_that_file(root: Path, memory_md: Path) -> None:
    cli(root, "add", "a global fact")
    cli(root, "add", "likes tea", "--target", "user")
    user_md = root / "pi-hermes-memory" / "USER.md"
    damaged = user_md.read_bytes() + b"\xff\xfe"
    user_md.write_bytes(damaged)
    shown = cli(root, "list")
    assert shown.returncode == 0 and "a global fact" in shown.stdout
    assert "not valid UTF-8" in shown.stderr and "Traceback" not in shown.stderr
    assert "a global fact" in cli(root, "search", "global fact").stdout
    assert cli(root, "add", "another global fact").returncode == 0
    refused = cli(root, "add", "likes coffee", "--target", "user")
    assert refused.returncode == 1 and "not valid UTF-8" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert user_md.read_bytes() == damaged


def test_one_file_for_global_and_project_memory_is_refused(root: Path, memory_md: Path) -> None:
    """A symlink that makes the project file the global MEMORY.md: refused before any write
    (a configuration naming one folder for both falls back to the default with a warning)."""
    assert cli(root, "add", "a global fact").returncode == 0
    before = memory_md.read_bytes()
    project_md = root / "projects-memory" / "MEMORY.md"
    project_md.unlink()
    project_md.symlink_to(memory_md)
    done = cli(
        root, "add", "must not be copied anywhere", "--target", "project", "--project", "web"
    )
    assert done.returncode == 1
    assert "same file" in done.stderr and "Traceback" not in done.stderr
    assert memory_md.read_bytes() == before


def test_two_roots_sharing_one_memory_dir_keep_each_others_entries(tmp_path: Path) -> None:
    shared = tmp_path / "shared-memory"
    roots = [tmp_path / "root-a" / "agent", tmp_path / "root-b" / "agent"]
    for root in roots:
        root.mkdir(parents=True)
        (root / "hermes-memory-config.json").write_text(json.dumps({"memoryDir": str(shared)}))
    a, b = roots
    assert (
        cli(
            a, "add", "web deploys need the VPN", "--target", "project", "--project", "web"
        ).returncode
        == 0
    )
    assert (
        cli(b, "add", "web uses port 8080", "--target", "project", "--project", "web").returncode
        == 0
    )
    for _ in range(2):
        for root in roots:
            assert sorted(texts(root, "--target", "project", "--project", "web")) == [
                "web deploys need the VPN",
                "web uses port 8080",
            ]
    warned = cli(a, "list")
    assert "outside the agent root" in warned.stderr


@pytest.mark.parametrize("which", [0, 1])
def test_correcting_either_of_two_same_day_entries_supersedes_it(
    root: Path, memory_md: Path, which: int
) -> None:
    """ADR 0093: the entry the agent added last is corrected like any other (one version more,
    the old text in its history), not kept beside the correction."""
    cli(root, "add", "The orca lives in the north sea")
    cli(root, "add", "Python builds use make dev first")
    old, new = [("orca", "kelp"), ("Python", "Rust")][which]
    memory_md.write_text(memory_md.read_text().replace(old, new))
    now = listed(root)
    assert sorted(str(e["text"]) for e in now) == sorted(
        t.replace(old, new)
        for t in ("The orca lives in the north sea", "Python builds use make dev first")
    )
    (changed,) = [e for e in now if new in str(e["text"])]
    history = json.loads(cli(root, "history", str(changed["id"]), "--json").stdout)
    assert [old in str(v["text"]) for v in history] == [True, False]


def test_a_stale_buffer_that_corrects_an_older_entry_keeps_the_agents_write(
    root: Path, memory_md: Path
) -> None:
    """The buffer was loaded before the agent's last add; the person corrected an entry it
    showed: the correction supersedes that entry and the agent's add stays."""
    cli(root, "add", "alpha entry one")
    buffer = memory_md.read_text()
    cli(root, "add", "gamma acknowledged by the agent")
    memory_md.write_text(buffer.replace("alpha entry one", "alpha entry corrected"))
    assert sorted(map(str, texts(root))) == [
        "alpha entry corrected",
        "gamma acknowledged by the agent",
    ]
