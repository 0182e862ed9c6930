"""The Pi host (issue 30 §1, ADR 0091): the bridge protocol through a real child process,
`setup pi`, and the real `pi` (print mode) with the installed extension against a scripted
OpenAI-compatible model server on 127.0.0.1.

The real-pi tests skip only when `pi` is not on PATH and PI_HERMES_MEMORY_REQUIRE_PI is unset;
.ci/run installs the pinned `@mariozechner/pi-coding-agent` and sets the variable, so in CI
they cannot skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_model_server import (
    FakeModelServer,
    Reply,
    last_user_text,
    system_text,
    tool_names,
    tool_results,
)
from tests.support.processes import CLI, run, run_cli


def _env(root: Path) -> dict[str, str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    env.pop("PI_HERMES_MEMORY_CHILD", None)
    env.pop("PI_MEMORY_KNOWLEDGE_PATHS", None)
    return env


class BridgeProcess:
    def __init__(self, root: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*CLI, "bridge"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env or _env(root),
        )
        self.next_id = 0

    def raw(self, line: bytes) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def request(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        answer = self.raw(
            json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        )
        assert answer["id"] == self.next_id
        return answer

    def result(self, method: str, **params: Any) -> Any:
        answer = self.request(method, **params)
        assert "result" in answer, answer
        return answer["result"]

    def close(self) -> tuple[int, bytes, bytes]:
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "agent").mkdir()
    (tmp_path / "proj").mkdir()
    return tmp_path / "agent"


def test_bridge_protocol_tools_calls_and_bad_lines(root: Path) -> None:
    bridge = BridgeProcess(root, root.parent / "proj")
    hello = bridge.result("hello")
    assert hello["protocol"] == 1 and hello["child"] is False
    names = [t["name"] for t in bridge.result("tools")["tools"]]
    assert names[:2] == ["memory", "memory_search"]
    assert all(t["parameters"]["type"] == "object" for t in bridge.result("tools")["tools"])
    added = bridge.result(
        "call",
        name="memory",
        arguments={
            "action": "add",
            "target": "memory",
            "content": "The deploy command is make ship",
        },
    )
    assert added["success"] is True and added["status"] == "added"
    found = bridge.result("call", name="memory_search", arguments={"query": "deploy command"})
    assert "make ship" in json.dumps(found)
    # every bad line gets an error answer and the bridge carries on
    assert bridge.raw(b"this is not json")["error"]["code"] == "parse_error"
    assert bridge.raw(b"[1, 2]")["error"]["code"] == "invalid_request"
    assert bridge.request("no_such_method")["error"]["code"] == "unknown_method"
    assert bridge.request("user_message", text=42)["error"]["code"] == "invalid_params"
    assert bridge.raw(b'{"id": 9, "method": "ping", "params": []}')["error"]["code"] == (
        "invalid_params"
    )
    unknown_tool = bridge.result("call", name="no_such_tool", arguments={})
    assert unknown_tool["success"] is False and unknown_tool["status"] == "unknown_tool"
    assert bridge.result("ping") == {}
    code, rest, _err = bridge.close()
    assert code == 0 and rest == b""  # stdout carried nothing but the answers


def test_bridge_lifecycle_recall_capture_compact_shutdown(root: Path) -> None:
    bridge = BridgeProcess(root, root.parent / "proj")
    started = bridge.result("session_start", session_id="s-1", cwd=str(root.parent / "proj"))
    assert started == {"session_id": "s-1", "project": "proj"}
    bridge.result(
        "call",
        name="memory",
        arguments={
            "action": "add",
            "target": "memory",
            "content": "The deploy command is make ship",
        },
    )
    turn = bridge.result("before_agent_start", prompt="how do I run the deploy command?")
    assert "<memory-policy>" in turn["system_prompt"]
    assert turn["recall"] is not None and "make ship" in turn["recall"]
    # a correction is captured at once (the seed's correction capture)
    bridge.result("user_message", text="No, that's wrong: never use sudo with npm here.")
    bridge.result("assistant_message", text="Understood.")
    bridge.result("tool_call", name="bash")
    assert bridge.result("agent_end", user_text="x", assistant_text="y") == {"captured": 0}
    assert bridge.result("before_compact") == {"flushed": False}  # no LLM configured
    assert bridge.result("shutdown", timeout=5) == {"finished": True}
    assert bridge.close()[0] == 0
    listed = run_cli(
        "list", "--target", "failure", "--json", env=_env(root), cwd=root.parent / "proj"
    )
    assert "sudo" in listed.stdout


def test_bridge_store_that_cannot_open_answers_unavailable(root: Path) -> None:
    (root / "hermes-memory-config.json").write_text('{"storage": {"backend": "postgres"}}')
    env = {**_env(root), "PI_MEMORY_DB_PATH": "", "PG_DSN": ""}
    bridge = BridgeProcess(root, root.parent / "proj", env)
    answer = bridge.request("call", name="memory", arguments={"action": "add", "content": "x"})
    assert answer["error"]["code"] in ("unavailable", "internal"), answer
    assert bridge.result("ping") == {}
    assert bridge.close()[0] == 0


def test_bridge_inside_an_llm_child_offers_nothing(root: Path) -> None:
    env = {**_env(root), "PI_HERMES_MEMORY_CHILD": "1"}
    bridge = BridgeProcess(root, root.parent / "proj", env)
    assert bridge.result("tools") == {"tools": []}
    assert bridge.result("before_agent_start", prompt="hi") == {"system_prompt": "", "recall": None}
    assert bridge.request("call", name="memory", arguments={})["error"]["code"] == "unavailable"
    assert bridge.close()[0] == 0
    assert not (root / "pi-hermes-memory").exists()  # never even opened the store


def test_setup_pi_installs_idempotently_and_uninstalls_only_ours(root: Path) -> None:
    env, cwd = _env(root), root.parent / "proj"

    def setup(*args: str) -> dict[str, Any]:
        done = run_cli("setup", "pi", "--json", *args, env=env, cwd=cwd)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    config = root / "hermes-memory-config.json"
    config.write_text('{"tools": {"sets": ["hermes"]}}')
    first = setup()
    assert {Path(c["path"]).name for c in first["changes"]} == {
        "index.ts",
        "bridge.json",
        "hermes-memory-config.json",
    }
    folder = root / "extensions" / "pi-hermes-memory"
    sidecar = json.loads((folder / "bridge.json").read_text())
    assert Path(sidecar["command"][0]).is_absolute()
    assert [t["name"] for t in sidecar["tools"]] == ["memory", "memory_search"]
    assert json.loads(config.read_text()) == {
        "tools": {"sets": ["hermes"]},
        "llm": {"provider": "pi"},
    }
    assert setup()["changes"] == []  # idempotent
    setup("--uninstall")
    assert not (folder / "index.ts").exists() and not (folder / "bridge.json").exists()
    assert json.loads(config.read_text()) == {"tools": {"sets": ["hermes"]}}
    # an llm section a person wrote is never touched
    config.write_text('{"llm": {"provider": "command", "command": ["my-llm"]}}')
    setup("--project")
    assert (cwd / ".pi" / "extensions" / "pi-hermes-memory" / "index.ts").is_file()
    setup("--project", "--uninstall")
    assert json.loads(config.read_text()) == {"llm": {"provider": "command", "command": ["my-llm"]}}
    # an unreadable config is refused, nothing written
    config.write_text("{not json")
    done = run_cli("setup", "pi", env=env, cwd=cwd, expect=1)
    assert "not valid JSON" in done.stderr
    assert not (folder / "index.ts").exists()


# --- the real pi ---------------------------------------------------------------------------


def _pi() -> str:
    found = shutil.which("pi")
    if found is None:
        if os.environ.get("PI_HERMES_MEMORY_REQUIRE_PI"):
            pytest.fail("PI_HERMES_MEMORY_REQUIRE_PI is set but `pi` is not on PATH")
        pytest.skip("`pi` is not installed (npm install @mariozechner/pi-coding-agent)")
    return found


class PiWorld:
    """A tmp agent root with Pi's models.json pointing at the fake model server, the
    extension installed by `setup pi`, and a project folder."""

    def __init__(self, root: Path, server: FakeModelServer, pi: str) -> None:
        self.root, self.server, self.pi = root, server, pi
        self.project = root.parent / "proj"
        self.env = {
            **_env(root),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "PATH": f"{Path(pi).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        provider = {
            "baseUrl": server.base_url,
            "api": "openai-completions",
            "apiKey": "fake-key",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "m1", "contextWindow": 128000, "maxTokens": 4096}],
        }
        (root / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
        (root / "settings.json").write_text(
            json.dumps({"defaultProvider": "fake", "defaultModel": "m1"})
        )
        run_cli("setup", "pi", env=self.env)

    def run(self, prompt: str) -> subprocess.CompletedProcess[str]:
        return run(
            [self.pi, "-p", prompt], env=self.env, cwd=self.project, timeout=180, expect=None
        )


@pytest.fixture
def fake_model() -> Iterator[FakeModelServer]:
    def script(body: dict[str, Any]) -> Reply:
        user = last_user_text(body)
        if "memory" not in tool_names(body):  # a child `pi -p` (flush, review): plain text
            return Reply(text="NONE")
        if tool_results(body):
            return Reply(text="Done.")
        if user.startswith("remember:"):
            fact = user.removeprefix("remember:").strip()
            return Reply(
                tool_calls=(("memory", {"action": "add", "target": "memory", "content": fact}),)
            )
        if user.startswith("compact"):
            return Reply(text="ok", prompt_tokens=127_000)  # over the window: Pi compacts
        return Reply(text="ok")

    server = FakeModelServer(script).start()
    yield server
    server.stop()


def test_real_pi_remembers_and_the_next_session_carries_it(
    root: Path, fake_model: FakeModelServer
) -> None:
    world = PiWorld(root, fake_model, _pi())
    first = world.run("remember: The deploy command is make ship")
    assert first.returncode == 0, first.stderr
    assert "memory" in tool_names(fake_model.requests[0])
    results = [r for body in fake_model.requests for r in tool_results(body)]
    assert any('"status":"added"' in r.replace(" ", "") for r in results), results
    store = run_cli("search", "deploy", "--json", env=world.env, cwd=world.project)
    assert "make ship" in store.stdout
    # the next session: the prompt the model receives carries the fact (auto-recall)
    fake_model.requests.clear()
    second = world.run("What is the deploy command?")
    assert second.returncode == 0, second.stderr
    assert "<memory-policy>" in system_text(fake_model.requests[0])
    assert "make ship" in system_text(fake_model.requests[0])
    # a correction in the conversation is captured at once
    third = world.run("No, that's wrong: always run the tests with make check.")
    assert third.returncode == 0, third.stderr
    failures = run_cli("list", "--target", "failure", "--json", env=world.env, cwd=world.project)
    assert "make check" in failures.stdout


def test_real_pi_compaction_and_shutdown_flush_through_a_child_pi(
    root: Path, fake_model: FakeModelServer
) -> None:
    world = PiWorld(root, fake_model, _pi())
    cfg = root / "hermes-memory-config.json"
    config = json.loads(cfg.read_text())
    config["flushMinTurns"] = 1
    cfg.write_text(json.dumps(config))
    done = world.run("compact after this please")
    assert done.returncode == 0, done.stderr
    # the flush ran `pi -p --no-session --no-tools` (the `pi` preset) against the same model
    # server: that child saw no memory tools and no memory prompt (no recursion)
    children = [b for b in fake_model.requests if "memory" not in tool_names(b)]
    assert children, [tool_names(b) for b in fake_model.requests]
    assert all("<memory-policy>" not in system_text(b) for b in children)
    status = json.loads(run_cli("review-status", "--json", env=world.env, cwd=world.project).stdout)
    assert "flush" in json.dumps(status), status


def test_real_pi_with_a_broken_python_says_memory_unavailable(
    root: Path, fake_model: FakeModelServer
) -> None:
    world = PiWorld(root, fake_model, _pi())
    sidecar = root / "extensions" / "pi-hermes-memory" / "bridge.json"
    broken = json.loads(sidecar.read_text())
    broken["command"] = [str(root / "no-such-python"), "-m", "pi_hermes_memory.adapters.cli"]
    sidecar.write_text(json.dumps(broken))
    done = world.run("remember: The deploy command is make ship")
    assert done.returncode == 0, done.stderr
    results = [r for body in fake_model.requests for r in tool_results(body)]
    assert any("memory unavailable" in r for r in results), results
    assert "Traceback" not in done.stdout + done.stderr
