"""`setup`'s file changes on real files: atomic, backed up, never clobbering (issue 30)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.hosts.base import (
    BACKUP_SUFFIX,
    FileChange,
    apply,
    json_bytes,
    read_json_object,
)
from pi_hermes_memory.errors import ConfigError


def test_create_update_remove_with_backup(tmp_path: Path) -> None:
    new = tmp_path / "deep" / "settings.json"
    old = tmp_path / "old.json"
    old.write_bytes(b'{"keep": 1}\n')
    gone = tmp_path / "gone.txt"
    gone.write_bytes(b"bye")
    done = apply(
        [
            FileChange(new, None, b"{}\n"),
            FileChange(old, b'{"keep": 1}\n', b'{"keep": 1, "ours": 2}\n'),
            FileChange(gone, b"bye", None),
            FileChange(tmp_path / "same", None, None),
        ]
    )
    assert [c.action for c in done] == ["create", "update", "remove"]
    assert new.read_bytes() == b"{}\n"
    assert old.read_bytes() == b'{"keep": 1, "ours": 2}\n'
    assert (tmp_path / ("old.json" + BACKUP_SUFFIX)).read_bytes() == b'{"keep": 1}\n'
    assert not gone.exists()
    assert (tmp_path / ("gone.txt" + BACKUP_SUFFIX)).read_bytes() == b"bye"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_a_file_changed_since_the_plan_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(b"{}")
    change = FileChange(path, b"{}", b'{"a": 1}')
    path.write_bytes(b'{"someone": "else"}')
    with pytest.raises(ConfigError, match="changed while setup ran"):
        apply([change])
    assert path.read_bytes() == b'{"someone": "else"}'


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_unreadable_json_is_refused_naming_the_file(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(raw)
    with pytest.raises(ConfigError, match=r"settings\.json"):
        read_json_object(path)
    assert path.read_bytes() == raw


def test_absent_or_blank_is_an_empty_object(tmp_path: Path) -> None:
    assert read_json_object(tmp_path / "none.json") == (None, {})
    (tmp_path / "blank.json").write_bytes(b"  \n")
    assert read_json_object(tmp_path / "blank.json") == (b"  \n", {})
    assert json.loads(json_bytes({"é": 1})) == {"é": 1}


def test_setup_without_a_host_changes_nothing(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli", "setup", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    )
    assert json.loads(out.stdout)["success"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_llm_children_are_marked(tmp_path: Path) -> None:
    """A host run as our LLM sees the marker, so its hooks into this library stay quiet."""
    from pi_hermes_memory.adapters.providers.command_llm import CHILD_ENV, CommandCompleter

    script = tmp_path / "echo_env.py"
    script.write_text(
        "import os, sys; sys.stdin.read(); print(os.environ.get('" + CHILD_ENV + "', 'unset'))"
    )
    completer = CommandCompleter([sys.executable, str(script)], environ={"PATH": "/usr/bin"})
    assert completer.complete("system", "user", timeout=30).strip() == "1"
