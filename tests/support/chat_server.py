"""A deterministic OpenAI-compatible `/chat/completions` server on 127.0.0.1 for tests.

`mode` makes it answer or misbehave: "ok" (`reply` as choices[0].message.content, or the
user message echoed when `reply` is None), "status" (answer `status` with a body that echoes
the Authorization header, as some real servers do), "slow" (wait `delay` seconds first),
"drip" (send a valid answer one byte every `delay` seconds), "malformed" (not JSON),
"no_content" (content null), "no_choices" ([] choices), "huge" (`huge_bytes` of valid JSON).
Each request is recorded in `requests` (path, JSON body, Authorization header).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.local_server import LocalPostServer

FIXTURE_KEY = "sk-chat-fixture-0123456789abcdef"
#: The base URL path: it stands for a tenant/token path that must never reach logs or errors.
SECRET_PATH = "/v1/tenant-s3cr3t-path"


class ChatServer(LocalPostServer):
    def __init__(self, *, api_key: str | None = FIXTURE_KEY) -> None:
        self.api_key = api_key
        self.mode = "ok"
        self.reply: str | None = None
        self.status = 500
        self.delay = 2.0
        self.huge_bytes = 4 << 20
        self.requests: list[dict[str, Any]] = []
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{SECRET_PATH}"

    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        with contextlib.suppress(OSError):  # the client may have given up
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

    def _answer(self, content: object) -> bytes:
        payload = {
            "id": "chatcmpl-fixture",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        return json.dumps(payload).encode()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length))
        except ValueError:
            body = {}
        authorization = handler.headers.get("Authorization")
        self.requests.append({"path": handler.path, "body": body, "authorization": authorization})
        if not handler.path.endswith("/chat/completions"):
            return self._send(handler, 404, b'{"error": "not found"}')
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            echo = json.dumps({"error": f"bad key {authorization}"}).encode()
            return self._send(handler, 401, echo)
        messages = body.get("messages") or [{}]
        content = self.reply if self.reply is not None else messages[-1].get("content")
        if self.mode == "status":
            echo = json.dumps({"error": f"failure for {authorization}"}).encode()
            return self._send(handler, self.status, echo)
        if self.mode == "slow" and self._release.wait(self.delay):
            return None
        if self.mode == "malformed":
            return self._send(handler, 200, b"<html>not json</html>")
        if self.mode == "no_content":
            return self._send(handler, 200, self._answer(None))
        if self.mode == "no_choices":
            return self._send(handler, 200, b'{"choices": []}')
        if self.mode == "huge":
            return self._send(handler, 200, self._answer("x" * self.huge_bytes))
        answer = self._answer(content)
        if self.mode == "drip":
            return self._drip(handler, answer)
        return self._send(handler, 200, answer)

    def _drip(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        with contextlib.suppress(OSError):
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            for byte in body:
                if self._release.is_set():
                    return
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(self.delay)


@contextlib.contextmanager
def serve(**kw: Any) -> Iterator[ChatServer]:
    server = ChatServer(**kw).start()
    try:
        yield server
    finally:
        server.stop()
