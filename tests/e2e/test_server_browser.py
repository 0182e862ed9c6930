"""Issue 26 §3 and §6 against a real `pi-hermes-memory serve` on 127.0.0.1 (ADR 0064): a web
page cannot write memory (Content-Type and Origin on every write, REST and /mcp), oversized
and half-sent bodies, a blank API key, bidi controls in the tenant headers."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.memory_server import RunningServer, command, environment, free_port, running

ALLOWED = "https://ui.example"
STORE = "/api/memory/store"
MCP_CALL = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory", '
    b'"arguments": {"action": "add", "target": "memory", "content": "written by a web page"}}}'
)
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("browser")
    with running(tmp, "--allow-origin", ALLOWED, "--body-timeout", "1") as s:
        yield s


@pytest.fixture
def client(srv: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        yield c


def _refused(response: httpx.Response, status: int, needle: str) -> dict[str, Any]:
    """The envelope of a refusal; on /mcp a JSON-RPC error (ADR 0076)."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    if response.request.url.path == "/mcp":
        assert body["jsonrpc"] == "2.0" and set(body) == {"jsonrpc", "id", "error"}
        assert needle in body["error"]["message"], body
        return body
    assert body["success"] is False and body["data"] is None
    assert needle in body["error"], body["error"]
    return body


def _texts(client: httpx.Client) -> list[str]:
    page = client.get("/api/memory/list", params={"limit": 1000}).json()["data"]
    return [e["text"] for e in page["entries"]]


def test_a_simple_cross_origin_post_is_refused_and_nothing_is_stored(
    client: httpx.Client,
) -> None:
    """The issue's request: text/plain from a page on another local port was stored (201)."""
    body = b'{"content": "planted by localhost 3000"}'
    for origin in ("http://localhost:3000", "http://127.0.0.1:3000", "http://[::1]:8080"):
        for content_type in ("text/plain", "application/json"):
            answer = client.post(
                STORE, content=body, headers={"origin": origin, "content-type": content_type}
            )
            _refused(answer, 403, "Origin is not allowed")
    assert "planted by localhost 3000" not in _texts(client)


def test_writes_without_json_are_415(client: httpx.Client) -> None:
    form = client.post(STORE, data={"content": "a form post"})  # urlencoded, no Origin
    _refused(form, 415, "application/json")
    for content_type in ("text/plain", "multipart/form-data; boundary=x", None):
        headers = {} if content_type is None else {"content-type": content_type}
        answer = client.post(STORE, content=b'{"content": "not json typed"}', headers=headers)
        _refused(answer, 415, "application/json")
    _refused(client.post("/api/knowledge/index"), 415, "application/json")
    _refused(client.patch("/api/memory/01ABC", content=b"{}"), 415, "application/json")
    texts = _texts(client)
    assert "a form post" not in str(texts) and "not json typed" not in texts


def test_a_cross_site_fetch_without_origin_is_refused(client: httpx.Client) -> None:
    answer = client.post(
        STORE, json={"content": "sec fetch cross"}, headers={"sec-fetch-site": "cross-site"}
    )
    _refused(answer, 403, "Sec-Fetch-Site")
    assert "sec fetch cross" not in _texts(client)


def test_own_and_allowlisted_origins_and_no_origin_may_write(
    srv: RunningServer, client: httpx.Client
) -> None:
    own = f"http://localhost:{srv.port}"
    for n, origin in enumerate((own, f"http://127.0.0.1:{srv.port}", ALLOWED, None)):
        headers = {} if origin is None else {"origin": origin}
        answer = client.post(STORE, json={"content": f"allowed writer {n} zz"}, headers=headers)
        assert answer.status_code == 201, answer.text
    assert {f"allowed writer {n} zz" for n in range(4)} <= set(_texts(client))
    # reads too: a foreign origin is refused everywhere, the own one is served
    _refused(client.get("/health", headers={"origin": "http://localhost:3000"}), 403, "Origin")
    assert client.get("/health", headers={"origin": own}).status_code == 200
    # a bodiless DELETE (always preflighted by browsers) needs no Content-Type
    entry = client.post(STORE, json={"content": "deleted without a content type"}).json()
    assert client.delete(f"/api/memory/{entry['data']['entry_id']}").status_code == 200


def test_dns_rebinding_host_is_refused(client: httpx.Client) -> None:
    answer = client.post(STORE, json={"content": "rebound"}, headers={"host": "attacker.example"})
    _refused(answer, 403, "Host")


def test_mcp_refuses_foreign_origins_and_non_json(srv: RunningServer, client: httpx.Client) -> None:
    for origin in ("http://localhost:3000", "http://attacker.example", "null"):
        answer = client.post(
            "/mcp",
            content=MCP_CALL,
            headers={**MCP_HEADERS, "origin": origin, "content-type": "application/json"},
        )
        _refused(answer, 403, "Origin is not allowed")
    plain = client.post(
        "/mcp", content=MCP_CALL, headers={**MCP_HEADERS, "content-type": "text/plain"}
    )
    _refused(plain, 415, "application/json")
    assert "written by a web page" not in _texts(client)
    # the same call from a non-browser client (no Origin) or the server's own origin works
    own = {**MCP_HEADERS, "content-type": "application/json", "origin": srv.url}
    done = client.post("/mcp", content=MCP_CALL, headers=own)
    assert done.status_code == 200, done.text
    assert "written by a web page" in _texts(client)


