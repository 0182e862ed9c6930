"""The `Completer` port over an OpenAI-compatible `/chat/completions` endpoint, on httpx.

Request: `POST {baseUrl}/chat/completions` with `{"model", "messages": [system, user],
"temperature"}` (temperature left out when configured `false`), `Authorization: Bearer
<key>` when a key was found in the variable named by `llm.apiKeyEnv` (a local server may
need none). Answer: `choices[0].message.content` must be a string, else `bad-reply`.

The body is read incrementally and capped (`too-large`); the deadline is checked between
reads, and each network wait (connect, send, one read) is bounded by the timeout, so a server
that drips bytes is cut off after about twice the timeout at worst. A failure is one
`CompletionFailed` naming the reason and the redacted host (scheme and host): never the key,
the full base URL (its path may carry a tenant or a token) nor the response body (some
servers echo the key back); an HTTP error carries only its status code.

Without an injected `httpx.Client`, each call opens and closes its own: a completion is rare
(a review every few turns), so nothing needs closing between calls.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
from pi_hermes_memory.config.settings import DEFAULT_LLM_MAX_REPLY_BYTES
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, InvalidArgument
from pi_hermes_memory.learning.llm import checked_timeout
from pi_hermes_memory.log import library_logger

__all__ = ["OpenAICompatibleCompleter"]

_ENDPOINT: Final = "/chat/completions"


class OpenAICompatibleCompleter:
    """`complete(system, user, timeout=...)` → `choices[0].message.content`."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        max_reply_bytes: int = DEFAULT_LLM_MAX_REPLY_BYTES,
        client: httpx.Client | None = None,
        logger: Any = None,
    ) -> None:
        if max_reply_bytes < 1:
            raise InvalidArgument("max_reply_bytes must be positive")
        parts = urlsplit(base_url)
        self.source = f"{parts.scheme}://{parts.hostname}"
        self._url = base_url.rstrip("/") + _ENDPOINT
        self._model = model
        self._key = api_key
        self._temperature = temperature
        self._cap = max_reply_bytes
        self._client = client
        self._log = logger or library_logger()

    def __repr__(self) -> str:  # no URL, no key
        return f"OpenAICompatibleCompleter(model={self._model!r}, host={self.source!r})"

    def _fail(self, reason: CompletionFailure, detail: str, **fields: Any) -> CompletionFailed:
        self._log.debug("llm.completion_failed", reason=reason.value, source=self.source, **fields)
        return CompletionFailed(reason, self.source, detail)

    @contextmanager
    def _session(self) -> Iterator[httpx.Client]:
        if self._client is not None:
            yield self._client
            return
        with httpx.Client() as client:
            yield client

    def _body(self, system: str, user: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "stream": False,
        }
        if self._temperature is not None:
            body["temperature"] = self._temperature
        return body

    def _read(self, response: httpx.Response, deadline: float, limit: float) -> bytes:
        if response.status_code != 200:
            raise self._fail(
                CompletionFailure.HTTP, f"HTTP {response.status_code}", status=response.status_code
            )
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self._cap:
            raise self._too_large()
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > self._cap:
                raise self._too_large()
            if time.monotonic() > deadline:
                raise self._timeout(limit)
        return bytes(body)

    def _too_large(self) -> CompletionFailed:
        return self._fail(
            CompletionFailure.TOO_LARGE,
            f"the answer exceeded {self._cap:,} bytes",
            limit_bytes=self._cap,
        )

    def _timeout(self, limit: float) -> CompletionFailed:
        return self._fail(
            CompletionFailure.TIMEOUT, f"no complete answer within {limit:g} s", timeout_s=limit
        )

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        limit = checked_timeout(timeout)
        started = time.monotonic()
        deadline = started + limit
        headers = {"Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        try:
            with (
                self._session() as client,
                client.stream(
                    "POST",
                    self._url,
                    json=self._body(system, user),
                    headers=headers,
                    timeout=httpx.Timeout(limit),
                ) as response,
            ):
                raw = self._read(response, deadline, limit)
        except httpx.TimeoutException:
            raise self._timeout(limit) from None
        except httpx.HTTPError as exc:  # str(exc) may hold the URL: only the type is kept
            raise self._fail(CompletionFailure.TRANSPORT, type(exc).__name__) from None
        text = self._content(raw)
        self._log.debug(
            "llm.completed",
            source=self.source,
            reply_bytes=len(raw),
            seconds=round(time.monotonic() - started, 3),
        )
        return text

    def _content(self, raw: bytes) -> str:
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError):
            raise self._fail(CompletionFailure.BAD_REPLY, "the answer is not JSON") from None
        choices = payload.get("choices") if isinstance(payload, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._fail(
                CompletionFailure.BAD_REPLY, "the answer has no choices[0].message.content text"
            )
        return content
