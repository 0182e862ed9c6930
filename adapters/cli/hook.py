"""`hook EVENT`: Claude Code's hooks (issue 30 §2, ADR 0090; registered by
`pi_hermes_memory.adapters.cli.app`).

    hook EVENT            read the hook's JSON from stdin, answer on stdout (Claude Code's
                          hookSpecificOutput), exit 0 whatever happens
    hook --worker         run the queued background jobs (reviews, flushes) while holding the
                          worker lock; `hook` starts it detached, people need not

The work is `pi_hermes_memory.adapters.hosts.claude_hooks`. A hook never fails the user's
turn: a malformed payload, an unknown event, a broken store all end with exit 0 and no output
(one line in `<memoryDir>/hooks/claude-code/hook.log`). In an LLM child process of this
library (PI_HERMES_MEMORY_CHILD set) it does nothing at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

COMMANDS: frozenset[str] = frozenset({"hook"})
WRITES: frozenset[str] = frozenset()
NO_STORE: frozenset[str] = frozenset({"hook"})
EXIT_OK = 0


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `hook` to the `pi-hermes-memory` parser."""
    hook = sub.add_parser(
        "hook",
        help="Claude Code's hook entry point (stdin: the hook's JSON); `setup claude-code` "
        "wires it",
        description="Answer one Claude Code hook (SessionStart, UserPromptSubmit, PostToolUse, "
        "PreCompact, Stop, SessionEnd): the hook's JSON on stdin, the answer on stdout, exit 0 "
        "always. --worker runs the queued background reviews and flushes.",
    )
    # free text, not choices: an unknown event must exit 0 quietly, not fail the user's turn
    hook.add_argument("event", nargs="?", default="", help="the hook event name")
    hook.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    hook.add_argument("--cwd", default=None, help=argparse.SUPPRESS)


def run(memory: Any, args: argparse.Namespace) -> int:  # pragma: no cover - NO_STORE
    return run_unopened(args)


def run_unopened(args: argparse.Namespace) -> int:
    from pi_hermes_memory.adapters.hosts import claude_hooks

    environ = dict(os.environ)
    if environ.get(claude_hooks.CHILD_ENV):
        return EXIT_OK
    if args.worker:
        return _worker(args, environ)
    try:
        raw = sys.stdin.buffer.read(claude_hooks.MAX_STDIN_BYTES)
    except (OSError, ValueError):
        return EXIT_OK
    answer = claude_hooks.run_hook(args.event, raw, environ)
    if answer:
        try:
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    return EXIT_OK


def _worker(args: argparse.Namespace, environ: dict[str, str]) -> int:
    from pi_hermes_memory.adapters.files.config_file import load_config
    from pi_hermes_memory.adapters.hosts import claude_hooks

    folder: Path | None = None
    try:
        config, _ = load_config(environ=environ, cwd=Path(args.cwd) if args.cwd else None)
        folder = claude_hooks.hooks_dir(Path(config.memory_dir))
        claude_hooks.run_worker(
            folder, environ, log=lambda line: claude_hooks.log_line(folder, line)
        )
    except Exception as exc:
        claude_hooks.log_line(folder, f"worker: {type(exc).__name__}: {exc}")
    return EXIT_OK
