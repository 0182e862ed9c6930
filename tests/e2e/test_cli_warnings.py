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
