"""A scripted OpenAI-compatible model server on 127.0.0.1 for the real-host tests (issue 30).

It answers `POST …/chat/completions` as a streaming server does (`text/event-stream` of
`chat.completion.chunk` objects, then `data: [DONE]`), which is what Pi's `openai-completions`
provider reads. `script` decides each reply from the request body: a `Reply` with `text`, or
with `tool_calls` ([(name, arguments)]) for the model to call tools. Every request body is kept
in `requests`, so a test can read exactly what the host sent (system prompt, tool results).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import attrs

from tests.support.local_server import LocalPostServer


@attrs.frozen
class Reply:
    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    #: the context size reported in `usage` (a large one makes Pi compact after the turn)
    prompt_tokens: int = 10


Script = Callable[[dict[str, Any]], Reply]


def system_text(body: dict[str, Any]) -> str:
    """The system (or developer) message of a chat request."""
    return "\n".join(
        _content(m.get("content"))
        for m in body.get("messages", [])
        if m.get("role") in ("system", "developer")
    )


def tool_results(body: dict[str, Any]) -> list[str]:
    return [_content(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]


def last_user_text(body: dict[str, Any]) -> str:
    users = [_content(m.get("content")) for m in body.get("messages", []) if m["role"] == "user"]
    return users[-1] if users else ""


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("function", {}).get("name", "") for t in body.get("tools", [])]


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class FakeModelServer(LocalPostServer):
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
        reply = self.script(body)
        chunks: list[dict[str, Any]] = []
        if reply.text:
            chunks.append({"role": "assistant", "content": reply.text})
        for index, (name, arguments) in enumerate(reply.tool_calls):
            chunks.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": index,
                            "id": f"call_{number}_{index}",
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ],
                }
            )
        finish = "tool_calls" if reply.tool_calls else "stop"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()

        def event(delta: dict[str, Any], finish_reason: str | None = None) -> None:
            chunk: dict[str, Any] = {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())

        for delta in chunks:
            event(delta)
        event({}, finish)
        usage = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": 5,
                "total_tokens": reply.prompt_tokens + 5,
            },
        }
        handler.wfile.write(f"data: {json.dumps(usage)}\n\n".encode())
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
