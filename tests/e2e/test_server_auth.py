"""API keys, the bind refusal and the configuration precedence of `serve` (ADR 0044)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.memory_server import RunningServer, command, environment, free_port, running

KEY = "k-" + "s3cr3t" * 6


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("auth")
    with running(tmp, env={"PI_MEMORY_API_KEY": KEY}, headers={"x-api-key": KEY}) as s:
        yield s


ROUTES = [
    ("GET", "/api/status"),
    ("GET", "/openapi.json"),
    ("GET", "/api/memory/01ABC"),
    ("GET", "/api/memory/list"),
    ("GET", "/api/memory/stats"),
    ("POST", "/api/memory/search"),
    ("POST", "/api/memory/store"),
    ("DELETE", "/api/memory/01ABC"),
    ("PATCH", "/api/memory/01ABC"),
    ("POST", "/api/knowledge/search"),
    ("POST", "/api/knowledge/index"),
    ("GET", "/api/knowledge/stats"),
    ("POST", "/mcp"),
    ("GET", "/nowhere"),
]
BAD = [
    {},
    {"authorization": ""},
    {"authorization": "Bearer"},
    {"authorization": "Bearer wrong"},
    {"authorization": f"Basic {KEY}"},
    {"x-api-key": KEY[:-1]},
    {"x-api-key": KEY + "x"},
    {"x-api-key": "x" * 10_000},
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_needs_the_key(keyed: RunningServer, method: str, path: str) -> None:
    with httpx.Client(base_url=keyed.url, timeout=30) as c:
        for headers in BAD:
            r = c.request(method, path, headers=headers, json={"query": "x"})
            assert r.status_code == 401, (headers, r.text)
            if path == "/mcp":  # a JSON-RPC error (ADR 0076)
                assert r.json()["error"]["code"] == -32001 and r.json()["id"] is None
            else:
                assert r.json()["success"] is False
        # a non-ASCII key is a 401 too, never a 500 (compare_digest on bytes)
        r = c.request(method, path, headers=[(b"x-api-key", "ключ".encode())])
        assert r.status_code == 401
        # a key in the query string is not accepted
        assert c.request(method, path, params={"api_key": KEY}).status_code == 401


def test_health_needs_no_key_and_says_status_and_version_only(keyed: RunningServer) -> None:
    from pi_hermes_memory import __version__

    with httpx.Client(base_url=keyed.url, timeout=30) as c:
        for headers in [*BAD, {"x-api-key": KEY}]:
            r = c.get("/health", headers=headers)
            assert r.status_code == 200, r.text
            assert r.json() == {
                "success": True,
                "data": {"status": "ok", "version": __version__},
                "error": None,
            }
        assert c.post("/health", json={}).status_code == 401  # only GET /health is open


def test_every_documented_route_but_health_needs_the_key(keyed: RunningServer) -> None:
    with httpx.Client(base_url=keyed.url, timeout=30) as c:
        doc = c.get("/openapi.json", headers={"x-api-key": KEY}).json()
        routes = [
            (method.upper(), path.replace("{id}", "01ABC"))
            for path, operations in doc["paths"].items()
            for method in operations
        ]
        assert len(routes) >= 13
        for method, path in routes:
            r = c.request(method, path, json={"jsonrpc": "2.0", "id": "q1", "method": "ping"})
            if path == "/health":
                assert r.status_code == 200
                continue
            assert r.status_code == 401, (method, path, r.text)
            if path == "/mcp":  # the request's id comes back in the JSON-RPC error
                assert r.json() == {
                    "jsonrpc": "2.0",
                    "id": "q1",
                    "error": {
                        "code": -32001,
                        "message": "an API key is required (Authorization: Bearer or X-API-Key)",
                        "data": {"status": 401},
                    },
                }


def test_bearer_and_x_api_key_are_accepted(keyed: RunningServer) -> None:
    with httpx.Client(base_url=keyed.url, timeout=30) as c:
        assert c.get("/api/status", headers={"authorization": f"Bearer {KEY}"}).status_code == 200
        assert c.get("/api/status", headers={"authorization": f"bearer {KEY}"}).status_code == 200
        assert c.get("/api/status", headers={"x-api-key": KEY}).status_code == 200
    assert KEY not in Path(keyed.log).read_text()


def test_non_loopback_bind_without_key_refuses_to_start(tmp_path: Path) -> None:
    result = subprocess.run(
        command("serve", "--host", "0.0.0.0", "--port", str(free_port())),
        env=environment(tmp_path / "agent"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "PI_MEMORY_API_KEY" in result.stderr and "refusing" in result.stderr


def test_bad_port_in_environment_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        command("serve"),
        env=environment(tmp_path / "agent", {"PI_MEMORY_HTTP_PORT": "eighty"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "PI_MEMORY_HTTP_PORT" in result.stderr


def test_port_from_environment_and_command_line_wins(tmp_path: Path) -> None:
    env_port = free_port()
    with running(
        tmp_path / "a", env={"PI_MEMORY_HTTP_PORT": str(env_port)}, port=env_port, pass_port=False
    ) as s:
        assert httpx.get(f"{s.url}/health").json()["success"] is True
    cli_port = free_port()
    with running(tmp_path / "b", env={"PI_MEMORY_HTTP_PORT": str(env_port)}, port=cli_port) as s:
        assert s.port == cli_port and httpx.get(f"{s.url}/health").status_code == 200


def test_allowlisted_origin_gets_cors(tmp_path: Path) -> None:
    origin = "https://ui.example"
    with running(tmp_path, "--allow-origin", origin) as s:
        r = httpx.get(f"{s.url}/health", headers={"origin": origin})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin
        pre = httpx.options(f"{s.url}/api/memory/search", headers={"origin": origin})
        assert pre.status_code == 204
        assert (
            httpx.get(f"{s.url}/health", headers={"origin": "https://x.example"}).status_code == 403
        )


def test_no_mcp_and_no_http(tmp_path: Path) -> None:
    with running(tmp_path / "a", "--no-mcp") as s:
        assert httpx.post(f"{s.url}/mcp", json={}).status_code == 404
    with running(tmp_path / "b", "--no-http") as s:
        assert httpx.get(f"{s.url}/api/memory/list").status_code == 404
        assert httpx.get(f"{s.url}/health").status_code == 200


def test_mcp_client_with_the_key(keyed: RunningServer) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def main() -> list[str]:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
        async with (
            client,
            streamable_http_client(f"{keyed.url}/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [t.name for t in (await session.list_tools()).tools]

    assert "memory_search" in anyio.run(main)


def test_pi_memory_server_script_is_serve(tmp_path: Path) -> None:
    script = "import sys; from pi_hermes_memory.adapters.cli.server import main; sys.exit(main())"
    result = subprocess.run(
        [sys.executable, "-c", script, "--host", "0.0.0.0"],
        env=environment(tmp_path / "agent"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "refusing" in result.stderr


def test_a_port_in_use_fails_with_one_line_and_exit_1(keyed: RunningServer) -> None:
    """The start message comes only once the port is bound; a busy port is exit 1 (a run
    that did not succeed), not uvicorn's 3, and never a traceback."""
    result = subprocess.run(
        command("serve", "--port", str(keyed.port)),
        env=environment(keyed.root.parent / "other-agent"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert "could not serve on 127.0.0.1" in result.stderr and "serving on" not in result.stderr
    assert "Traceback" not in result.stderr
    assert "serving on http://127.0.0.1" in keyed.log.read_text()


@pytest.mark.parametrize(
    ("command_args", "needle"),
    [
        (("serve", "--project", "../x"), "--project"),
        (("serve", "--agent", "bad agent!"), "--agent"),
        (("mcp", "--agent", "bad agent!"), "--agent"),
    ],
)
def test_a_bad_default_project_or_agent_stops_the_start(
    tmp_path: Path, command_args: tuple[str, ...], needle: str
) -> None:
    """Every request that falls back to the server's own project/agent would fail: the start
    fails instead, with exit 2 as for any other command."""
    result = subprocess.run(
        command(*command_args, "--port", str(free_port()))
        if command_args[0] == "serve"
        else command(*command_args),
        env=environment(tmp_path / "agent"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "serving on" not in result.stderr
