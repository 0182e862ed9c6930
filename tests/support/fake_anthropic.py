"""A local fake of Anthropic's Messages API for running the real `claude` offline.

    python tests/support/fake_anthropic.py PORT_FILE LOG_FILE [REPLY]

Serves on 127.0.0.1 (a free port, written to PORT_FILE once listening). Every POST body is
appended to LOG_FILE as one JSON line; `/v1/messages` answers REPLY (default "OK") as one
text block, streamed (SSE) when the request asks for it, else as one JSON message.
`count_tokens` answers a small count; anything else is `{}`. Standard library only.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def _message(reply: str, model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }


def _events(reply: str, model: str) -> list[tuple[str, dict[str, Any]]]:
    start = _message("", model)
    start["content"] = []
    start["stop_reason"] = None
    return [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": reply},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 2},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def main(argv: list[str]) -> int:
    port_file, log_file = Path(argv[0]), Path(argv[1])
    reply = argv[2] if len(argv) > 2 else "OK"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                request = json.loads(body or b"{}")
            except ValueError:
                request = {}
            with open(log_file, "a", encoding="utf-8") as log:
                log.write(json.dumps({"path": self.path, "body": request}) + "\n")
            model = str(request.get("model") or "claude-fake")
            if self.path.startswith("/v1/messages/count_tokens"):
                self._json({"input_tokens": 10})
            elif self.path.startswith("/v1/messages"):
                if request.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    for name, data in _events(reply, model):
                        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                else:
                    self._json(_message(reply, model))
            else:
                self._json({})

        def do_GET(self) -> None:
            self._json({})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def _json(self, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_file.write_text(str(server.server_address[1]), encoding="utf-8")
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
