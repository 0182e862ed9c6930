"""The child-process LLM adapter against a real child (tests/support/fake_llm.py)."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.providers.command_llm import CommandCompleter, join_prompt
from pi_hermes_memory.adapters.providers.llm_factory import completer_from_config
from pi_hermes_memory.config.settings import Config, parse_config
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, HermesMemoryError
from pi_hermes_memory.learning.llm import llm_status

from tests.support.fake_llm import FAKE_LLM

SYSTEM = "You save durable facts. Answer with one JSON object."
USER = "[USER] the build is `make all` — 构建命令\n[ASSISTANT] noted"
REPLY = '{"operations": [{"action": "add", "target": "project", "content": "构建: make all"}]}'


def fake(*options: str, **kw: object) -> CommandCompleter:
    return CommandCompleter([sys.executable, FAKE_LLM, *options], **kw)  # type: ignore[arg-type]


def failure(completer: CommandCompleter, timeout: float = 10.0) -> CompletionFailed:
    with pytest.raises(CompletionFailed) as caught:
        completer.complete(SYSTEM, USER, timeout=timeout)
    assert isinstance(caught.value, HermesMemoryError)
    return caught.value


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper counts as gone)."""
    stat_file = Path(f"/proc/{pid}/stat")
    if stat_file.parent.parent.is_dir() and Path("/proc/self").exists():
        try:
            return stat_file.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_the_reply_on_stdout_is_returned_and_the_prompt_arrives_on_stdin(tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    text = fake("--reply", REPLY, "--record", str(record)).complete(SYSTEM, USER, timeout=20)
    assert text == REPLY
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["stdin"] == join_prompt(SYSTEM, USER) == f"{SYSTEM}\n\n{USER}\n"


def test_a_timeout_stops_the_whole_process_group_without_hanging(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    completer = fake("--grandchild", str(pid_file), "--sleep", "30", grace=0.3)
    started = time.monotonic()
    error = failure(completer, timeout=1.0)
    elapsed = time.monotonic() - started
    assert error.reason is CompletionFailure.TIMEOUT
    assert "1 s" in str(error) and "stopped" in str(error)
    # the child would sleep 30 s: returning well before that is the property, not a speed
    assert elapsed < 15
    assert wait_gone(int(pid_file.read_text())), "the grandchild outlived the timeout"


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    completer = fake("--ignore-term", "--sleep", "30", grace=0.3)
    started = time.monotonic()
    error = failure(completer, timeout=0.8)
    assert error.reason is CompletionFailure.TIMEOUT
    assert time.monotonic() - started < 0.8 + 2 * 0.3 + 2.0


def test_a_grandchild_holding_stdout_after_the_child_exits_is_a_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    completer = fake("--grandchild", str(pid_file), "--reply", "partial", grace=0.3)
    error = failure(completer, timeout=1.0)
    assert error.reason is CompletionFailure.TIMEOUT
    assert wait_gone(int(pid_file.read_text()))


def test_an_oversized_reply_is_cut_off_at_once_not_at_the_timeout() -> None:
    completer = fake("--huge", str(20 << 20), "--sleep", "0", max_reply_bytes=64 << 10)
    started = time.monotonic()
    error = failure(completer, timeout=60)
    assert error.reason is CompletionFailure.TOO_LARGE
    assert "65,536 bytes" in str(error)
    assert time.monotonic() - started < 10


def test_the_reply_cap_is_inclusive() -> None:
    assert fake("--huge", "4096", max_reply_bytes=4096).complete(SYSTEM, USER, timeout=20) == (
        "x" * 4096
    )
    error = failure(fake("--huge", "4097", max_reply_bytes=4096))
    assert error.reason is CompletionFailure.TOO_LARGE


def test_a_non_zero_exit_fails_with_its_status_and_clipped_stderr() -> None:
    error = failure(fake("--stderr", "model not found: " + "z" * 5000, "--exit", "3"))
    assert error.reason is CompletionFailure.EXIT
    assert "exit status 3" in str(error) and "model not found" in str(error)
    assert len(str(error)) < 800
    assert "5,017 chars" in str(error)  # shown() says how long the stderr was


def test_a_secret_on_stderr_is_withheld_from_the_message() -> None:
    secret = "ghp_Qx8vN2kLm4Rt7Yp1Zs9Wc3Bd6Fh0Jg5TaUeK"
    error = failure(fake("--stderr", f"bad token {secret}", "--exit", "1"))
    assert secret not in str(error) and "withheld" in str(error)


def test_a_child_killed_by_a_signal_is_an_exit_failure() -> None:
    error = failure(fake("--signal", "9"))
    assert error.reason is CompletionFailure.EXIT and "SIGKILL" in str(error)


def test_a_child_that_never_reads_stdin_still_answers_a_large_prompt() -> None:
    big_user = "y" * (2 << 20)  # far beyond a pipe buffer: the write ends in EPIPE
    completer = fake("--stdin", "none", "--reply", "{}")
    assert completer.complete(SYSTEM, big_user, timeout=20) == "{}"


def test_a_child_that_never_reads_stdin_and_hangs_times_out() -> None:
    completer = fake("--stdin", "none", "--sleep", "30", grace=0.2)
    error = failure(completer, timeout=0.8)
    assert error.reason is CompletionFailure.TIMEOUT


def test_bytes_that_are_not_utf8_come_back_replaced() -> None:
    text = fake("--garbage", "300").complete(SYSTEM, USER, timeout=20)
    assert "\ufffd" in text and len(text) >= 100


def test_a_flood_on_stderr_does_not_block_the_reply() -> None:
    completer = fake("--stderr-flood", str(8 << 20), "--reply", "ok")
    assert completer.complete(SYSTEM, USER, timeout=30) == "ok"


def test_a_program_that_cannot_start_is_a_spawn_failure(tmp_path: Path) -> None:
    missing = CommandCompleter([str(tmp_path / "no-such-llm")])
    error = failure(missing)  # type: ignore[arg-type]
    assert error.reason is CompletionFailure.SPAWN and error.source == "no-such-llm"
    assert str(tmp_path) not in str(error)


def test_no_thread_is_left_behind() -> None:
    before = threading.active_count()
    completer = fake("--reply", "ok")
    for _ in range(5):
        completer.complete(SYSTEM, USER, timeout=20)
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before


# --- composed from the configuration -------------------------------------------------------


def config(raw: dict[str, object], tmp_path: Path) -> Config:
    parsed, warnings = parse_config(
        raw, agent_root=tmp_path, cwd=tmp_path, environ={}, physical=lambda path: path
    )
    assert warnings == ()
    return parsed


def fake_pi(directory: Path) -> Path:
    """An executable `pi` in `directory` that runs the fake LLM with the arguments it got."""
    directory.mkdir()
    program = directory / "pi"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_LLM}" "$@"\n', encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def test_the_pi_preset_runs_pi_print_mode_with_the_overrides(tmp_path: Path) -> None:
    fake_pi(tmp_path / "bin")
    record = tmp_path / "record.json"
    settings = config(
        {
            "llm": {"provider": "pi"},
            "llmModelOverride": "openrouter/deepseek/deepseek-v4-flash",
            "llmThinkingOverride": "low",
        },
        tmp_path,
    )
    environ = {
        "PATH": str(tmp_path / "bin"),
        "FAKE_LLM_REPLY": REPLY,
        "FAKE_LLM_RECORD": str(record),
    }
    status = llm_status(settings, environ)
    assert status.enabled and "deepseek-v4-flash" in status.message
    completer = completer_from_config(settings, environ)
    assert completer is not None
    assert completer.complete(SYSTEM, USER, timeout=20) == REPLY
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["argv"] == [
        "-p",
        "--no-session",
        "--no-tools",
        "--model",
        "openrouter/deepseek/deepseek-v4-flash",
        "--thinking",
        "low",
    ]
    assert seen["stdin"] == join_prompt(SYSTEM, USER)


def test_the_command_provider_runs_the_configured_argv(tmp_path: Path) -> None:
    settings = config(
        {"llm": {"provider": "command", "command": [sys.executable, FAKE_LLM, "--echo"]}}, tmp_path
    )
    completer = completer_from_config(settings, dict(os.environ))
    assert completer is not None
    assert completer.complete(SYSTEM, USER, timeout=20) == join_prompt(SYSTEM, USER)


def test_a_missing_program_turns_the_llm_off_with_the_reason(tmp_path: Path) -> None:
    settings = config({"llm": {"provider": "pi"}}, tmp_path)
    environ = {"PATH": str(tmp_path / "empty")}
    assert completer_from_config(settings, environ) is None
    assert "'pi'" in llm_status(settings, environ).message
