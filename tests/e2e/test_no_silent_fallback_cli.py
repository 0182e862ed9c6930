"""Nothing falls back silently (issue 26 §4, ADR 0065): a config file that cannot be parsed never
sends writes to a default store, the doctor names flagged entries, an invalid correction
pattern is skipped alone. Real files, real `pi-hermes-memory` processes, a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pi_hermes_memory
import pytest
from pi_hermes_memory.domain.learning.corrections import detect
from pi_hermes_memory.lifecycle.corrections import rules_from_config

from tests.support.memory_server import running

TEAM_CONFIG = b'{"storage": {"backend": "postgres", "dsnEnv": "TEAM_DSN"},}'
TOKEN = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PI_MEMORY_", "PI_CODING_AGENT"))
    }
    env.update({"PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)})
    env["TEAM_DSN"] = "host=127.0.0.1 port=1 dbname=team user=nobody"  # never reached
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=120,
    )


def files_under(root: Path) -> dict[str, bytes]:
    """Every file's bytes, but lock files and SQLite's WAL index and log (a read opens them)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith((".lock", "-shm", "-wal"))
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    assert cli(root, "add", "The build server is ci-3").returncode == 0
    return root


def test_a_trailing_comma_in_a_postgres_config_refuses_writes_and_says_which_store_is_read(
    root: Path,
) -> None:
    config = root / "hermes-memory-config.json"
    config.write_bytes(TEAM_CONFIG)
    before = files_under(root)

    added = cli(root, "add", "Deploys need the VPN")
    assert added.returncode == 1  # a refused write (README's exit table)
    assert "Traceback" not in added.stderr
    lines = added.stderr.splitlines()
    refusal = next(line for line in lines if "nothing was written" in line)
    assert str(config) in refusal and "line 1 column 59" in refusal
    assert "remove a trailing comma" in refusal and "'storage'" in refusal
    assert not any("using defaults for every field" in line for line in lines)
    assert files_under(root) == before  # no store written, none created

    listed = cli(root, "list")
    assert listed.returncode == 0, listed.stderr
    assert "The build server is ci-3" in listed.stdout
    store = root / "pi-hermes-memory" / "sessions.db"
    assert f"reads come from the local store at {store}" in listed.stderr
    assert files_under(root) == before

    config.write_bytes(TEAM_CONFIG.replace(b"},}", b"}}").replace(b"postgres", b"sqlite"))
    assert cli(root, "add", "Deploys need the VPN").returncode == 0  # fixed: writes again


def test_a_config_path_that_is_a_folder_refuses_writes_and_stops_the_doctor(root: Path) -> None:
    (root / "hermes-memory-config.json").mkdir()
    before = files_under(root)
    added = cli(root, "add", "Deploys need the VPN")
    assert added.returncode == 1 and "is a folder" in added.stderr
    assert files_under(root) == before
    assert cli(root, "list").returncode == 0
    doctor = cli(root, "doctor")
    assert doctor.returncode == 2  # "the doctor could not run: config file unreadable"
    assert "is a folder" in doctor.stderr


def test_a_malformed_config_without_a_store_setting_keeps_the_defaults(root: Path) -> None:
    (root / "hermes-memory-config.json").write_bytes(b'{"nudgeInterval": 5,}')
    added = cli(root, "add", "Deploys need the VPN")
    assert added.returncode == 0, added.stderr
    assert "not valid JSON (line 1 column 21); using defaults" in added.stderr


def test_the_library_opens_read_only_with_a_typed_refusal(root: Path) -> None:
    (root / "hermes-memory-config.json").write_bytes(TEAM_CONFIG)
    with pi_hermes_memory.open(agent_root=root) as memory:
        assert "reads come from the local store" in memory.warnings[0]
        assert [e.text for e in memory.entries("memory")] == ["The build server is ci-3"]
        with pytest.raises(pi_hermes_memory.ConfigUnreadable, match="line 1 column 59"):
            memory.add("Deploys need the VPN")
    with pytest.raises(pi_hermes_memory.ConfigUnreadable):
        pi_hermes_memory.recover(agent_root=root)


def test_the_server_refuses_writes_with_503_while_the_config_cannot_be_parsed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "agent"
    assert cli(root, "add", "The build server is ci-3").returncode == 0
    (root / "hermes-memory-config.json").write_bytes(TEAM_CONFIG)
    before = files_under(root)
    with running(tmp_path) as srv:
        stored = httpx.post(
            f"{srv.url}/api/memory/store", json={"content": "Deploys need the VPN"}, timeout=30
        )
        assert stored.status_code == 503
        assert "line 1 column 59" in stored.text
        listed = httpx.get(f"{srv.url}/api/memory/list", timeout=30)
        assert listed.status_code == 200 and "ci-3" in listed.text
    assert files_under(root) == before


def test_the_doctor_names_a_flagged_hand_edit_and_how_to_purge_it(root: Path) -> None:
    memory_md = root / "pi-hermes-memory" / "MEMORY.md"
    text = memory_md.read_text()
    memory_md.write_text(f"{text.rstrip()}\n§\nCI token: {TOKEN}\n")
    assert cli(root, "list").returncode == 0  # the hand edit is imported, flagged
    doctor = cli(root, "doctor", "--json")
    assert doctor.returncode == 1, doctor.stdout  # a problem, not "No problems found"
    assert TOKEN not in doctor.stdout and TOKEN not in doctor.stderr
    report = json.loads(doctor.stdout)
    flagged = [p for p in report["problems"] if "fails the content scan" in p]
    assert len(flagged) == 1 and "github" in flagged[0]
    entry_id = flagged[0].split("entry ", 1)[1].split(" ", 1)[0]
    assert f"pi-hermes-memory purge {entry_id} --yes" in flagged[0]

    assert cli(root, "purge", entry_id, "--yes").returncode == 0
    after = cli(root, "doctor")
    assert after.returncode == 0, after.stdout
    assert TOKEN not in memory_md.read_text()


def test_a_pending_flagged_hand_edit_is_a_problem_too(root: Path) -> None:
    memory_md = root / "pi-hermes-memory" / "MEMORY.md"
    memory_md.write_text(f"{memory_md.read_text().rstrip()}\n§\nCI token: {TOKEN}\n")
    doctor = cli(root, "doctor")
    assert doctor.returncode == 1
    assert "pending hand edit" in doctor.stdout and TOKEN not in doctor.stdout


def test_an_invalid_correction_pattern_is_skipped_and_the_valid_ones_kept(root: Path) -> None:
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"correctionStrongPatterns": [r"^per policy,\s+(.+)$", "(unclosed"]})
    )
    with pi_hermes_memory.open(agent_root=root) as memory:
        warning = next(w for w in memory.warnings if w.startswith("correctionStrongPatterns"))
        assert "item 1 is not a valid regular expression" in warning and "skipped" in warning
        assert memory.config.correction_strong_patterns == (r"^per policy,\s+(.+)$",)
        rules = rules_from_config(memory.config)
    assert rules is not None
    found = detect(rules, "per policy, deploys go through the VPN")
    assert found is not None and "deploys go through the VPN" in found.sentence
