"""A warning the store raises is shown once on stderr, in plain words (not also as a log line)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import cli


def test_a_hand_edit_warning_is_printed_once(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    assert cli(root, "add", "Deploys go through staging first").returncode == 0
    memory_md = root / "pi-hermes-memory" / "MEMORY.md"
    with memory_md.open("a", encoding="utf-8") as f:
        f.write("\n§\nan entry typed by hand <!-- with a comment --> inside\n")
    done = cli(root, "search", "typed")
    assert done.returncode == 0, done.stderr
    assert "typed by hand" in done.stdout
    lines = [line for line in done.stderr.splitlines() if "reserved for entry metadata" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("pi-hermes-memory: warning: MEMORY.md: entry 2")


def test_an_event_log_warning_during_open_is_printed_once_in_plain_words(tmp_path: Path) -> None:
    """A damaged first line of the event log, then a lost database: the open rebuilds, finds the
    log of another history and moves it aside. That warning is printed once, as a warning, not
    also as the raw log line `eventlog.warning detail="..."`."""
    root = tmp_path / "agent"
    root.mkdir()
    for text in ("Alpha fact one", "Bravo fact two"):
        assert cli(root, "add", text).returncode == 0
    folder = root / "pi-hermes-memory"
    log = folder / "sessions.journal.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines[1] = lines[1][:40] + b"GARBAGE" + lines[1][47:]
    log.write_bytes(b"\n".join(lines))
    for name in ("sessions.db", "sessions.db-wal", "sessions.db-shm"):
        (folder / name).unlink(missing_ok=True)
    done = cli(root, "list")
    assert done.returncode == 0, done.stderr
    assert "Alpha fact one" in done.stdout and "Bravo fact two" in done.stdout
    assert "eventlog.warning" not in done.stderr, done.stderr
    moved = [line for line in done.stderr.splitlines() if "did not match sessions.db" in line]
    assert len(moved) == 1, done.stderr
    assert moved[0].startswith("pi-hermes-memory: warning: ")
    assert list(folder.glob("sessions.journal.jsonl.stale-*"))  # moved aside, never deleted
