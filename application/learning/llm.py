"""The LLM port and the plain facts about the configured LLM (issue 12 §1).

`Completer` is the port every LLM-backed feature (review, flush, correction capture,
consolidation, curation, interview, learn-skill) talks to: a system prompt and a user prompt
in, the reply's text out, within a timeout, or one `CompletionFailed` with a reason code.
Adapters (`pi_hermes_memory.adapters.providers.command_llm`, `.llm_openai`) do not inherit from it.

`llm_status` says whether an LLM is usable and, when it is not, exactly why ("llm.provider is
off", "the environment variable X named by llm.apiKeyEnv is not set", ...); a feature that
needs the LLM reports that line instead of failing.
`pi_hermes_memory.adapters.providers.llm_factory.
completer_from_config` builds the adapter from the same decision (the composition root owns
adapter imports; this module imports none, so `import pi_hermes_memory` stays light).
"""

from __future__ import annotations

import enum
import math
import os
import shutil
from collections.abc import Callable, Mapping
from typing import Final

import attrs
from pi_hermes_memory.config.settings import (
    LLM_MAX_TIMEOUT_MS,
    Config,
    LlmConfig,
    LlmProvider,
    ThinkingLevel,
)
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, InvalidArgument
from pi_hermes_memory.ports.llm import Completer

__all__ = [
    "CLAUDE_PROGRAM",
    "PI_PROGRAM",
    "Completer",
    "LlmOffReason",
    "LlmPlan",
    "LlmStatus",
    "OffCompleter",
    "checked_timeout",
    "claude_command",
    "guarded_complete",
    "llm_plan",
    "llm_status",
    "pi_command",
]

PI_PROGRAM: Final = "pi"
CLAUDE_PROGRAM: Final = "claude"
#: seconds no completion may exceed, whatever a caller asks
MAX_TIMEOUT_S: Final = LLM_MAX_TIMEOUT_MS / 1000

Which = Callable[..., str | None]


class LlmOffReason(enum.StrEnum):
    """Why no LLM is usable (`LlmStatus.off_reason`)."""

    PROVIDER_OFF = "provider-off"
    INVALID_CONFIG = "invalid-config"
    #: a field the provider needs is not set (command, baseUrl, model)
    MISSING_FIELD = "missing-field"
    #: the variable named by llm.apiKeyEnv is unset or blank
    API_KEY_MISSING = "api-key-missing"
    #: the program of the command (or `pi`) is not on PATH
    PROGRAM_NOT_FOUND = "program-not-found"


@attrs.frozen(kw_only=True)
class LlmStatus:
    """Whether an LLM is usable, and a line for people: what it is, or why it is off."""

    provider: LlmProvider
    off_reason: LlmOffReason | None
    message: str

    @property
    def enabled(self) -> bool:
        return self.off_reason is None


@attrs.frozen(kw_only=True)
class LlmPlan:
    """What the composition root builds: the status plus, when enabled, the argv of a
    command provider or the API key of an HTTP one (kept out of repr)."""

    status: LlmStatus
    settings: LlmConfig
    argv: tuple[str, ...] | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    #: the environment a child process gets (the caller's, as given)
    environ: Mapping[str, str] = attrs.field(factory=dict, repr=False)

    @property
    def source(self) -> str:
        """The LLM as messages name it: a program name or a scheme and host, no secret."""
        if self.argv:
            return os.path.basename(self.argv[0]) or self.argv[0]
        return self.settings.redacted_base_url or self.status.provider.value


def pi_command(model: str | None, thinking: ThinkingLevel | None) -> tuple[str, ...]:
    """The `pi` preset: `pi -p --no-session --no-tools [--model M] [--thinking T]`.

    The prompt goes on stdin (print mode merges piped stdin into the prompt). As in the
    original extension, a model override without a thinking override runs with thinking
    `off`. `--no-tools`: the child only writes text; the library applies what it asks for."""
    argv = [PI_PROGRAM, "-p", "--no-session", "--no-tools"]
    level = thinking if thinking is not None else (ThinkingLevel.OFF if model else None)
    if model:
        argv += ["--model", model]
    if level is not None:
        argv += ["--thinking", level.value]
    return tuple(argv)


