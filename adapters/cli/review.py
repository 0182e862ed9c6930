"""CLI command for background learning (registered by `pi_hermes_memory.adapters.cli.app`).

    review-status     the last background review of this store (kind, time, result, counts),
                      the last consolidation (applied, or refused with its reason) and whether
                      the LLM is on

The CLI has no live agent session, so the session counters (user turns and tool calls since
the last review) are not there: an agent framework reads them from
`AgentSession.review_status()`. The last review is read from `<memoryDir>/review-status.json`,
which every background job of any process writes when it ends. The same file keeps, under
`auto_memory`, the auto-recall and auto-capture counts of the last session that saved them
(ADR 0049), and under `consolidation` the outcome of the last consolidation (ADR 0062); the
command shows them too.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: the commands this module adds; none writes
COMMANDS: frozenset[str] = frozenset({"review-status"})
WRITES: frozenset[str] = frozenset()

EXIT_OK = 0


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    sub.add_parser(
        "review-status",
        parents=[common],
        help="the last background review (review, flush, correction) and whether the LLM is on",
        description="The last background review any agent session of this store ran: its "
        "kind, time, result, reason and applied/skipped/dropped counts. Session counters live "
        "in the agent's process (AgentSession.review_status()).",
    )


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    from pi_hermes_memory.learning.review import (
        AUTO_MEMORY_KEY,
        CONSOLIDATION_KEY,
        read_status_file,
    )
    from pi_hermes_memory.lifecycle.session import read_last_summary

    last = read_last_summary(memory.config.memory_dir)
    status = read_status_file(memory.config.memory_dir)
    auto = status.get(AUTO_MEMORY_KEY)
    auto = auto if isinstance(auto, dict) else None
    consolidation = status.get(CONSOLIDATION_KEY)
    consolidation = consolidation if isinstance(consolidation, dict) else None
    off = memory.llm_off
    llm = "on" if off is None else off.message
    if args.json:
        data = {
            "llm": llm,
            "last": None if last is None else last.to_json(),
            "auto_memory": auto,
            "consolidation": consolidation,
        }
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        print()
        return EXIT_OK
    print(f"LLM: {llm}")
    _print_auto(auto)
    _print_consolidation(consolidation)
    if last is None:
        print("No background review has run on this store yet.")
        return EXIT_OK
    print(f"Last review: {last.kind.value} at {last.at} (session {last.session_id})")
    print(f"    result: {last.result.value}" + (f" ({last.reason})" if last.reason else ""))
    print(f"    applied {last.applied}, skipped {last.skipped}, dropped {last.dropped}")
    for note in last.notes:
        print(f"    skipped: {note}")
    return EXIT_OK


def _counts(value: object) -> str:
    if not isinstance(value, dict) or not value:
        return "none"
    return ", ".join(f"{k} {v}" for k, v in value.items())


def _print_consolidation(outcome: dict[str, Any] | None) -> None:
    if outcome is None:
        return
    print(
        f"Last consolidation: {outcome.get('target', '?')} at {outcome.get('at', '?')}: "
        f"{outcome.get('status', '?')}, {outcome.get('before', 0)} -> "
        f"{outcome.get('after', 0)} characters"
    )
    print(f"    {outcome.get('message', '')}")


def _print_auto(auto: dict[str, Any] | None) -> None:
    if auto is None:
        return
    print(f"Auto-memory (session {auto.get('session_id', '?')}):")
    print(f"    recall: {_counts(auto.get('recall'))}; items {auto.get('recalled_items', 0)}")
    print(f"    recall skipped: {_counts(auto.get('skip_reasons'))}")
    print(f"    capture: {_counts(auto.get('capture'))}")
    for item in auto.get("last_captures") or ():
        if isinstance(item, dict):
            print(f"    captured: {item.get('status')} [{item.get('category')}] {item.get('text')}")
