"""The server's pure parts (ADR 0044): settings precedence, key comparison, Origin and Host
checks, body parsing, result -> status code."""

from __future__ import annotations

import argparse
import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.cli import server as cli_server
from pi_hermes_memory.adapters.server.app import (
    ApiError,
    ServerSettings,
    _host_ok,
    check_bind,
    error_status,
    key_ok,
    origin_ok,
    parse_body,
    result_status,
    route,
)
from pi_hermes_memory.errors import InvalidArgument, StoreBusy, UnsafeBind


def _args(**given: object) -> argparse.Namespace:
    base: dict[str, object] = {
        "host": None,
        "port": None,
        "api_key": None,
        "no_http": False,
        "no_mcp": False,
        "allow_origin": None,
        "max_body": None,
        "project": None,
        "agent": None,
        "cwd": None,
    }
    return argparse.Namespace(**{**base, **given})


def test_defaults() -> None:
    s = cli_server.resolve_settings(_args(), {})
    assert (s.host, s.port, s.api_key, s.http, s.mcp) == ("127.0.0.1", 9873, None, True, True)
    assert s.max_body == 1024 * 1024 and s.allowed_origins == ()


def test_command_line_beats_environment_beats_defaults() -> None:
    env = {
        "PI_MEMORY_HTTP_HOST": "127.0.0.2",
        "PI_MEMORY_HTTP_PORT": "8000",
        "PI_MEMORY_API_KEY": "from-env",
        "PI_MEMORY_ALLOWED_ORIGINS": "https://a.example, https://b.example",
    }
    s = cli_server.resolve_settings(_args(), env)
    assert (s.host, s.port, s.api_key) == ("127.0.0.2", 8000, "from-env")
    assert s.allowed_origins == ("https://a.example", "https://b.example")
    s = cli_server.resolve_settings(
        _args(host="::1", port=7000, api_key="cli", allow_origin=["https://c.example"]), env
    )
    assert (s.host, s.port, s.api_key) == ("::1", 7000, "cli")
    assert s.allowed_origins == ("https://c.example",)
    assert "cli" not in repr(s)  # the key is never in a repr (logs, tracebacks)


@pytest.mark.parametrize(
    ("given", "env", "needle"),
    [
        ({}, {"PI_MEMORY_HTTP_PORT": "x"}, "PI_MEMORY_HTTP_PORT"),
        ({"port": 70000}, {}, "between 0 and 65535"),
        ({"max_body": 0}, {}, "positive"),
        ({"no_http": True, "no_mcp": True}, {}, "nothing to serve"),
    ],
)
def test_bad_settings(given: dict[str, object], env: dict[str, str], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        cli_server.resolve_settings(_args(**given), env)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_non_loopback_needs_a_key(host: str) -> None:
    with pytest.raises(UnsafeBind, match="PI_MEMORY_API_KEY"):
        check_bind(ServerSettings(host=host))
    check_bind(ServerSettings(host=host, api_key="k"))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.1.2.3"])
def test_loopback_needs_no_key(host: str) -> None:
    check_bind(ServerSettings(host=host))


@given(key=st.text(min_size=1), sent=st.text())
@example(key="\r", sent="")  # "Bearer " with a blank key once matched an empty configured key
def test_key_ok_is_equality_and_never_raises(key: str, sent: str) -> None:
    assert key_ok({"x-api-key": sent}, key) is (sent == key)
    assert key_ok({"x-api-key": key}, key)
    assert key_ok({"authorization": f"Bearer {key.strip()}"}, key.strip()) is bool(key.strip())


def test_key_ok_needs_a_header() -> None:
    assert not key_ok({}, "k")
    assert not key_ok({"authorization": "Basic k"}, "k")


@given(port=st.integers(1, 65535), scheme=st.sampled_from(["http", "https"]))
def test_loopback_origins_pass(port: int, scheme: str) -> None:
    settings = ServerSettings()
    for host in ("localhost", "127.0.0.1", "[::1]"):
        assert origin_ok(f"{scheme}://{host}:{port}", settings)


@given(name=st.from_regex(r"[a-z]{1,12}\.(example|com|net)", fullmatch=True))
def test_foreign_origins_fail_unless_allowlisted(name: str) -> None:
    origin = f"https://{name}"
    assert not origin_ok(origin, ServerSettings())
    assert origin_ok(origin, ServerSettings(allowed_origins=(origin,)))


def test_origin_edge_cases() -> None:
    s = ServerSettings()
    assert origin_ok(None, s)
    for bad in ("null", "", "file://", "http://127.0.0.1.evil.example", "ftp://localhost"):
        assert not origin_ok(bad, s)


def test_host_check_only_on_loopback_binds() -> None:
    loop = ServerSettings()
    for ok in ("127.0.0.1:9873", "localhost:1", "[::1]:80", "localhost"):
        assert _host_ok(ok, loop)
    for bad in ("attacker.example", "attacker.example:9873", "", "127.0.0.1.evil:80"):
        assert not _host_ok(bad, loop)
    assert _host_ok("attacker.example", ServerSettings(host="0.0.0.0", api_key="k"))


@given(body=st.binary(max_size=200))
def test_parse_body_answers_400_or_an_object(body: bytes) -> None:
    try:
        value = parse_body(body)
    except ApiError as exc:
        assert exc.status == 400
    else:
        assert isinstance(value, dict)


@given(value=st.recursive(st.integers(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)))
def test_parse_body_roundtrips_shallow_objects(value: object) -> None:
    text = json.dumps({"v": value}).encode()
    try:
        assert parse_body(text) == {"v": value}
    except ApiError as exc:
        assert "nested too deeply" in str(exc)


def test_parse_body_refuses_deep_nesting() -> None:
    with pytest.raises(ApiError, match="nested too deeply"):
        parse_body(b'{"a":' * 40 + b"1" + b"}" * 40)
    with pytest.raises(ApiError, match="nested too deeply"):
        parse_body(b"[" * 100_000 + b"]" * 100_000)


def test_statuses() -> None:
    assert result_status({"success": True, "status": "added"}) == 200
    assert result_status({"success": False, "status": "not_found"}) == 404
    assert result_status({"success": False, "status": "near_duplicate"}) == 409
    assert result_status({"success": False, "status": "invalid_arguments"}) == 400
    assert result_status({"success": False, "status": "busy"}) == 503
    assert error_status(InvalidArgument("x")) == 400
    assert error_status(StoreBusy("x")) == 503
    assert error_status(RuntimeError("x")) == 500


def test_routes() -> None:
    assert route("POST", "/api/memory/search")[0] is not None
    assert route("GET", "/api/memory/search")[:3:2] == (None, True)
    handler, entry_id, known = route("DELETE", "/api/memory/01ABC")
    assert handler is not None and entry_id == "01ABC" and known
    assert route("GET", "/api/memory/a/b") == (None, None, False)
    assert route("PUT", "/api/memory/01ABC") == (None, "01ABC", True)
