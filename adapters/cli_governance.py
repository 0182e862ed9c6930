"""CLI commands for skill governance."""

from __future__ import annotations

import argparse
from typing import Any

#: the commands this module adds; those that write are also in WRITES
COMMANDS: frozenset[str] = frozenset()
WRITES: frozenset[str] = frozenset()


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    raise NotImplementedError(args.command)
