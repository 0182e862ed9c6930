"""The OpenAI-compatible chat adapter against `httpx.MockTransport` (no network)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from pi_hermes_memory.adapters.providers.openai_llm import OpenAICompatibleCompleter
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, InvalidArgument

KEY = "sk-unit-chat-key-9f8e7d6c5b4a"
BASE = "https://llm.example.com/v1/tenant-8472-secret"

Handler = Callable[[httpx.Request], httpx.Response]


def completer(handler: Handler, **kw: object) -> OpenAICompatibleCompleter:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    values: dict[str, object] = {"base_url": BASE, "model": "m1", "api_key": KEY, "client": client}
    values.update(kw)
    return OpenAICompatibleCompleter(**values)  # type: ignore[arg-type]


def answer(content: object) -> httpx.Response:
    return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})


def failure(handler: Handler, **kw: object) -> CompletionFailed:
    with pytest.raises(CompletionFailed) as caught:
        completer(handler, **kw).complete("s", "u", timeout=5)
    text = str(caught.value)
    assert KEY not in text and "tenant" not in text and "/v1" not in text
    assert caught.value.source == "https://llm.example.com"
    return caught.value


def test_the_request_and_the_content() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer("hello")

    assert completer(handle, temperature=0.3).complete("sys", "usr", timeout=5) == "hello"
    (request,) = seen
    assert str(request.url) == f"{BASE}/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    body = json.loads(request.content)
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "usr"},
    ]
    assert body["temperature"] == 0.3 and body["model"] == "m1" and body["stream"] is False


def test_no_key_no_authorization_header() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer("ok")

    completer(handle, api_key=None).complete("s", "u", timeout=5)
    assert "Authorization" not in seen[0].headers


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 502])
def test_http_errors_carry_the_status_only(status: int) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": f"echo {request.headers['Authorization']}"})

    error = failure(handle)
    assert error.reason is CompletionFailure.HTTP and error.detail == f"HTTP {status}"


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[]",
        b"{}",
        b'{"choices": []}',
        b'{"choices": "x"}',
        b'{"choices": [{}]}',
        b'{"choices": [{"message": "hi"}]}',
        b'{"choices": [{"message": {"content": null}}]}',
        b'{"choices": [{"message": {"content": ["part"]}}]}',
        b"[" * 100_000,
    ],
)
def test_answers_of_the_wrong_shape_are_bad_replies(payload: bytes) -> None:
    error = failure(lambda request: httpx.Response(200, content=payload))
    assert error.reason is CompletionFailure.BAD_REPLY


def test_an_empty_content_string_is_a_valid_reply() -> None:
    assert completer(lambda request: answer("")).complete("s", "u", timeout=5) == ""


def test_a_declared_or_actual_oversize_is_refused() -> None:
    big = answer("x" * 10_000)
    assert failure(lambda r: big, max_reply_bytes=2048).reason is CompletionFailure.TOO_LARGE

    def chunked(request: httpx.Request) -> httpx.Response:  # no Content-Length
        return httpx.Response(200, content=iter([b'{"choices": [', b" " * 5000, b"]}"]))

    assert failure(chunked, max_reply_bytes=2048).reason is CompletionFailure.TOO_LARGE


def test_transport_errors_and_timeouts() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot reach {request.url}")

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    error = failure(refuse)
    assert error.reason is CompletionFailure.TRANSPORT and error.detail == "ConnectError"
    assert failure(slow).reason is CompletionFailure.TIMEOUT


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), True, "5"])
def test_a_timeout_must_be_a_positive_number(timeout: object) -> None:
    llm = completer(lambda request: answer("x"))
    with pytest.raises(InvalidArgument):
        llm.complete("s", "u", timeout=timeout)  # type: ignore[arg-type]


def test_repr_hides_the_key_and_the_path() -> None:
    text = repr(completer(lambda request: answer("x")))
    assert KEY not in text and "tenant" not in text and "llm.example.com" in text
