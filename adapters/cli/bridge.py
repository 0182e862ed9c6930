"""`bridge`: the JSON-lines process the Pi extension talks to (issue 30 §1, ADR 0091;
registered by `pi_hermes_memory.adapters.cli.app`).

    bridge [--cwd DIR]    one request per stdin line, one answer per stdout line, until EOF

The protocol is in `pi_hermes_memory.adapters.hosts.pi_bridge`. stdout carries only answers:
while the bridge runs, `sys.stdout` is stderr, so a stray print or a log line can never
corrupt the protocol. Runs without the CLI opening the store (the bridge opens it itself,
for the project of the host session's folder).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

COMMANDS: frozenset[str] = frozenset({"bridge"})
WRITES: frozenset[str] = frozenset()
NO_STORE: frozenset[str] = frozenset({"bridge"})


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `bridge` to the `pi-hermes-memory` parser."""
    bridge = sub.add_parser(
        "bridge",
        help="JSON-lines bridge for the Pi extension (stdin/stdout; see docs/hosts.md)",
        description="Answer JSON-lines requests on stdin ({id, method, params}) with one JSON "
        "line each on stdout ({id, result} or {id, error: {code, message}}) until end of "
        "input. Started by the Pi extension that `setup pi` installs.",
    )
    bridge.add_argument(
        "--cwd", default=argparse.SUPPRESS, help="the project folder (default: the session's)"
    )


def run(memory: Any, args: argparse.Namespace) -> int:  # pragma: no cover - NO_STORE
    return run_unopened(args)


def run_unopened(args: argparse.Namespace) -> int:
    from pi_hermes_memory.adapters.hosts.pi_bridge import serve

    protocol_out = sys.stdout.buffer
    saved = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the protocol stream
    try:
        cwd = Path(args.cwd).resolve() if getattr(args, "cwd", None) else None
        return serve(sys.stdin.buffer, protocol_out, cwd=cwd)
    finally:
        sys.stdout = saved
