"""CLI commands for the server (registered by `pi_hermes_memory.adapters.cli.app`, ADR 0044).

    serve [--host H] [--port P] [--api-key K] [--no-http] [--no-mcp] [--allow-origin O ...]
          [--max-body BYTES] [--body-timeout SECONDS] [--readers N] [--config openclaw.json]
                                 REST (/api/memory, /health, /openapi.json) + MCP (/mcp)
    mcp [--config openclaw.json]  MCP over stdio, for desktop clients (the same store settings)

Also the `pi-memory-server` console script (`main`), the second seed's name for `serve`.
Precedence: command line > environment (PI_MEMORY_API_KEY, PI_MEMORY_HTTP_HOST,
PI_MEMORY_HTTP_PORT, PI_MEMORY_ALLOWED_ORIGINS, PI_MEMORY_BODY_TIMEOUT, PI_MEMORY_READERS,
PI_MEMORY_EMBED_*,
PI_MEMORY_RERANK_*, PI_MEMORY_DB_PATH, PI_MEMORY_KNOWLEDGE_PATHS) > openclaw.json (`--config` /
PI_MEMORY_CONFIG / ~/.openclaw/openclaw.json, ADR 0047; see adapters/server/config.py) >
defaults. The server's modules (mcp, starlette, uvicorn: the optional `[server]` extra) load
only here, when serving.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

COMMANDS: frozenset[str] = frozenset({"serve", "mcp"})
WRITES: frozenset[str] = frozenset()
#: the server opens its stores itself, per (project, agent)
NO_STORE: frozenset[str] = frozenset({"serve", "mcp"})

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9873
DEFAULT_MAX_BODY = 1024 * 1024
DEFAULT_BODY_TIMEOUT = 5.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help=f"address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--api-key",
        help="require this key (Authorization: Bearer or X-API-Key) on every route; "
        "prefer PI_MEMORY_API_KEY: a command line is visible to other users",
    )
    parser.add_argument("--no-http", action="store_true", help="serve MCP only (no REST)")
    parser.add_argument("--no-mcp", action="store_true", help="serve REST only (no /mcp)")
    parser.add_argument(
        "--allow-origin",
        action="append",
        help="a browser Origin (scheme://host[:port]) allowed besides the server's own "
        "(repeatable; also enables CORS for exactly these origins)",
    )
    parser.add_argument(
        "--max-body",
        type=int,
        help=f"largest request body in bytes (default {DEFAULT_MAX_BODY}); larger gets 413",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds a client may take to send a request body (default "
        f"{DEFAULT_BODY_TIMEOUT:g}); slower gets 408 and the connection is closed",
    )
    parser.add_argument(
        "--readers",
        type=int,
        metavar="N",
        help="processes answering searches, listings and gets beside the one writer (default "
        "1 when the server may use 2 CPUs or more, else 0; 0: every call in the server "
        "process, one at a time per store)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="an openclaw.json whose plugins.entries['pi-memory'].config sets the embedding, "
        "reranker and dbPath (default: PI_MEMORY_CONFIG, else ~/.openclaw/openclaw.json "
        "when it exists)",
    )


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    serve = sub.add_parser(
        "serve",
        parents=[common],
        help="serve REST and MCP (streamable HTTP at /mcp) on one port",
        description="Serve the store over HTTP: REST under /api/memory, /health, "
        "/openapi.json, and MCP (streamable HTTP, stateless) at /mcp. Loopback only unless an "
        "API key is set. Project and agent per request: X-Project/X-Agent headers or "
        "project/agent query parameters (REST), project/agent tool arguments (MCP).",
    )
    _serve_options(serve)
    mcp = sub.add_parser(
        "mcp",
        parents=[common],
        help="serve MCP over stdio (for Claude Desktop, Claude Code, Cursor)",
        description="Serve MCP over stdin/stdout. The store settings come from the environment "
        "(PI_MEMORY_DB_PATH, PI_MEMORY_EMBED_*, PI_MEMORY_RERANK_*, PI_MEMORY_KNOWLEDGE_PATHS) "
        "and the openclaw.json, as for serve.",
    )
    mcp.add_argument(
        "--config",
        metavar="FILE",
        help="an openclaw.json (default: PI_MEMORY_CONFIG, else ~/.openclaw/openclaw.json "
        "when it exists)",
    )


def _origins(values: Sequence[str] | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The allowlist: --allow-origin, else PI_MEMORY_ALLOWED_ORIGINS (comma-separated). Each
    must be an origin exactly as a browser sends it: scheme://host[:port], nothing after."""
    from urllib.parse import urlsplit

    if values:
        origins, where = tuple(v.strip() for v in values), "--allow-origin"
    else:
        raw = environ.get("PI_MEMORY_ALLOWED_ORIGINS", "")
        origins = tuple(o.strip() for o in raw.split(",") if o.strip())
        where = "PI_MEMORY_ALLOWED_ORIGINS"
    for origin in origins:
        try:
            parts = urlsplit(origin)
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            parts = None
        if (
            parts is None
            or parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path
            or parts.query
            or parts.fragment
            or parts.username is not None
            or "*" in origin
        ):
            raise ValueError(
                f"{where}: {origin[:80]!r} is not an origin; write scheme://host[:port] "
                "(for example http://localhost:3000), one per origin, no path and no wildcard"
            )
    return origins


