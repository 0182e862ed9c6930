"""`pi-hermes-memory purge` and the memory tool's purge action, through the installed command
(ADR 0026): a dry run without --yes, the erase with it, no trace left in the data directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MARKER = "Platypus-Host-9K2M"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
    )


def holders(root: Path) -> list[str]:
    needles = (MARKER.encode(), MARKER.lower().encode(), b"platypus")
    return [
        str(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and any(n in p.read_bytes() for n in needles)
    ]


def test_purge_through_the_command(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    assert cli(root, "add", f"The deploy host is {MARKER}").returncode == 0
    assert cli(root, "add", "The CI runs on GitHub Actions").returncode == 0
    replaced = cli(
        root,
        "tool",
        "memory",
        json.dumps(
            {
                "action": "replace",
                "target": "memory",
                "old_text": MARKER,
                "content": f"The deploy host is {MARKER} (rotated)",
            }
        ),
    )
    assert replaced.returncode == 0, replaced.stdout

    preview = cli(root, "purge", MARKER)  # no --yes: a dry run, exit 1, nothing changed
    assert preview.returncode == 1
    assert "Would purge 2 version(s)" in preview.stdout and "--yes" in preview.stdout
    assert holders(root)

    done = cli(root, "purge", MARKER, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "purged" and out["versions"] == 2 and len(out["entry_ids"]) == 2
    assert holders(root) == []

    again = cli(root, "purge", out["entry_ids"][0], "--yes")
    assert again.returncode == 1 and "already purged" in again.stdout
    restore = cli(root, "restore", out["entry_ids"][1])
    assert restore.returncode == 1 and "purged" in restore.stdout
    listed = json.loads(cli(root, "list", "--json", "--history").stdout)
    assert [e["text"] for e in listed] == ["The CI runs on GitHub Actions"]

    empty = cli(root, "purge", "  ", "--yes")
    assert empty.returncode == 2 and "Traceback" not in empty.stderr
    missing = cli(root, "purge", "no such entry", "--yes")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr


def test_the_memory_tool_purges(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    assert cli(root, "add", f"The deploy host is {MARKER}").returncode == 0
    assert cli(root, "add", "Deploys need the host too").returncode == 0
    ambiguous = cli(
        root,
        "tool",
        "memory",
        json.dumps({"action": "purge", "target": "memory", "old_text": "host"}),
    )
    out = json.loads(ambiguous.stdout)
    assert ambiguous.returncode == 1 and out["status"] == "ambiguous" and len(out["matches"]) == 2
    bad = cli(root, "tool", "memory", json.dumps({"action": "purge", "target": "memory"}))
    assert json.loads(bad.stdout)["status"] == "invalid_arguments"
    done = cli(
        root,
        "tool",
        "memory",
        json.dumps({"action": "purge", "target": "memory", "old_text": MARKER}),
    )
    out = json.loads(done.stdout)
    assert done.returncode == 0 and out["status"] == "purged" and out["versions"] == 1
    assert holders(root) == []


def test_purge_drops_the_vectors_of_every_version(tmp_path: Path, server: object) -> None:
    """With embeddings on (the local fixture server), the chain's rows leave with their
    vectors; the other rows keep theirs."""
    import apsw

    from tests.e2e.test_embeddings import open_memory, vectors, write_config

    root = tmp_path / "agent"
    write_config(root, server)  # type: ignore[arg-type]
    with open_memory(root) as memory:
        assert memory.embeddings is not None
        memory.add(f"The deploy host is {MARKER}")
        memory.add("The CI runs on GitHub Actions")
        memory.replace(MARKER, f"The deploy host is {MARKER}, rotated")
        assert len(vectors(root)) == 3  # both versions and the other entry
        result = memory.purge(MARKER)
        assert result.status == "purged" and result.versions == 2
    assert list(vectors(root)) == ["The CI runs on GitHub Actions"]
    conn = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        ids = [str(r[0]) for r in conn.execute("SELECT id FROM memories")]
    finally:
        conn.close()
    assert not set(ids) & set(result.entry_ids)
    assert holders(root) == []


def test_the_memory_tool_purges_by_id(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    added = cli(root, "add", f"The deploy host is {MARKER}", "--json")
    entry_id = json.loads(added.stdout)["entry_id"]
    both = cli(
        root,
        "tool",
        "memory",
        json.dumps({"action": "purge", "target": "memory", "id": entry_id, "old_text": "x"}),
    )
    assert json.loads(both.stdout)["status"] == "invalid_arguments"
    done = cli(
        root, "tool", "memory", json.dumps({"action": "purge", "target": "memory", "id": entry_id})
    )
    out = json.loads(done.stdout)
    assert done.returncode == 0 and out["status"] == "purged" and out["entry_ids"] == [entry_id]
    assert holders(root) == []