def test_a_chunked_mcp_body_over_the_limit_is_413_without_a_traceback(
    srv: RunningServer, client: httpx.Client
) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield MCP_CALL[:-3]
        for _ in range(40):
            yield b" " * 65536
        yield MCP_CALL[-3:]

    headers = {**MCP_HEADERS, "content-type": "application/json"}
    _refused(client.post("/mcp", content=chunks(), headers=headers), 413, "larger than")
    time.sleep(0.2)
    log = Path(srv.log).read_text()
    assert "Traceback" not in log and '"status": 500' not in log


def _half_sent(port: int, path: str, head: bytes) -> tuple[bytes, float]:
    """Send the headers and part of the body, then nothing: what comes back, and when."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
            + b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            + head
        )
        received = b""
        while True:  # until the server closes the connection (the socket timeout bounds it)
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    return received, time.monotonic() - started


@pytest.mark.parametrize("path", [STORE, "/mcp"])
@pytest.mark.parametrize(
    "head",
    [
        b"Content-Length: 100\r\n\r\n" + b'{"content": "half',
        b"Transfer-Encoding: chunked\r\n\r\n10\r\n" + b'{"content": "hal',
    ],
    ids=["content-length", "chunked"],
)
def test_a_half_sent_body_gets_408_and_is_closed(
    srv: RunningServer, path: str, head: bytes
) -> None:
    received, took = _half_sent(srv.port, path, head)
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert b"did not arrive within 1 seconds" in received
    assert took < 8  # closed by the server after its 1 s body timeout, not by our socket timeout


def test_many_half_sent_bodies_are_all_closed(srv: RunningServer) -> None:
    socks = []
    for _ in range(30):
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        sock.sendall(
            f"POST {STORE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n{".encode()
        )
        socks.append(sock)
    deadline = time.monotonic() + 8
    try:
        for sock in socks:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            assert data.startswith(b"HTTP/1.1 408")
    finally:
        for sock in socks:
            sock.close()
    assert httpx.get(f"{srv.url}/health").status_code == 200


def test_a_blank_api_key_refuses_to_start(tmp_path: Path) -> None:
    for env, args in (({"PI_MEMORY_API_KEY": "   "}, ()), ({}, ("--api-key", " \t "))):
        result = subprocess.run(
            command("serve", "--port", str(free_port()), *args),
            env=environment(tmp_path / "agent", env),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert "empty" in result.stderr and "Traceback" not in result.stderr


def test_a_padded_api_key_is_trimmed(tmp_path: Path) -> None:
    with (
        running(
            tmp_path, env={"PI_MEMORY_API_KEY": "  padded-key-123\n"}, headers={"x-api-key": "x"}
        ) as s,
        httpx.Client(base_url=s.url, timeout=30) as c,
    ):
        assert c.get("/api/status", headers={"x-api-key": "padded-key-123"}).status_code == 200
        assert c.get("/api/status").status_code == 401


@pytest.mark.parametrize("header", ["X-Project", "X-Agent"])
@pytest.mark.parametrize("ch", ["\u202e", "\u2067", "\u200f", "\u200b"])
def test_bidi_controls_in_tenant_headers_are_400(
    client: httpx.Client, header: str, ch: str
) -> None:
    value = f"evil{ch}txt.exe"
    answer = client.post(
        STORE, json={"content": "bidi tenant"}, headers=[(header.encode(), value.encode())]
    )
    body = _refused(answer, 400, f"U+{ord(ch):04X}")
    assert header in body["error"] and "evil" not in body["error"] and ch not in body["error"]
    query = client.get("/api/memory/list", params={header[2:].lower(): value})
    _refused(query, 400, f"U+{ord(ch):04X}")
    assert "bidi tenant" not in _texts(client)


def test_bidi_controls_in_mcp_tenant_arguments_are_refused(client: httpx.Client) -> None:
    call = (
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory", '
        b'"arguments": {"action": "add", "target": "memory", "content": "bidi via mcp", '
        b'"project": "evil\\u202etxt"}}}'
    )
    answer = client.post(
        "/mcp", content=call, headers={**MCP_HEADERS, "content-type": "application/json"}
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "U+202E" in text and "evil" not in text


@pytest.mark.parametrize(
    ("path", "extra", "status"),
    [
        (STORE, b"Origin: http://localhost:3000\r\n", b"403"),
        ("/nowhere", b"", b"404"),
        (STORE, b"Content-Length: 99999999\r\n", b"413"),
    ],
)
def test_a_refusal_before_the_body_closes_the_connection(
    srv: RunningServer, path: str, extra: bytes, status: bytes
) -> None:
    length = b"" if b"Content-Length" in extra else b"Content-Length: 100\r\n"
    received, took = _half_sent(srv.port, path, extra + length + b"\r\n" + b'{"content": "h')
    assert received.startswith(b"HTTP/1.1 " + status), received[:200]
    assert took < 8
