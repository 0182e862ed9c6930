"""CLI commands for the system-prompt context and the tool guide (registered by
`pi_hermes_memory.adapters.cli.app`; ADR 0037).

    preview-context   exactly what the system prompt would get from memory (the policy, the
                      legacy-inject context, the standing instructions), with its size in
                      characters and estimated tokens (the seed's /memory-preview-context)
    learn             usage and troubleshooting of every tool, generated from the tool
                      definitions (the seed's /learn-memory-tool); --topic TOOL for one tool

Neither writes. Exit status: 0 done, 2 an unknown --topic.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: the commands this module adds; none writes
COMMANDS: frozenset[str] = frozenset({"preview-context", "learn"})
WRITES: frozenset[str] = frozenset()

EXIT_OK, EXIT_USAGE = 0, 2


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    sub.add_parser(
        "preview-context",
        parents=[common],
        help="show what the system prompt gets from memory, with its size",
        description="Exactly what Memory.system_prompt() returns for this session "
        "(memoryMode, memoryPolicyStyle, STANDING.md), with its size in characters and "
        "estimated tokens (one per CJK character plus one per four other characters).",
    )
    learn = sub.add_parser(
        "learn",
        parents=[common],
        help="usage and troubleshooting of the memory tools (generated from their definitions)",
        description="Every tool this session registers, with its actions and parameters, "
        "and a troubleshooting list; for people and for models.",
    )
    learn.add_argument("--topic", metavar="TOOL", help="only this tool (e.g. memory)")


def _dump(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    print()


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    if args.command == "learn":
        return _learn(memory, args)
    preview = memory.preview_context()
    if args.json:
        _dump(preview.to_json())
    else:
        print(
            f"mode {preview.mode}, style {preview.style}: {preview.characters:,} characters, "
            f"about {preview.estimated_tokens:,} tokens"
        )
        print()
        print(preview.text if preview.text else "(nothing is injected)")
    for warning in preview.warnings:
        print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def _learn(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.errors import InvalidArgument
    from pi_hermes_memory.tools.guide import tool_guide

    try:
        guide = tool_guide(memory.tool_definitions(), args.topic)
    except InvalidArgument as exc:
        print(f"pi-hermes-memory: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        _dump(guide.to_json())
    else:
        print(guide.to_text())
    return EXIT_OK
