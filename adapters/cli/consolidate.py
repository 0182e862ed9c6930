"""CLI command for consolidation (issue 12 §4; registered by `pi_hermes_memory.adapters.cli.app`).

    consolidate [--target T]   merge near-duplicates and compress a target with the LLM
                               (default: every target), all or nothing per target

Exit status as for every command: 0 every target consolidated (or had nothing to do), 1 one
failed (the LLM is off, another process consolidates it, the plan did not shrink it, ...).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

#: the commands this module adds; those that write are also in WRITES
COMMANDS: frozenset[str] = frozenset({"consolidate"})
WRITES: frozenset[str] = frozenset({"consolidate"})

EXIT_OK, EXIT_FAILED = 0, 1


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    command = sub.add_parser(
        "consolidate",
        parents=[common],
        help="merge near-duplicates and compress memory with the LLM (all or nothing)",
        description="Consolidate a target's entries with the configured LLM: near-duplicates "
        "are pre-clustered offline, the LLM's plan is applied whole only if it shrinks the "
        "target and touches nothing outside it. Needs llm.provider.",
    )
    command.add_argument(
        "--target",
        choices=["memory", "user", "project", "failure"],
        help="one target (default: every target)",
    )


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    results = memory.consolidate(args.target)
    if args.json:
        print(json.dumps([r.as_dict() for r in results], ensure_ascii=False, indent=2))
    else:
        for result in results:
            print(f"{result.target}: {result.message}")
    return EXIT_OK if all(r.success for r in results) else EXIT_FAILED