def _api_key(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    """The server key, trimmed (a key pasted with a newline still matches). Given but blank
    refuses to start: a key of spaces would otherwise be "set" and refuse every request."""
    if args.api_key is not None:
        raw, where = args.api_key, "--api-key"
    elif "PI_MEMORY_API_KEY" in environ:
        raw, where = environ["PI_MEMORY_API_KEY"], "PI_MEMORY_API_KEY"
    else:
        return None
    key = str(raw).strip()
    if not key:
        raise ValueError(
            f"{where} is set but empty (or only spaces): give the key, or unset it to serve "
            "without one (loopback only)"
        )
    return key


def _body_timeout(args: argparse.Namespace, environ: Mapping[str, str]) -> float:
    import math

    raw: Any = getattr(args, "body_timeout", None)  # absent in a hand-made Namespace
    where = "--body-timeout"
    if raw is None:
        text = environ.get("PI_MEMORY_BODY_TIMEOUT", "").strip()
        if not text:
            return DEFAULT_BODY_TIMEOUT
        where = "PI_MEMORY_BODY_TIMEOUT"
        try:
            raw = float(text)
        except ValueError:
            raise ValueError(f"{where} must be a number of seconds, got {text[:40]!r}") from None
    if not math.isfinite(raw) or not 0 < raw <= 3600:
        raise ValueError(f"{where} must be between 0 and 3600 seconds, got {raw:g}")
    return float(raw)


def _readers(args: argparse.Namespace, environ: Mapping[str, str]) -> int | None:
    raw: Any = getattr(args, "readers", None)  # absent in a hand-made Namespace
    where = "--readers"
    if raw is None:
        text = environ.get("PI_MEMORY_READERS", "").strip()
        if not text:
            return None
        where = "PI_MEMORY_READERS"
        try:
            raw = int(text)
        except ValueError:
            raise ValueError(f"{where} must be a number of processes, got {text[:40]!r}") from None
    if not 0 <= raw <= 64:
        raise ValueError(f"{where} must be between 0 and 64, got {raw}")
    return int(raw)


def _store_options(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[Any, Any]:
    from pathlib import Path

    from pi_hermes_memory.adapters.server.config import (
        CONFIG_ENV,
        default_config_path,
        read_plugin_config,
        resolve_store_options,
    )

    named = getattr(args, "config", None) or environ.get(CONFIG_ENV, "").strip()
    path = Path(named).expanduser() if named else default_config_path(environ)
    file: Mapping[str, Any] = {}
    read_warnings: tuple[str, ...] = ()
    if path is not None:
        file, read_warnings = read_plugin_config(path)
    cwd = Path(args.cwd) if args.cwd else Path.cwd()
    options, warnings = resolve_store_options(file, environ, cwd=cwd)
    return options, read_warnings + warnings


def _check_tenant(args: argparse.Namespace) -> None:
    """The server's default project and agent are checked at start (exit 2), not on every
    request that falls back to them."""
    from pi_hermes_memory.domain.echo import shown
    from pi_hermes_memory.domain.memory.model import Target, is_safe_project_name, namespace_problem

    if args.project is not None and not is_safe_project_name(args.project.strip()):
        raise ValueError(
            f"invalid --project {shown(args.project, 60)}: it must be non-empty, not '.' or '..', "
            "and contain no / \\ , < > or control characters"
        )
    if args.agent is not None and namespace_problem(f"agent:{args.agent}", Target.MEMORY):
        raise ValueError(
            f"invalid --agent {shown(args.agent, 60)}: letters, digits, '.', '_' and '-' only"
        )


def resolve_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Any:
    """Command line > environment > openclaw.json > defaults; raises ValueError (a
    `ServerConfigError` for the store settings) with a usage message."""
    from pi_hermes_memory.adapters.server.app import ServerSettings

    _check_tenant(args)

    host = args.host or environ.get("PI_MEMORY_HTTP_HOST") or DEFAULT_HOST
    port: Any = args.port
    if port is None:
        raw = environ.get("PI_MEMORY_HTTP_PORT")
        try:
            port = int(raw) if raw else DEFAULT_PORT
        except ValueError:
            raise ValueError(f"PI_MEMORY_HTTP_PORT must be a port number, got {raw!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"the port must be between 0 and 65535, got {port}")
    key = _api_key(args, environ)
    max_body = args.max_body if args.max_body is not None else DEFAULT_MAX_BODY
    if max_body <= 0:
        raise ValueError("--max-body must be a positive number of bytes")
    if args.no_http and args.no_mcp:
        raise ValueError("--no-http and --no-mcp together leave nothing to serve")
    store, warnings = _store_options(args, environ)
    return ServerSettings(
        host=host,
        port=port,
        api_key=key,
        http=not args.no_http,
        mcp=not args.no_mcp,
        allowed_origins=_origins(args.allow_origin, environ),
        max_body=max_body,
        body_timeout=_body_timeout(args, environ),
        readers=_readers(args, environ),
        project=args.project,
        agent=args.agent,
        cwd=args.cwd,
        store=store,
        warnings=warnings,
    )


def _need_server_modules(*, mcp: bool) -> None:
    """Import what `serve` runs on, so that a missing `[server]` extra is the one-line
    message `mcp` gives, not a traceback from inside the server (ImportError)."""
    import importlib

    for name in ("uvicorn", "anyio", *(("mcp",) if mcp else ())):
        importlib.import_module(name)


def run(memory: Any, args: argparse.Namespace) -> int:  # pragma: no cover - NO_STORE
    raise AssertionError("serve and mcp open their own stores")


def run_unopened(args: argparse.Namespace) -> int:
    """Start the server (or the stdio MCP server); returns when it stops."""
    try:
        if args.command == "mcp":
            from pi_hermes_memory.adapters.server.mcp_tools import serve_stdio

            _check_tenant(args)
            store, warnings = _store_options(args, os.environ)
            for warning in warnings:  # stdout is the protocol's: warnings go to stderr
                print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr, flush=True)
            serve_stdio(project=args.project, agent=args.agent, cwd=args.cwd, store=store)
            return EXIT_OK
        settings = resolve_settings(args, os.environ)
        _need_server_modules(mcp=settings.mcp)
    except ImportError as exc:
        print(
            "pi-hermes-memory: the server needs the optional [server] extra: install it "
            "where this command lives (from a checkout: pip install '.[server]'; from a wheel: "
            f"pip install 'WHEEL[server]') ({exc})",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except ValueError as exc:
        print(f"pi-hermes-memory: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from pi_hermes_memory.adapters.server.app import serve
    from pi_hermes_memory.errors import ServeFailed, UnsafeBind

    try:
        serve(settings)
    except UnsafeBind as exc:
        print(f"pi-hermes-memory: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ServeFailed as exc:
        print(f"pi-hermes-memory: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """The `pi-memory-server` console script: `pi-hermes-memory serve` with its options."""
    from pi_hermes_memory.adapters.cli import app as cli

    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        return cli.main(args)
    return cli.main(["serve", *args])
