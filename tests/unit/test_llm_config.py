"""The `llm` configuration section, the LLM status line and the pi preset (no process runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pi_hermes_memory.config.settings import (
    DEFAULT_LLM_MAX_REPLY_BYTES,
    LLM_MAX_TIMEOUT_MS,
    Config,
    ConfigWarning,
    LlmProvider,
    ThinkingLevel,
    parse_config,
)
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, InvalidArgument
from pi_hermes_memory.learning.llm import (
    MAX_TIMEOUT_S,
    LlmOffReason,
    OffCompleter,
    checked_timeout,
    claude_command,
    llm_plan,
    llm_status,
    pi_command,
)

ROOT = Path("/home/u/.pi/agent")
SECRET = "ghp_Qx8vN2kLm4Rt7Yp1Zs9Wc3Bd6Fh0Jg5TaUeK"


def parse(raw: dict[str, Any]) -> tuple[Config, tuple[ConfigWarning, ...]]:
    return parse_config(
        raw, agent_root=ROOT, cwd=Path("/work/app"), environ={}, physical=lambda path: path
    )


def found(program: str, path: str | None = None) -> str:
    return f"/usr/bin/{program}"


def missing(program: str, path: str | None = None) -> None:
    return None


def status_of(raw: dict[str, Any], environ: dict[str, str] | None = None, which: Any = found):
    config, _ = parse(raw)
    return llm_status(config, environ or {}, which=which)


def test_the_llm_is_off_by_default_and_says_so() -> None:
    config, warnings = parse({})
    assert warnings == () and config.llm.provider is LlmProvider.OFF
    assert config.llm.timeout_ms == 60_000
    assert config.llm.max_reply_bytes == DEFAULT_LLM_MAX_REPLY_BYTES == 1 << 20
    assert config.llm.temperature == 0.0
    status = llm_status(config, {}, which=found)
    assert not status.enabled and status.off_reason is LlmOffReason.PROVIDER_OFF
    assert "llm.provider is off" in status.message


def test_the_pi_preset_is_on_when_pi_is_found() -> None:
    raw = {
        "llm": {"provider": "pi"},
        "llmModelOverride": " openrouter/x ",
        "llmThinkingOverride": "low",
    }
    status = status_of(raw)
    assert status.enabled and status.provider is LlmProvider.PI
    assert "openrouter/x" in status.message and "thinking low" in status.message
    assert "timeout 60 s" in status.message and "1 MiB" in status.message
    off = status_of(raw, which=missing)
    assert off.off_reason is LlmOffReason.PROGRAM_NOT_FOUND and "'pi'" in off.message


def test_the_claude_preset_runs_print_mode_without_tools() -> None:
    """issue 30, ADR 0090: no built-in tool, no MCP server, no saved session."""
    raw = {"llm": {"provider": "claude"}, "llmModelOverride": "haiku"}
    config, warnings = parse(raw)
    assert warnings == () and config.llm.provider is LlmProvider.CLAUDE
    plan = llm_plan(config, {}, which=found)
    assert plan.status.enabled and "claude -p (haiku, no tools)" in plan.status.message
    assert plan.argv == (
        "/usr/bin/claude",
        "-p",
        "--output-format",
        "text",
        "--no-session-persistence",
        "--strict-mcp-config",
        "--tools",
        "",
        "--model",
        "haiku",
    )
    assert claude_command(None)[-2:] == ("--tools", "")
    off = status_of({"llm": {"provider": "claude"}}, which=missing)
    assert off.off_reason is LlmOffReason.PROGRAM_NOT_FOUND and "'claude'" in off.message


def test_pi_looks_for_the_program_on_the_given_path() -> None:
    seen: list[tuple[str, str | None]] = []

    def which(program: str, path: str | None = None) -> str:
        seen.append((program, path))
        return "/x/pi"

    config, _ = parse({"llm": {"provider": "pi"}})
    assert llm_status(config, {"PATH": "/opt/pi/bin"}, which=which).enabled
    assert seen == [("pi", "/opt/pi/bin")]


@pytest.mark.parametrize(
    ("model", "thinking", "expected"),
    [
        (None, None, []),
        ("sonnet", None, ["--model", "sonnet", "--thinking", "off"]),
        (None, ThinkingLevel.HIGH, ["--thinking", "high"]),
        ("a/b", ThinkingLevel.XHIGH, ["--model", "a/b", "--thinking", "xhigh"]),
    ],
)
def test_the_pi_command(
    model: str | None, thinking: ThinkingLevel | None, expected: list[str]
) -> None:
    assert pi_command(model, thinking) == ("pi", "-p", "--no-session", "--no-tools", *expected)


def test_the_command_provider_needs_a_command() -> None:
    status = status_of({"llm": {"provider": "command"}})
    assert status.off_reason is LlmOffReason.MISSING_FIELD and "llm.command" in status.message
    config, warnings = parse({"llm": {"provider": "command", "command": ["llm", "-m", "x"]}})
    assert warnings == () and config.llm.command == ("llm", "-m", "x")
    plan = llm_plan(config, {}, which=found)
    assert plan.status.enabled and plan.argv == ("/usr/bin/llm", "-m", "x")
    assert plan.source == "llm"
    assert "'llm' (2 argument(s))" in plan.status.message


@pytest.mark.parametrize(
    "command", ["llm -m x", [], [""], ["  ", "x"], ["llm", 3], ["a\x00b"], [["llm"]], ["x"] * 300]
)
def test_an_invalid_command_turns_the_llm_off(command: object) -> None:
    config, warnings = parse({"llm": {"provider": "command", "command": command}})
    assert [w.field for w in warnings] == ["llm.command"]
    assert "no shell" in warnings[0].message and warnings[0].message.endswith("the LLM is off")
    status = llm_status(config, {}, which=found)
    assert status.off_reason is LlmOffReason.INVALID_CONFIG and "llm.command" in status.message


def test_a_secret_in_the_command_is_refused_without_being_repeated() -> None:
    config, warnings = parse({"llm": {"provider": "command", "command": ["llm", "--key", SECRET]}})
    assert [w.field for w in warnings] == ["llm.command"]
    assert SECRET not in repr(warnings) and "environment variable" in warnings[0].message
    assert config.llm.command is None
    assert llm_status(config, {}, which=found).off_reason is LlmOffReason.INVALID_CONFIG


def test_a_literal_api_key_is_refused_and_names_the_env_var_form() -> None:
    raw = {
        "llm": {
            "provider": "openai-compatible",
            "baseUrl": "https://api.example.com/v1",
            "model": "m",
            "apiKey": SECRET,
        }
    }
    config, warnings = parse(raw)
    assert [w.field for w in warnings] == ["llm.apiKey"]
    assert "llm.apiKeyEnv" in warnings[0].message
    assert SECRET not in repr(warnings) and SECRET not in repr(config)
    assert llm_status(config, {}).off_reason is LlmOffReason.INVALID_CONFIG


def test_openai_compatible_needs_a_base_url_a_model_and_the_named_key() -> None:
    base = {"provider": "openai-compatible", "baseUrl": "https://api.example.com/v1/t-1"}
    no_model = status_of({"llm": base})
    assert no_model.off_reason is LlmOffReason.MISSING_FIELD and "llm.model" in no_model.message
    no_url = status_of({"llm": {"provider": "openai-compatible", "model": "m"}})
    assert no_url.off_reason is LlmOffReason.MISSING_FIELD and "llm.baseUrl" in no_url.message
    keyed = {"llm": {**base, "model": "gpt", "apiKeyEnv": "MY_LLM_KEY"}}
    unset = status_of(keyed, {"MY_LLM_KEY": "  "})
    assert unset.off_reason is LlmOffReason.API_KEY_MISSING
    assert "MY_LLM_KEY named by llm.apiKeyEnv is not set" in unset.message
    config, _ = parse(keyed)
    plan = llm_plan(config, {"MY_LLM_KEY": f" {SECRET} "})
    assert plan.status.enabled and plan.api_key == SECRET
    assert SECRET not in repr(plan) and "t-1" not in repr(plan)
    assert "https://api.example.com" in plan.status.message and "t-1" not in plan.status.message
    assert plan.source == "https://api.example.com"


def test_a_keyless_local_server_is_allowed() -> None:
    raw = {
        "llm": {
            "provider": "openai-compatible",
            "baseUrl": "http://127.0.0.1:8080/v1",
            "model": "q",
        }
    }
    status = status_of(raw)
    assert status.enabled and "no API key" in status.message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("provider", "gpt"),
        ("provider", 1),
        ("baseUrl", "ftp://x"),
        ("baseUrl", "https://user:pw@x/v1"),
        ("baseUrl", "https://x/v1?key=1"),
        ("baseUrl", 3),
        ("model", ""),
        ("model", 3),
        ("apiKeyEnv", "MY-KEY"),
        ("timeoutMs", 0),
        ("timeoutMs", LLM_MAX_TIMEOUT_MS + 1),
        ("timeoutMs", 1.5),
        ("maxReplyBytes", 1023),
        ("maxReplyBytes", (64 << 20) + 1),
        ("maxReplyBytes", "1MB"),
        ("temperature", 2.5),
        ("temperature", True),
        ("temperature", "0"),
    ],
)
def test_any_invalid_field_turns_the_llm_off_with_a_warning(field: str, value: object) -> None:
    raw = {
        "llm": {
            "provider": "openai-compatible",
            "baseUrl": "https://api.example.com/v1",
            "model": "m",
            field: value,
        }
    }
    config, warnings = parse(raw)
    assert [w.field for w in warnings] == [f"llm.{field}"]
    assert warnings[0].message.endswith("the LLM is off")
    status = llm_status(config, {})
    assert status.off_reason is LlmOffReason.INVALID_CONFIG and f"llm.{field}" in status.message


def test_a_section_that_is_not_an_object_is_off() -> None:
    config, warnings = parse({"llm": ["pi"]})
    assert [w.field for w in warnings] == ["llm"]
    assert llm_status(config, {}).off_reason is LlmOffReason.INVALID_CONFIG


def test_limits_and_their_defaults() -> None:
    config, _ = parse({"consolidationTimeoutMs": 90_000, "llm": {"maxReplyBytes": 64 << 20}})
    assert config.llm.timeout_ms == 90_000 and config.llm.max_reply_bytes == 64 << 20
    config, _ = parse({"consolidationTimeoutMs": 10**9})
    assert config.llm.timeout_ms == LLM_MAX_TIMEOUT_MS  # the fallback is capped too
    config, warnings = parse({"llm": {"timeoutMs": 5000, "temperature": False, "model": None}})
    assert warnings == () and config.llm.timeout_ms == 5000 and config.llm.temperature is None


def test_a_timeout_is_checked_and_capped() -> None:
    assert checked_timeout(2) == 2.0 and checked_timeout(10**9) == MAX_TIMEOUT_S == 600
    for bad in (0, -1, float("nan"), True, None):
        with pytest.raises(InvalidArgument):
            checked_timeout(bad)  # type: ignore[arg-type]


def test_the_off_completer_fails_with_the_status_line() -> None:
    status = status_of({})
    with pytest.raises(CompletionFailed) as caught:
        OffCompleter(status).complete("s", "u", timeout=1)
    assert caught.value.reason is CompletionFailure.OFF
    assert str(caught.value) == status.message


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.just([]),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(st.text(), inner, min_size=1, max_size=3)
    ),
    max_leaves=8,
)
_FIELDS = ("provider", "command", "timeoutMs", "maxReplyBytes", "baseUrl", "model", "apiKeyEnv",
           "temperature", "apiKey")  # fmt: skip


@example({"provider": "openai-compatible", "baseUrl": "http://h/v1", "model": SECRET})
@example({"provider": "command", "command": ["x", SECRET]})
@given(st.dictionaries(st.sampled_from(_FIELDS), _JSON | st.just(SECRET), max_size=6))
def test_any_llm_section_parses_and_no_warning_repeats_a_value(section: dict[str, Any]) -> None:
    config, warnings = parse({"llm": section})
    status = llm_status(config, {}, which=found)
    assert isinstance(status.message, str)
    assert SECRET not in repr(warnings) and SECRET not in status.message
    if warnings:
        assert not status.enabled
