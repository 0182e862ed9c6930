"""The installed command's vocabulary and exit statuses agree across commands (ADR 0120): the
ids they print, the scope names, the removed counts, and what exit 2 and exit 1 mean. Each
test runs the real command line as a child process on a real store (SQLite, Markdown)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import cli


def _id_line(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("id: ")]
    return line.removeprefix("id: ")


# --- purge names the memory's stable id ---------------------------------------------------------


def test_purge_prints_the_memorys_stable_id_as_add_and_update_do(root: Path) -> None:
    added = cli(root, "add", "The deploy host is alpha")
    memory_id = _id_line(added.stdout)
    updated = cli(root, "update", memory_id, "The deploy host is beta")
    assert _id_line(updated.stdout) == memory_id
    version_id = json.loads(cli(root, "get", memory_id, "--json").stdout)["version_id"]
    assert version_id != memory_id
    preview = cli(root, "purge", "beta")
    assert preview.returncode == 1 and _id_line(preview.stdout) == memory_id
    out = json.loads(cli(root, "purge", "beta", "--json").stdout)
    assert (out["entry_id"], out["version_id"]) == (memory_id, version_id)
    assert sorted(out["entry_ids"]) == sorted([memory_id, version_id])
    done = cli(root, "purge", memory_id, "--yes")
    assert done.returncode == 0 and _id_line(done.stdout) == memory_id
