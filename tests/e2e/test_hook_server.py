"""The thin hook client and the warm hook server as Claude Code runs them (issue 30 §2,
ADR 0096): real child processes, a real Unix socket, a real store.

Each test has its own XDG_RUNTIME_DIR (so its own socket folder) and kills the servers it
caused at the end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CLIENT = [sys.executable, "-m", "pi_hermes_memory.adapters.hosts.hook_client"]
CLI = [sys.executable, "-m", "pi_hermes_memory.adapters.cli"]
FACT = "The deploy target is staging-eu-west with blue green switching"
PROMPT = "what is the deploy target for staging?"


class World:
    def __init__(self, tmp_path: Path, runtime: Path) -> None:
        self.home = tmp_path / "home"
        self.agent = tmp_path / "agent"
        self.project = tmp_path / "project"
        for path in (self.home, self.agent, self.project):
            path.mkdir()
        self.runtime = runtime
        self.env = {
            **os.environ,
            "HOME": str(self.home),
            "PI_CODING_AGENT_DIR": str(self.agent),
            "XDG_RUNTIME_DIR": str(runtime),
            "PI_HERMES_MEMORY_HOOK_IDLE_S": "120",
        }
        self.env.pop("PI_HERMES_MEMORY_CHILD", None)
        self.env.pop("PI_HERMES_MEMORY_HOOK_DEADLINE_MS", None)
        self.pids: set[int] = set()

    def payload(self, event: str, **more: Any) -> bytes:
        body = {
            "session_id": "sess-1",
            "transcript_path": str(self.project / "t.jsonl"),
            "cwd": str(self.project),
            "hook_event_name": event,
            **more,
        }
        return json.dumps(body).encode()

    def hook(self, event: str, *args: str, **more: Any) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            [*CLIENT, event, *args],
            input=self.payload(event, **more),
            capture_output=True,
            env=self.env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done

    def recall(self, *args: str) -> str:
        out = self.hook("UserPromptSubmit", *args, prompt=PROMPT).stdout
        if not out.strip():
            return ""
        return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])

    def add(self, text: str) -> None:
        done = subprocess.run(
            [*CLI, "add", text, "--json"], capture_output=True, env=self.env, timeout=120
        )
        assert done.returncode == 0, done.stderr

    def status(self) -> dict[str, Any]:
        done = subprocess.run(
            [*CLIENT, "--status"], capture_output=True, env=self.env, timeout=60, check=True
        )
        result: dict[str, Any] = json.loads(done.stdout)
        if result.get("running"):
            self.pids.add(int(result["pid"]))
        return result

    def server(self, *, other_than: int | None = None) -> dict[str, Any]:
        """The running server's status, waiting (bounded) for one to listen."""
        for _ in range(600):
            found = self.status()
            if found.get("running") and found["pid"] != other_than:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no hook server started: {found}")

    def hook_log(self) -> str:
        logs = list(self.agent.rglob("hook.log"))
        return "".join(p.read_text(encoding="utf-8") for p in logs)

    def socket_folder(self) -> Path:
        return self.runtime / "pi-hermes-memory"


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def _wait_gone(pid: int) -> None:
    for _ in range(600):
        if _gone(pid):
            return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} did not leave")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    # a short folder: a Unix socket path holds ~107 bytes, pytest's tmp_path can be longer
    runtime = Path(tempfile.mkdtemp(prefix="phm-run-"))
    runtime.chmod(0o700)
    w = World(tmp_path, runtime)
    w.add(FACT)
    yield w
    for pid in w.pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    for path in runtime.rglob("*"):
        if not path.is_dir():
            path.unlink()
    for path in sorted(runtime.rglob("*"), reverse=True):
        path.rmdir()
    runtime.rmdir()


