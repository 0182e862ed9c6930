"""A new process's first add (decided on the persisted write index, ADR 0084) whose commit
fails for lack of room: refused, never in the store nor in the Markdown file, and the next add
of the same process lands and renders (a real EFBIG from the kernel, RLIMIT_FSIZE)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pi_hermes_memory

_CHILD = r"""
import resource, signal, sys, pi_hermes_memory
from pathlib import Path
root = Path(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
m = pi_hermes_memory.open(agent_root=root, cwd=root, environ={})
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))  # every file write past 4 KiB fails
try:
    m.add("A fact whose write fails for lack of room")
    print("acknowledged")
except Exception as exc:
    print("refused", type(exc).__name__)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
print("second", m.add("A fact written once there is room again").success)
m.close()
"""


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=root, cwd=root, environ={})


def test_a_failed_first_add_is_neither_stored_nor_rendered(tmp_path: Path) -> None:
    for text in ("first settled fact", "second settled fact"):  # the index is current
        with _open(tmp_path) as memory:
            assert memory.add(text).success
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["refused StorageFull", "second True"]
    rendered = (tmp_path / "pi-hermes-memory" / "MEMORY.md").read_text(encoding="utf-8")
    assert "lack of room" not in rendered and "room again" in rendered
    with _open(tmp_path) as memory:
        assert [e.text for e in memory.entries()] == [
            "first settled fact",
            "second settled fact",
            "A fact written once there is room again",
        ]
