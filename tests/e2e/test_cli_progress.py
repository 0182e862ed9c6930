"""Progress of long commands on stderr (issue 28 §4, ADR 0078): plain lines when stderr is not
a terminal, a bar redrawn in place on one (a real pseudo-terminal), totals and an ETA."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from pi_hermes_memory.adapters.cli.progress import Progress, rate

from tests.e2e.test_embeddings import FIXTURE_KEY, KEY_ENV, cli, write_config
from tests.support.embedding_server import EmbeddingServer


def _three_entries(root: Path, server: EmbeddingServer) -> None:
    root.mkdir(parents=True)
    for i in range(3):
        assert cli(root, "add", f"fact number {i} about subject{i}").returncode == 0
    write_config(root, server)


def test_reembed_progress_is_plain_lines_in_a_pipe(root: Path, server: EmbeddingServer) -> None:
    _three_entries(root, server)
    done = cli(root, "reembed", "--batch-size", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "\r" not in done.stderr
    assert lines[0].startswith("reembed: 1/3 entries  33%")
    assert lines[-1].startswith("reembed: 3/3 entries 100%")
    # no rate that rounds to zero ("0.0 entries/s"); "10.0 entries/s" is a rate like any other
    assert not re.search(r"(?<![\d.])0\.0 ", done.stderr)
    assert "0.0 MB/s" not in done.stdout


def test_reembed_progress_is_a_bar_on_a_terminal(root: Path, server: EmbeddingServer) -> None:
    _three_entries(root, server)
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    env[KEY_ENV] = FIXTURE_KEY
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", "reembed"],
            stdout=subprocess.PIPE,
            stderr=follower,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=root.parent,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    assert proc.returncode == 0, shown
    text = shown.decode()
    assert "\rreembed: [" in text.replace("\x1b[K", "")
    assert "] 3/3 entries 100%" in text
    assert text.endswith("\r\n")  # the bar's line is ended before the command exits
    assert out.startswith(b"Embedded 3 of 3 entries")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_and_the_rate_limit_of_plain_lines() -> None:
    stream, clock = io.StringIO(), _Clock()
    bar = Progress("index-sessions", "files", stream=stream, clock=clock)
    clock.now = 10.0
    bar.update(10, 40)  # 1 file a second: 30 s left
    clock.now = 10.5
    bar.update(15, 40)  # within a second of the last line: not printed
    clock.now = 20.0
    bar.update(40, 40)  # the last one always
    bar.close()
    assert stream.getvalue().splitlines() == [
        "index-sessions: 10/40 files  25% ETA 0:30",
        "index-sessions: 40/40 files 100%",
    ]


def test_a_rate_never_reads_zero() -> None:
    assert rate(20_000, 1.0, "B") == "20.0 KB/s"
    assert rate(3_000_000, 2.0, "B") == "1.5 MB/s"
    assert rate(0, 1.0, "B") == ""
    assert rate(1, 100.0, "entries") == ""