def test_the_first_hook_starts_the_server_and_the_next_ones_ask_it(world: World) -> None:
    assert not world.status()["running"]
    assert FACT in world.recall()  # in-process, and a server starts beside it
    first = world.server()
    assert first["requests"] == 0
    assert FACT in world.recall()
    assert world.hook("SessionStart", source="startup").stdout.strip()
    now = world.status()
    assert now["pid"] == first["pid"] and now["requests"] == 2
    # another process adds: the warm server's open store sees it at the next recall
    world.add("The staging deploy needs the VPN profile eu-west-ops")
    recalled = world.recall()
    assert "VPN profile eu-west-ops" in recalled and FACT in recalled
    after = world.status()
    assert after["pid"] == first["pid"] and after["requests"] == 3 and after["opens"] == 1
    # the counters the server kept are the session's, as the in-process hook's are
    (state,) = world.agent.rglob("sessions/sess-1.json")
    assert json.loads(state.read_text(encoding="utf-8"))["user_turns"] == 3
    assert f"listening on {world.socket_folder()}" in world.hook_log()


def test_a_killed_server_leaves_a_stale_socket_the_next_hook_falls_back_and_restarts(
    world: World,
) -> None:
    world.recall()
    first = world.server()
    os.kill(first["pid"], signal.SIGKILL)
    _wait_gone(first["pid"])
    (sock,) = world.socket_folder().glob("*.sock")  # left behind by the killed server
    assert FACT in world.recall()  # connection refused: in-process
    second = world.server(other_than=first["pid"])
    assert second["requests"] == 0
    assert FACT in world.recall()
    assert world.status()["requests"] == 1 and sock.exists()


def test_a_stale_socket_file_before_any_server_is_replaced(world: World) -> None:
    folder = world.socket_folder()
    folder.mkdir(mode=0o700)
    world.recall()
    started = world.server()
    os.kill(started["pid"], signal.SIGKILL)
    _wait_gone(started["pid"])
    (path,) = folder.glob("*.sock")
    path.unlink()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a socket file nobody listens on
    dead.close()
    assert FACT in world.recall()
    assert world.server(other_than=started["pid"])["requests"] == 0
    assert FACT in world.recall()


def test_a_server_of_other_code_leaves_and_the_client_answers(world: World) -> None:
    old = subprocess.Popen(
        [sys.executable, "-m", "pi_hermes_memory.adapters.hosts.hook_server", "--build", "old"],
        env=world.env,
        cwd=world.runtime,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    world.pids.add(old.pid)
    assert world.server()["build"] == "old"
    assert FACT in world.recall()  # "restart": answered in-process
    assert old.wait(timeout=120) == 0
    new = world.server(other_than=old.pid)
    assert new["build"] != "old"
    assert FACT in world.recall() and world.status()["requests"] == 1
    assert "a client of other code asked" in world.hook_log()


def test_a_stuck_server_costs_the_turn_nothing_but_its_deadline(world: World) -> None:
    world.recall()
    pid = world.server()["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        done = world.hook("UserPromptSubmit", "--deadline-ms", "300", prompt=PROMPT)
        assert done.stdout == b"" and done.stderr == b""
        done = world.hook("PostToolUse", tool_name="Bash")
        assert done.stdout == b""
    finally:
        os.kill(pid, signal.SIGCONT)
    # resumed, it finishes what it was sent: the turn and the tool call are counted
    (state,) = world.agent.rglob("sessions/sess-1.json")
    for _ in range(600):
        counts = json.loads(state.read_text(encoding="utf-8"))
        if counts.get("tool_calls") == 1:
            break
        time.sleep(0.1)
    assert counts["user_turns"] == 2 and counts["tool_calls"] == 1
    assert world.status()["pid"] == pid


def test_a_socket_folder_others_may_enter_is_refused(world: World) -> None:
    folder = world.socket_folder()
    folder.mkdir()
    folder.chmod(0o755)
    assert FACT in world.recall()  # in-process
    assert FACT in world.recall()
    assert list(folder.iterdir()) == [] and not world.status()["running"]
    assert "open to others (755); refused" in world.hook_log()


def test_an_llm_child_does_nothing(world: World) -> None:
    world.env["PI_HERMES_MEMORY_CHILD"] = "1"
    assert world.hook("UserPromptSubmit", prompt=PROMPT).stdout == b""
    assert not world.socket_folder().exists() and not list(world.agent.rglob("sessions"))
