"""The CLI as the left side of a pipe whose reader stops early (`pi-hermes-memory learn | head`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_reader_that_goes_away_is_not_an_error(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(tmp_path)}
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    with os.fdopen(write_end, "wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", "learn"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
    assert done.returncode == 141
    assert done.stderr == b""
