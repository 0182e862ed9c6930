"""Run a real child process as the end-to-end tests do: text output captured, a timeout, and
its exit status checked (its stderr in the failure message)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: the command line, run as `python -m` by the interpreter running the tests
CLI = (sys.executable, "-m", "pi_hermes_memory.adapters.cli")


def run(
    argv: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 120,
    expect: int | None = 0,
) -> subprocess.CompletedProcess[str]:
    """Run `argv` to its end; `expect`: the exit status it must have (None: not checked)."""
    done = subprocess.run(
        [str(a) for a in argv],
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if expect is not None:
        assert done.returncode == expect, (done.returncode, done.stderr)
    return done


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 60,
    expect: int | None = 0,
) -> subprocess.CompletedProcess[str]:
    """Run the command line with `args` (`run`'s checks)."""
    return run([*CLI, *args], env=env, cwd=cwd, timeout=timeout, expect=expect)
