"""A real `pi-hermes-memory serve` process on 127.0.0.1 and a free port, for the e2e tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@attrs.frozen(kw_only=True)
class RunningServer:
    url: str
    port: int
    root: Path
    process: subprocess.Popen[bytes]
    log: Path


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args]


def environment(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PI_MEMORY_", "PI_CODING_AGENT"))
    }
    env["PI_CODING_AGENT_DIR"] = str(root)
    env.update(extra or {})
    return env


@contextlib.contextmanager
def running(
    tmp: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    headers: Mapping[str, str] | None = None,
    pass_port: bool = True,
) -> Iterator[RunningServer]:
    """Start the server, wait for /health, stop it (SIGTERM) afterwards."""
    root = tmp / "agent"
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    chosen = port if port is not None else free_port()
    log = tmp / "server.log"
    port_args = ("--port", str(chosen)) if pass_port else ()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command("serve", *port_args, *args),
            cwd=work,
            env=environment(root, env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{chosen}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {log.read_text()}")
            try:
                httpx.get(f"{url}/health", headers=dict(headers or {}), timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield RunningServer(url=url, port=chosen, root=root, process=process, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
