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
    hidden_character,
    is_json,
    key_ok,
    origin_ok,
    own_origins,
    parse_body,
    result_status,
    route,
    write_refusal,
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
        "body_timeout": None,
        "project": None,
        "agent": None,
        "cwd": None,
    }
    return argparse.Namespace(**{**base, **given})


def test_defaults() -> None:
    s = cli_server.resolve_settings(_args(), {})
    assert (s.host, s.port, s.api_key, s.http, s.mcp) == ("127.0.0.1", 9873, None, True, True)
    assert s.max_body == 1024 * 1024 and s.allowed_origins == ()
    assert s.body_timeout == 5.0


def test_readers_from_the_command_line_or_the_environment() -> None:
    assert cli_server.resolve_settings(_args(), {}).readers is None  # default: by CPUs
    assert cli_server.resolve_settings(_args(), {"PI_MEMORY_READERS": "0"}).readers == 0
    assert cli_server.resolve_settings(_args(readers=3), {"PI_MEMORY_READERS": "1"}).readers == 3
    for args, env in (({}, {"PI_MEMORY_READERS": "many"}), ({"readers": -1}, {})):
        with pytest.raises(ValueError, match=r"READERS|--readers"):
            cli_server.resolve_settings(_args(**args), env)


def test_api_key_is_trimmed_and_a_blank_one_refused() -> None:
    assert cli_server.resolve_settings(_args(api_key="  k1\n"), {}).api_key == "k1"
    assert cli_server.resolve_settings(_args(), {"PI_MEMORY_API_KEY": " k2 "}).api_key == "k2"
    for args, env in (({"api_key": "   "}, {}), ({}, {"PI_MEMORY_API_KEY": " \t"})):
        with pytest.raises(ValueError, match="empty"):
            cli_server.resolve_settings(_args(**args), env)


def test_body_timeout_and_origins_are_checked() -> None:
    env = {"PI_MEMORY_BODY_TIMEOUT": "1.5"}
    assert cli_server.resolve_settings(_args(), env).body_timeout == 1.5
    assert cli_server.resolve_settings(_args(body_timeout=2.0), env).body_timeout == 2.0
    for bad in ({"PI_MEMORY_BODY_TIMEOUT": "soon"}, {"PI_MEMORY_BODY_TIMEOUT": "0"}):
        with pytest.raises(ValueError, match="PI_MEMORY_BODY_TIMEOUT"):
            cli_server.resolve_settings(_args(), bad)
    for origin in ("*", "localhost:3000", "http://a.example/path", "null", "http://a:x"):
        with pytest.raises(ValueError, match="not an origin"):
            cli_server.resolve_settings(_args(allow_origin=[origin]), {})


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


OWN = own_origins(("127.0.0.1", 9873), ServerSettings())


def test_own_origins_are_the_bound_port_under_every_loopback_name() -> None:
    assert {"http://127.0.0.1:9873", "http://localhost:9873", "http://[::1]:9873"} == OWN
    assert own_origins(("::1", 80), ServerSettings(host="::1")) >= {"http://[::1]:80"}
    assert own_origins(None, ServerSettings()) == frozenset()


@given(port=st.integers(1, 65535), scheme=st.sampled_from(["http", "https"]))
def test_other_loopback_ports_are_other_origins(port: int, scheme: str) -> None:
    """Issue 26 §3: a dev server on localhost:3000 is not this server; any local page
    could otherwise write memory."""
    settings = ServerSettings()
    for host in ("localhost", "127.0.0.1", "[::1]"):
        origin = f"{scheme}://{host}:{port}"
        assert origin_ok(origin, settings, OWN) is (scheme == "http" and port == 9873)
        assert origin_ok(origin, ServerSettings(allowed_origins=(origin,)), OWN)


@given(name=st.from_regex(r"[a-z]{1,12}\.(example|com|net)", fullmatch=True))
def test_foreign_origins_fail_unless_allowlisted(name: str) -> None:
    origin = f"https://{name}"
    assert not origin_ok(origin, ServerSettings(), OWN)
    assert origin_ok(origin, ServerSettings(allowed_origins=(origin,)), OWN)


def test_origin_edge_cases() -> None:
    s = ServerSettings()
    assert origin_ok(None, s, OWN)
    for bad in ("null", "", "file://", "http://127.0.0.1.evil.example", "ftp://localhost"):
        assert not origin_ok(bad, s, OWN)


def test_writes_need_json_and_same_site() -> None:
    json_ct = {"content-type": "application/json; charset=utf-8", "content-length": "2"}
    assert write_refusal("POST", "/api/memory/store", json_ct) is None
    assert write_refusal("GET", "/api/memory/list", {}) is None
    for bad in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None):
        headers = {"content-length": "2"} if bad is None else {"content-type": bad}
        for method, path in (("POST", "/api/memory/store"), ("PATCH", "/x"), ("POST", "/mcp")):
            refusal = write_refusal(method, path, headers)
            assert refusal is not None and refusal[0] == 415 and "application/json" in refusal[1]
    # a bodiless DELETE is always preflighted by browsers: no Content-Type needed
    assert write_refusal("DELETE", "/api/memory/01A", {}) is None
    assert write_refusal("DELETE", "/api/memory/01A", {"content-type": "text/plain"}) is not None
    cross = {**json_ct, "sec-fetch-site": "cross-site"}
    assert write_refusal("POST", "/api/memory/store", cross)[0] == 403  # type: ignore[index]
    assert write_refusal("POST", "/api/memory/store", {**cross, "origin": "x"}) is None
    assert is_json("Application/JSON") and not is_json("application/jsonx") and not is_json(None)


def test_hidden_characters_in_names_are_named_not_echoed() -> None:
    assert hidden_character("my-app") is None and hidden_character("项目") is None
    for ch in ("\u202e", "\u2066", "\u200f", "\u200b", "\U000e0041", "\x07"):
        problem = hidden_character(f"ab{ch}cd")
        assert problem is not None and f"U+{ord(ch):04X}" in problem and "ab" not in problem


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
