"""The `pi-hermes-memory` command on a damaged, deleted, full or read-only store (ADR 0023):
one clear line on stderr, never a traceback; reads keep working; `recover` brings the history
back. Run as real processes on real files."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.faults import fill, read_only, small_disk


def cli(root: Path, *args: str, file_limit: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}

    def limit() -> None:  # a real EFBIG from the kernel for every write past `file_limit`
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
        preexec_fn=limit if file_limit is not None else None,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a run (no traceback, nothing else)."""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def history(root: Path) -> list[tuple[str, str, str | None]]:
    listed = cli(root, "list", "--history", "--json")
    assert listed.returncode == 0, listed.stderr
    return sorted((e["id"], e["text"], e["superseded_by"]) for e in json.loads(listed.stdout))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    assert cli(root, "add", "The release branch is called trunk").returncode == 0
    assert cli(root, "add", "Prefers dark mode", "--target", "user").returncode == 0
    replaced = cli(
        root,
        "tool",
        "memory",
        json.dumps(
            {
                "action": "replace",
                "target": "memory",
                "old_text": "trunk",
                "content": "The release branch is called main",
            }
        ),
    )
    assert replaced.returncode == 0, replaced.stdout
    return root


def _db(root: Path) -> Path:
    return root / "pi-hermes-memory" / "sessions.db"


@pytest.mark.parametrize(
    "damage", ["garbage", "truncated", "garbage over the tail", "garbage after the tail"]
)
def test_a_damaged_database_reads_refuses_writes_and_recovers(root: Path, damage: str) -> None:
    before = history(root)
    db = _db(root)
    if damage == "garbage":
        db.write_bytes(os.urandom(40_000))
    elif damage == "garbage over the tail":  # issue 26 §6: 16 KiB over the last pages
        with open(db, "r+b") as f:
            f.seek(db.stat().st_size - 16384)
            f.write(os.urandom(16384))
    elif damage == "garbage after the tail":
        with open(db, "ab") as f:
            f.write(os.urandom(16384))
    else:
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size // 3)

    listed = cli(root, "list")
    assert listed.returncode == 0
    line = one_line(listed)
    assert "is damaged" in line and "pi-hermes-memory recover" in line
    assert "[memory] The release branch is called main" in listed.stdout

    found = cli(root, "search", "release branch")
    assert found.returncode == 0
    assert "The release branch is called main" in found.stdout

    refused = cli(root, "add", "A write while damaged")
    assert refused.returncode == 1
    assert "nothing was written" in one_line(refused)

    recovered = cli(root, "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert "Recovered" in recovered.stdout and "history and ids" in recovered.stdout
    assert list(db.parent.glob("sessions.db.damaged-*"))
    assert history(root) == before
    assert cli(root, "add", "A write after recover").returncode == 0


def test_recover_on_a_sound_store_changes_nothing(root: Path) -> None:
    result = cli(root, "recover", "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["status"] == "healthy"
    assert not list(_db(root).parent.glob("*.damaged-*"))


def _damage_log_line(root: Path, number: int) -> None:
    """Overwrite a few bytes inside line `number` (1-based) of the event log: bit rot."""
    log = _db(root).parent / "sessions.journal.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines[number - 1] = lines[number - 1][:40] + b"GARBAGE" + lines[number - 1][47:]
    log.write_bytes(b"\n".join(lines))


def test_a_damaged_event_log_line_is_a_doctor_problem_and_recover_rewrites_the_log(
    root: Path,
) -> None:
    """The event log is what rebuilds a lost database: a damaged line there, beside a sound
    database, was silent (every command and the doctor said nothing) until the database was
    lost too, and then the history and ids of its stream were gone. The doctor names it, and
    `recover` writes the log anew from the database (the old one kept beside it); a later
    rebuild then has every event."""
    before = history(root)
    _damage_log_line(root, 2)
    doctor = cli(root, "doctor")
    assert doctor.returncode == 1, doctor.stdout
    assert "sessions.journal.jsonl line 2 is damaged" in doctor.stdout
    assert "pi-hermes-memory recover" in doctor.stdout
    result = cli(root, "recover", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "healthy" and report["log_rewritten"] is True
    assert "written anew from the database" in report["message"]
    folder = _db(root).parent
    (kept,) = folder.glob("sessions.journal.jsonl.damaged-*")  # the old log, never deleted
    assert b"GARBAGE" in kept.read_bytes()
    assert cli(root, "doctor").returncode == 0
    again = json.loads(cli(root, "recover", "--json").stdout)
    assert again["status"] == "healthy" and again["log_rewritten"] is False
    # the database lost as well: rebuilt from the repaired log with every id and version
    _db(root).unlink()
    assert history(root) == before


def test_a_deleted_database_is_rebuilt_with_history_and_says_so(root: Path) -> None:
    before = history(root)
    _db(root).unlink()
    listed = cli(root, "list")
    assert listed.returncode == 0
    assert "was missing; rebuilt from sessions.journal.jsonl" in one_line(listed)
    assert history(root) == before


def test_a_read_only_memory_md_refuses_writes_to_it_only(root: Path) -> None:
    memory_md = root / "pi-hermes-memory" / "MEMORY.md"
    memory_md.chmod(0o444)
    data = memory_md.read_bytes()
    try:
        refused = cli(root, "add", "Would land in MEMORY.md")
        assert refused.returncode == 1
        assert f"{memory_md} is read-only" in one_line(refused)
        assert cli(root, "add", "Lands in USER.md", "--target", "user").returncode == 0
        assert cli(root, "list").returncode == 0
        assert memory_md.read_bytes() == data
    finally:
        memory_md.chmod(0o600)


def test_a_file_size_limit_is_one_clear_error_and_nothing_is_lost(root: Path) -> None:
    """RLIMIT_FSIZE: the kernel refuses every write past 1 byte with EFBIG."""
    before = history(root)
    failed = cli(root, "add", "Refused by the file size limit", file_limit=1)
    assert failed.returncode == 1
    one_line(failed)
    assert history(root) == before
    assert cli(root, "add", "Accepted without the limit").returncode == 0


def test_a_full_disk_is_one_clear_error_and_the_store_works_again(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "2m") as disk:
        root = disk / "agent"
        assert cli(root, "add", "Saved before the disk filled up").returncode == 0
        filler = fill(disk)
        refused = cli(root, "add", "Refused while the disk is full")
        assert refused.returncode == 1
        assert "full" in one_line(refused)
        listed = cli(root, "list")
        assert listed.returncode == 0
        assert "Saved before the disk filled up" in listed.stdout
        filler.unlink()
        assert cli(root, "add", "Saved after space came back").returncode == 0
        texts = {e[1] for e in history(root)}
        assert texts == {"Saved before the disk filled up", "Saved after space came back"}


def test_a_read_only_folder_lists_and_searches_and_refuses_writes(root: Path) -> None:
    with read_only(root / "pi-hermes-memory"):
        listed = cli(root, "list")
        assert listed.returncode == 0, listed.stderr
        assert "read-only" in one_line(listed)
        assert "The release branch is called main" in listed.stdout
        found = cli(root, "search", "dark mode")
        assert found.returncode == 0
        assert "Prefers dark mode" in found.stdout
        refused = cli(root, "add", "Refused in a read-only folder")
        assert refused.returncode == 1
        assert "nothing was written" in one_line(refused)
    assert cli(root, "add", "Accepted once the folder is writable").returncode == 0
