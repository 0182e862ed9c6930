"""CLI commands for skill governance: ``skill-governance ACTION [SKILL_ID] [--force]``.

Exit status: 0 when the action succeeded, 1 when it was refused or failed (the JSON result has
``success: false``), 2 on usage errors (a missing or unexpected SKILL_ID, --force where it
does not apply).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: the commands this module adds; those that write are also in WRITES
COMMANDS: frozenset[str] = frozenset({"skill-governance"})
WRITES: frozenset[str] = frozenset({"skill-governance"})

ACTIONS = ("status", "curate", "explain", "promote", "demote", "restore", "clear", "reload")
_NEEDS_ID = frozenset({"explain", "promote", "demote", "restore", "clear"})
_FORCE = frozenset({"promote", "restore"})
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    gov = sub.add_parser(
        "skill-governance",
        parents=[common],
        help="skill governance: status, curate, explain, promote, demote, restore, clear, reload",
        description="Promote project skills to global ones (and back), explain the promotion "
        "criteria, run curation. After promote, demote or restore, run reload (or start a new "
        "session) so skill discovery sees the change.",
    )
    gov.add_argument("action", choices=ACTIONS)
    gov.add_argument(
        "skill_id",
        nargs="?",
        help="global:<slug> or project:<project>:<slug> (explain, promote, demote, restore, clear)",
    )
    gov.add_argument(
        "--force",
        action="store_true",
        help="promote: a person's decision, skipping the evidence and global-safe criteria; "
        "restore: discard changes made since the move",
    )


def _usage(message: str) -> int:
    print(f"pi-hermes-memory: skill-governance: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    action, skill_id = args.action, args.skill_id
    if action in _NEEDS_ID and not skill_id:
        return _usage(f"{action} needs SKILL_ID")
    if action not in _NEEDS_ID and skill_id:
        return _usage(f"{action} takes no SKILL_ID")
    if args.force and action not in _FORCE:
        return _usage("--force applies only to promote and restore")
    if skill_id:  # a malformed id is a usage error, as `skills view` and `skill-visibility` say
        from pi_hermes_memory.adapters.cli.skills import bad_skill_id

        problem = bad_skill_id(skill_id)
        if problem is not None:
            return _usage(problem)
    governance = memory.skill_governance
    if action == "status":
        result = governance.status()
        lines = result.lines()
    elif action == "curate":
        result = governance.curate()
        lines = [result.message]
    elif action == "explain":
        result = governance.explain(skill_id)
        lines = list(result.lines) or [result.message]
    elif action == "reload":
        result = governance.reload()
        lines = [result.message]
    elif action == "promote":
        result = governance.promote(skill_id, force=args.force)
        lines = [result.message, *(f"  {c}" for c in result.criteria)]
    elif action == "restore":
        result = governance.restore(skill_id, force=args.force)
        lines = [result.message]
    else:
        result = getattr(governance, action)(skill_id)
        lines = [result.message]
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    else:
        for line in lines:
            print(line)
        for warning in result.warnings:
            print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)
    return EXIT_OK if result.success else EXIT_FAILED
