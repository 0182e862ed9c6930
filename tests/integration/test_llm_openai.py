"""The OpenAI-compatible chat adapter against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from pi_hermes_memory.adapters.providers.llm_factory import completer_from_config
from pi_hermes_memory.adapters.providers.openai_llm import OpenAICompatibleCompleter
from pi_hermes_memory.config.settings import parse_config
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure
from pi_hermes_memory.learning.llm import llm_status

from tests.support.chat_server import FIXTURE_KEY, SECRET_PATH, ChatServer, serve

SYSTEM = "Answer with one JSON object."
USER = "[USER] remember: deploys go through `make release`"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with serve() as running:
        yield running


def completer(server: ChatServer, **kw: object) -> OpenAICompatibleCompleter:
    values: dict[str, object] = {
        "base_url": server.url,
        "model": "gpt-test",
        "api_key": FIXTURE_KEY,
    }
    values.update(kw)
    return OpenAICompatibleCompleter(**values)  # type: ignore[arg-type]


def failure(llm: OpenAICompatibleCompleter, timeout: float = 10.0) -> CompletionFailed:
    with pytest.raises(CompletionFailed) as caught:
        llm.complete(SYSTEM, USER, timeout=timeout)
    text = str(caught.value)
    assert FIXTURE_KEY not in text and SECRET_PATH not in text and "tenant" not in text
    return caught.value


def test_a_completion_posts_system_and_user_and_returns_the_content(server: ChatServer) -> None:
    server.reply = '{"operations": []}'
    assert completer(server).complete(SYSTEM, USER, timeout=10) == '{"operations": []}'
    (request,) = server.requests
    assert request["path"] == f"{SECRET_PATH}/chat/completions"
    assert request["authorization"] == f"Bearer {FIXTURE_KEY}"
    assert request["body"] == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        "stream": False,
        "temperature": 0.0,
    }


def test_an_http_error_names_only_its_status_code(server: ChatServer) -> None:
    server.mode, server.status = "status", 503
    error = failure(completer(server))
    assert error.reason is CompletionFailure.HTTP and error.detail == "HTTP 503"
    assert error.source == "http://127.0.0.1"


def test_a_wrong_key_is_an_http_401_whose_echoing_body_is_never_shown(server: ChatServer) -> None:
    error = failure(completer(server, api_key="sk-wrong-key-abcdef0123456789"))
    assert error.reason is CompletionFailure.HTTP and "401" in str(error)
    assert "sk-wrong-key" not in str(error)


@pytest.mark.parametrize("mode", ["malformed", "no_content", "no_choices"])
def test_an_answer_of_the_wrong_shape_is_a_bad_reply(server: ChatServer, mode: str) -> None:
    server.mode = mode
    assert failure(completer(server)).reason is CompletionFailure.BAD_REPLY


def test_a_slow_server_is_a_timeout(server: ChatServer) -> None:
    server.mode, server.delay = "slow", 10.0
    started = time.monotonic()
    assert failure(completer(server), timeout=0.5).reason is CompletionFailure.TIMEOUT
    assert time.monotonic() - started < 3


def test_a_dripping_server_is_cut_off_at_the_deadline(server: ChatServer) -> None:
    server.mode, server.delay, server.reply = "drip", 0.05, "x" * 200
    started = time.monotonic()
    assert failure(completer(server), timeout=0.6).reason is CompletionFailure.TIMEOUT
    assert time.monotonic() - started < 3


def test_an_oversized_answer_is_refused(server: ChatServer) -> None:
    server.mode = "huge"
    error = failure(completer(server, max_reply_bytes=64 << 10))
    assert error.reason is CompletionFailure.TOO_LARGE


def test_a_refused_connection_is_a_transport_failure() -> None:
    with serve() as gone:
        url = gone.url
    error = failure(OpenAICompatibleCompleter(base_url=url, model="m", api_key=FIXTURE_KEY))
    assert error.reason is CompletionFailure.TRANSPORT


def test_logs_never_carry_the_key_or_the_url(server: ChatServer) -> None:
    server.mode, server.status = "status", 500
    with structlog.testing.capture_logs() as logs:
        failure(completer(server))
        server.mode = "ok"
        completer(server).complete(SYSTEM, USER, timeout=10)
    assert logs, "the adapter logs its failures at debug level"
    for line in map(str, logs):
        assert FIXTURE_KEY not in line and SECRET_PATH not in line


def test_composed_from_the_configuration_with_the_key_from_the_environment(
    server: ChatServer, tmp_path: Path
) -> None:
    raw = {
        "llm": {
            "provider": "openai-compatible",
            "baseUrl": server.url,
            "model": "gpt-test",
            "apiKeyEnv": "CHAT_KEY",
            "temperature": False,
        }
    }
    config, warnings = parse_config(
        raw, agent_root=tmp_path, cwd=tmp_path, environ={}, physical=lambda path: path
    )
    assert warnings == ()
    assert completer_from_config(config, {}) is None
    assert "CHAT_KEY" in llm_status(config, {}).message
    llm = completer_from_config(config, {"CHAT_KEY": FIXTURE_KEY})
    assert llm is not None
    server.reply = "done"
    assert llm.complete(SYSTEM, USER, timeout=10) == "done"
    assert "temperature" not in server.requests[-1]["body"]
    assert FIXTURE_KEY not in repr(llm) and SECRET_PATH not in repr(llm)
    assert SECRET_PATH not in repr(config)


def test_a_keyless_local_server_gets_no_authorization_header(tmp_path: Path) -> None:
    with serve(api_key=None) as local:
        llm = OpenAICompatibleCompleter(base_url=local.url, model="qwen")
        local.reply = "ok"
        assert llm.complete(SYSTEM, USER, timeout=10) == "ok"
        assert local.requests[-1]["authorization"] is None
