"""The top-level `pi-hermes-memory --help`: commands grouped by what a person wants to do, each
group with one example, instead of argparse's one flat list (ADR 0078).

A test checks that every subcommand the parser knows is in exactly one group, so a new command
cannot be left out of the help.
"""

from __future__ import annotations

import argparse
import textwrap

#: (group title, its commands in the order shown, one example command line)
GROUPS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "hosts",
        ("setup", "hook", "bridge"),
        "pi-hermes-memory setup",
    ),
    (
        "memory",
        (
            "add",
            "list",
            "get",
            "update",
            "delete",
            "history",
            "restore",
            "purge",
            "promote",
            "demote",
            "insights",
            "switch-project",
            "stats",
        ),
        "pi-hermes-memory add 'The test command is make test' --target project",
    ),
    (
        "search",
        ("search", "session-search", "index-sessions", "reembed"),
        "pi-hermes-memory search 'test command'",
    ),
    (
        "skills",
        ("skills", "skill-visibility", "skill-stats", "skill-governance", "learn-skill"),
        "pi-hermes-memory skills view global:release-checklist",
    ),
    (
        "learning",
        ("interview", "consolidate", "review-status", "preview-context", "learn"),
        "pi-hermes-memory preview-context",
    ),
    (
        "knowledge",
        ("knowledge",),
        "pi-hermes-memory knowledge search 'deploy steps'",
    ),
    (
        "server",
        ("serve", "mcp", "tool", "tools"),
        'pi-hermes-memory tool memory \'{"action": "add", "target": "user", "content": "..."}\'',
    ),
    (
        "maintenance",
        (
            "doctor",
            "sync-markdown",
            "recover",
            "export",
            "import",
            "migrate",
            "delete-bulk",
        ),
        "pi-hermes-memory export > memory.jsonl",
    ),
)


def grouped_commands(parser: argparse.ArgumentParser) -> str:
    """The command section of the top-level help: one block per group."""
    helps = _command_helps(parser)
    width = max(len(name) for name in helps) + 2
    blocks: list[str] = []
    for title, names, example in GROUPS:
        lines = [f"{title}:"]
        for name in names:
            if name not in helps:  # a command another module did not register
                continue
            wrapped = textwrap.wrap(helps[name], width=max(40, 96 - width - 2)) or [""]
            lines.append(f"  {name.ljust(width)}{wrapped[0]}")
            lines.extend(f"  {' ' * width}{more}" for more in wrapped[1:])
        lines.append(f"  e.g. {example}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def ungrouped(parser: argparse.ArgumentParser) -> list[str]:
    """Subcommands the parser has that no group lists (a test keeps this empty)."""
    grouped = {name for _, names, _ in GROUPS for name in names}
    return sorted(set(_command_helps(parser)) - grouped)


def _command_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


__all__ = ["GROUPS", "grouped_commands", "ungrouped"]