def claude_command(model: str | None) -> tuple[str, ...]:
    """The `claude` preset (issue 30, ADR 0090): `claude -p --output-format text
    --no-session-persistence --strict-mcp-config --tools "" [--model M]` (flags of Claude
    Code 2.1.332's `--help`; its transcripts folder gets nothing of ours).

    The prompt goes on stdin. `--tools ""` removes every built-in tool and
    `--strict-mcp-config` (with no `--mcp-config`) every MCP server, this library's own
    included: the child only writes text; the library applies what it asks for. The child
    carries PI_HERMES_MEMORY_CHILD=1, so the hooks `setup claude-code` installed do nothing
    in it (no recursion). llmThinkingOverride does not apply (print mode has no such flag)."""
    argv = [
        CLAUDE_PROGRAM,
        "-p",
        "--output-format",
        "text",
        "--no-session-persistence",
        "--strict-mcp-config",
        "--tools",
        "",
    ]
    if model:
        argv += ["--model", model]
    return tuple(argv)


def checked_timeout(timeout: float) -> float:
    """`timeout` in seconds, capped at `MAX_TIMEOUT_S`; InvalidArgument unless positive."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise InvalidArgument("timeout must be a number of seconds")
    if math.isnan(timeout) or timeout <= 0:
        raise InvalidArgument("timeout must be a positive number of seconds")
    return min(float(timeout), MAX_TIMEOUT_S)


def _off(provider: LlmProvider, reason: LlmOffReason, why: str) -> LlmStatus:
    return LlmStatus(provider=provider, off_reason=reason, message=f"the LLM is off: {why}")


def _limits(settings: LlmConfig) -> str:
    size = settings.max_reply_bytes
    shown = f"{size // (1 << 20)} MiB" if size % (1 << 20) == 0 else f"{size:,} bytes"
    return f"timeout {settings.timeout_ms / 1000:g} s, replies up to {shown}"


def _command_plan(config: Config, environ: Mapping[str, str], which: Which) -> LlmPlan | LlmStatus:
    settings = config.llm
    provider = settings.provider
    if provider is LlmProvider.PI:
        argv = pi_command(config.llm_model_override, config.llm_thinking_override)
    elif provider is LlmProvider.CLAUDE:
        argv = claude_command(config.llm_model_override)
    elif settings.command is None:
        return _off(
            provider,
            LlmOffReason.MISSING_FIELD,
            "llm.command is not set (provider command needs the program and its arguments "
            'as a list, e.g. ["llm", "-m", "gpt-4o-mini"])',
        )
    else:
        argv = settings.command
    program = argv[0]
    # Run what the check found: the same PATH, and on Windows the same PATHEXT (pi.cmd).
    resolved = which(program, path=environ.get("PATH", os.defpath))
    if resolved is None:
        return _off(
            provider,
            LlmOffReason.PROGRAM_NOT_FOUND,
            f"the program {os.path.basename(program)!r} of llm.provider {provider.value} "
            "was not found (not on PATH, or not executable)",
        )
    if provider is LlmProvider.PI:
        model = config.llm_model_override or "pi's default model"
        thinking = argv[argv.index("--thinking") + 1] if "--thinking" in argv else "default"
        what = f"pi -p ({model}, thinking {thinking})"
    elif provider is LlmProvider.CLAUDE:
        model = config.llm_model_override or "claude's default model"
        what = f"claude -p ({model}, no tools)"
    else:
        what = f"command {os.path.basename(program)!r} ({len(argv) - 1} argument(s))"
    status = LlmStatus(provider=provider, off_reason=None, message=f"{what}; {_limits(settings)}")
    return LlmPlan(status=status, settings=settings, argv=(resolved, *argv[1:]), environ=environ)


def _http_plan(settings: LlmConfig, environ: Mapping[str, str]) -> LlmPlan | LlmStatus:
    provider = settings.provider
    for field, value in (("baseUrl", settings.base_url), ("model", settings.model)):
        if value is None:
            return _off(
                provider,
                LlmOffReason.MISSING_FIELD,
                f"llm.{field} is not set (provider openai-compatible needs baseUrl and model)",
            )
    key: str | None = None
    if settings.api_key_env is not None:
        key = environ.get(settings.api_key_env, "").strip()
        if not key:
            return _off(
                provider,
                LlmOffReason.API_KEY_MISSING,
                f"the environment variable {settings.api_key_env} named by llm.apiKeyEnv is "
                "not set",
            )
    what = f"openai-compatible {settings.redacted_base_url}, model {settings.model}"
    if key is None:
        what += ", no API key"
    status = LlmStatus(provider=provider, off_reason=None, message=f"{what}; {_limits(settings)}")
    return LlmPlan(status=status, settings=settings, api_key=key, environ=environ)


def llm_plan(config: Config, environ: Mapping[str, str], *, which: Which = shutil.which) -> LlmPlan:
    """The decision behind `llm_status`, with what an adapter needs when it is enabled.
    `which(program, path=...)` finds a program (`shutil.which`; injected by tests)."""
    settings = config.llm
    provider = settings.provider
    result: LlmPlan | LlmStatus
    if settings.invalid_fields:
        result = _off(
            provider,
            LlmOffReason.INVALID_CONFIG,
            f"invalid field(s) {', '.join(settings.invalid_fields)} in the configuration "
            "(see its warnings)",
        )
    elif provider is LlmProvider.OFF:
        result = _off(
            provider,
            LlmOffReason.PROVIDER_OFF,
            "llm.provider is off (set it to pi, claude, command or openai-compatible)",
        )
    elif provider is LlmProvider.OPENAI_COMPATIBLE:
        result = _http_plan(settings, environ)
    elif provider is LlmProvider.CUSTOM and settings.custom is not None:
        result = LlmStatus(
            provider=provider,
            off_reason=None,
            message=f"custom adapter {settings.custom.path}; {_limits(settings)}",
        )
    else:
        result = _command_plan(config, environ, which)
    if isinstance(result, LlmStatus):
        return LlmPlan(status=result, settings=settings)
    return result


def llm_status(
    config: Config, environ: Mapping[str, str], *, which: Which = shutil.which
) -> LlmStatus:
    """Whether the configured LLM is usable, and a line saying what it is or why not."""
    return llm_plan(config, environ, which=which).status


@attrs.frozen
class OffCompleter:
    """A `Completer` for a store without an LLM: every call fails with reason `off` and the
    status line, so a feature can be wired the same way whether or not an LLM is set up."""

    status: LlmStatus

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        raise CompletionFailed(CompletionFailure.OFF, "off", self.status.message)


#: characters of a foreign exception's message a `CompletionFailed` shows
FOREIGN_DETAIL_CHARS: Final = 200


def _source(completer: object) -> str:
    source = getattr(completer, "source", None)
    return source if isinstance(source, str) and source else type(completer).__name__


def guarded_complete(completer: Completer, system: str, user: str, *, timeout: float) -> str:
    """`completer.complete(...)` where every failure is a `CompletionFailed` (ADR 0058).

    The port promises `CompletionFailed` only, but a custom completer may raise anything (its
    own bug, an unwrapped httpx or OS error). Every caller in the library goes through here,
    so such an exception becomes `CompletionFailed(ADAPTER)` naming its class and its message
    (clipped, secrets refused by `shown`), and a reply that is not a `str` becomes
    `CompletionFailed(BAD_REPLY)`: the feature then reports "the LLM failed" and writes
    nothing, exactly as for an adapter's own failure. `BaseException`s that are not
    `Exception`s (KeyboardInterrupt, SystemExit) pass through."""
    try:
        reply = completer.complete(system, user, timeout=timeout)
    except CompletionFailed:
        raise
    except Exception as exc:
        message = str(exc)
        detail = type(exc).__name__
        if message:
            detail += ": " + shown(message, FOREIGN_DETAIL_CHARS)
        raise CompletionFailed(CompletionFailure.ADAPTER, _source(completer), detail) from exc
    if not isinstance(reply, str):
        raise CompletionFailed(
            CompletionFailure.BAD_REPLY,
            _source(completer),
            f"the completer returned {type(reply).__name__}, not str",
        )
    return reply
