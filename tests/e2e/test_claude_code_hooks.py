"""`pi-hermes-memory hook EVENT` as Claude Code runs it: a child process per hook, the
documented payload on stdin (issue 30 §2, ADR 0090).

The payloads follow Claude Code's hooks reference (common fields session_id, transcript_path,
cwd, hook_event_name, plus each event's own: source, prompt, tool_name/tool_input/
tool_response, trigger/custom_instructions, stop_hook_active, reason)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_llm import FAKE_LLM

SESSION = "3f1b2c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"


def _payloads(project: Path, transcript: Path) -> dict[str, dict[str, Any]]:
    common = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
    }
    return {
        "SessionStart": {**common, "hook_event_name": "SessionStart", "source": "startup"},
        "UserPromptSubmit": {
            **common,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Write a function to calculate the factorial of a number",
        },
        "PostToolUse": {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": "/path/to/file.txt", "content": "file content"},
            "tool_response": {"filePath": "/path/to/file.txt", "success": True},
            "tool_use_id": "toolu_01ABC123",
        },
        "PreCompact": {
            **common,
            "hook_event_name": "PreCompact",
            "trigger": "manual",
            "custom_instructions": "",
        },
        "Stop": {**common, "hook_event_name": "Stop", "stop_hook_active": False},
        "SessionEnd": {**common, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"},
    }


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    home, agent, project = tmp_path / "home", tmp_path / "agent", tmp_path / "proj"
    for folder in (home, agent, project):
        folder.mkdir()
    transcript = home / ".claude" / "projects" / "-proj" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    rows = [
        {"type": "user", "message": {"role": "user", "content": "how do we release?"}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "make release"}]},
        },
    ]
    transcript.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    _config(agent, {"llm": {"provider": "off"}})
    return {"home": home, "agent": agent, "project": project, "transcript": transcript}


def _config(agent: Path, config: dict[str, Any]) -> None:
    (agent / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")


def _env(world: dict[str, Path], **more: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(world["home"]), "PI_CODING_AGENT_DIR": str(world["agent"])}
    env.pop("PI_HERMES_MEMORY_CHILD", None)
    env.update(more)
    return env


def _argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "pi_hermes_memory.adapters.cli", *args]


def hook(
    world: dict[str, Path], event: str, stdin: bytes | dict[str, Any] | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    if stdin is None:
        stdin = _payloads(world["project"], world["transcript"])[event]
    raw = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
    return subprocess.run(
        _argv("hook", event),
        input=raw,
        capture_output=True,
        env=_env(world, **env),
        cwd=world["home"],  # Claude Code's cwd is not the project's: the payload's is
        timeout=120,
    )


def cli(world: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _argv(*args),
        capture_output=True,
        text=True,
        env=_env(world),
        cwd=world["project"],
        timeout=120,
    )


def _context(done: subprocess.CompletedProcess[bytes], event: str) -> str:
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    context: str = answer["hookSpecificOutput"]["additionalContext"]
    return context


def _hooks_dir(world: dict[str, Path]) -> Path:
    return world["agent"] / "pi-hermes-memory" / "hooks" / "claude-code"


def _state(world: dict[str, Path]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (_hooks_dir(world) / "sessions" / f"{SESSION}.json").read_text(encoding="utf-8")
    )
    return data


def test_session_start_answers_with_the_policy_block(world: dict[str, Path]) -> None:
    context = _context(hook(world, "SessionStart"), "SessionStart")
    assert "<memory-policy>" in context
    assert _state(world)["starts"] == 1


def test_a_remembered_fact_comes_back_for_a_related_prompt(world: dict[str, Path]) -> None:
    added = cli(world, "add", "The deploy script is scripts/deploy.sh and needs STAGE=1")
    assert added.returncode == 0, added.stderr
    payload = {
        **_payloads(world["project"], world["transcript"])["UserPromptSubmit"],
        "prompt": "Where is the deploy script and what does it need?",
    }
    context = _context(hook(world, "UserPromptSubmit", payload), "UserPromptSubmit")
    assert "<relevant-memories>" in context and "scripts/deploy.sh" in context
    # a greeting asks for no memory: no output at all
    quiet = hook(world, "UserPromptSubmit", {**payload, "prompt": "hi"})
    assert (quiet.returncode, quiet.stdout) == (0, b"")
    assert _state(world)["user_turns"] == 2


def test_every_documented_event_exits_0(world: dict[str, Path]) -> None:
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop"):
        done = hook(world, event)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, (event, done.stderr)
        if event in ("PostToolUse", "PreCompact", "Stop"):
            assert done.stdout == b"", event  # nothing that could block or steer the turn
    state = _state(world)
    assert (state["user_turns"], state["tool_calls"]) == (1, 1)
    assert "last_prompt" not in state  # Stop consumed it (auto-capture)
    done = hook(world, "SessionEnd")
    assert (done.returncode, done.stdout) == (0, b"")


def test_a_correction_is_stored_at_once(world: dict[str, Path]) -> None:
    payload = {
        **_payloads(world["project"], world["transcript"])["UserPromptSubmit"],
        "prompt": "No, use pnpm instead of npm.",
    }
    assert hook(world, "UserPromptSubmit", payload).returncode == 0
    listed = cli(world, "list", "--target", "failure", "--json")
    assert "pnpm" in listed.stdout, listed.stderr
    assert _state(world)["captures"] == 1


@pytest.mark.parametrize(
    ("event", "stdin"),
    [
        ("UserPromptSubmit", b"{not json"),
        ("UserPromptSubmit", b"[1, 2]"),
        ("UserPromptSubmit", b"\xff\xfe"),
        ("UserPromptSubmit", b""),
        ("NoSuchEvent", b'{"session_id": "x", "hook_event_name": "NoSuchEvent"}'),
        ("", b"{}"),
        # wired to the wrong event: do nothing rather than the wrong thing
        ("SessionStart", b'{"session_id": "x", "hook_event_name": "Stop"}'),
    ],
)
def test_bad_input_exits_0_quietly(world: dict[str, Path], event: str, stdin: bytes) -> None:
    done = hook(world, event, stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_a_broken_store_never_fails_the_turn(world: dict[str, Path]) -> None:
    (world["agent"] / "pi-hermes-memory").write_text("not a folder", encoding="utf-8")
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        done = hook(world, event)
        assert (done.returncode, done.stdout) == (0, b""), event
        assert b"Traceback" not in done.stderr
        assert len(done.stderr.splitlines()) <= 1


def test_a_broken_config_never_fails_the_turn(world: dict[str, Path]) -> None:
    (world["agent"] / "hermes-memory-config.json").write_text("{oops", encoding="utf-8")
    done = hook(world, "UserPromptSubmit")
    assert done.returncode == 0 and b"Traceback" not in done.stderr


def test_an_llm_child_does_nothing(world: dict[str, Path]) -> None:
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse"):
        done = hook(world, event, PI_HERMES_MEMORY_CHILD="1")
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not (world["agent"] / "pi-hermes-memory").exists()


def test_concurrent_hooks_keep_every_count(world: dict[str, Path]) -> None:
    _config(world["agent"], {"nudgeToolCalls": 0, "skillReviewToolCalls": 0, "nudgeInterval": 0})
    payload = json.dumps(_payloads(world["project"], world["transcript"])["PostToolUse"]).encode()
    rounds, width = 3, 6
    for _ in range(rounds):
        procs = [
            subprocess.Popen(
                _argv("hook", "PostToolUse"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(world),
            )
            for _ in range(width)
        ]
        for proc in procs:
            out, err = proc.communicate(payload, timeout=120)
            assert (proc.returncode, out) == (0, b""), err
    state = _state(world)
    assert state["tool_calls"] == rounds * width
    assert state["tools_since_review"] == rounds * width


REVIEW_REPLY = json.dumps(
    {"operations": [{"action": "add", "target": "memory", "content": "Releases use make release"}]}
)


def _wait_for(predicate: Any, what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.1)


def test_the_worker_runs_the_review_through_the_llm(world: dict[str, Path]) -> None:
    record = world["home"] / "llm-call.json"
    _config(
        world["agent"],
        {
            "nudgeInterval": 1,
            "flushMinTurns": 100,
            "llm": {
                "provider": "command",
                "command": [
                    sys.executable,
                    FAKE_LLM,
                    "--record",
                    str(record),
                    "--reply",
                    REVIEW_REPLY,
                ],
            },
        },
    )
    done = hook(world, "UserPromptSubmit")
    assert done.returncode == 0, done.stderr
    assert _state(world)["reviews_queued"] == 1
    status = world["agent"] / "pi-hermes-memory" / "review-status.json"
    _wait_for(status.exists, "the review's status")
    summary = json.loads(status.read_text(encoding="utf-8"))
    assert (summary["kind"], summary["session_id"], summary["result"]) == ("review", SESSION, "ok")
    # the LLM saw the transcript's messages
    assert "make release" in json.loads(record.read_text(encoding="utf-8"))["stdin"]
    listed = cli(world, "list", "--json")
    assert "Releases use make release" in listed.stdout
    assert not list((_hooks_dir(world) / "jobs").iterdir())
    assert "worker: review of" in (_hooks_dir(world) / "hook.log").read_text(encoding="utf-8")


def test_a_second_worker_leaves_while_the_first_holds_the_lock(world: dict[str, Path]) -> None:
    folder = _hooks_dir(world)
    (folder / "jobs").mkdir(parents=True)
    job = folder / "jobs" / f"{SESSION}.flush.json"
    job.write_text(
        json.dumps({"kind": "flush", "session_id": SESSION, "cwd": str(world["project"])}),
        encoding="utf-8",
    )
    with open(folder / "worker.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # "the first worker"
        done = subprocess.run(
            _argv("hook", "--worker"), capture_output=True, env=_env(world), timeout=120
        )
        assert done.returncode == 0
        assert job.exists()  # not touched
        assert "another worker holds the lock" in (folder / "hook.log").read_text("utf-8")
    done = subprocess.run(
        _argv("hook", "--worker"), capture_output=True, env=_env(world), timeout=120
    )
    assert done.returncode == 0
    assert not job.exists()
    log = (folder / "hook.log").read_text("utf-8")
    assert f"worker: flush of {SESSION}: off" in log  # the LLM is off here: an honest result


def test_a_killed_workers_job_runs_again(world: dict[str, Path]) -> None:
    folder = _hooks_dir(world)
    (folder / "jobs").mkdir(parents=True)
    stale = folder / "jobs" / f"{SESSION}.review.running"
    stale.write_text(json.dumps({"kind": "review", "session_id": SESSION}), encoding="utf-8")
    done = subprocess.run(
        _argv("hook", "--worker"), capture_output=True, env=_env(world), timeout=120
    )
    assert done.returncode == 0
    assert not list((folder / "jobs").iterdir())
    assert f"worker: review of {SESSION}" in (folder / "hook.log").read_text("utf-8")


def test_the_child_marker_is_the_one_llm_children_get() -> None:
    from pi_hermes_memory.adapters.hosts import claude_hooks
    from pi_hermes_memory.adapters.providers import command_llm

    assert claude_hooks.CHILD_ENV == command_llm.CHILD_ENV
