"""CLI command for the read-only doctor (registered by `pi_hermes_memory.adapters.cli.app`).

    doctor [--json]   the store's health: paths and config, Markdown <-> SQLite, hand edits,
                      embedding coverage, session index, skills, cross-scope near-duplicates,
                      and the hosts `setup` wired in (their entry's command, last call, last
                      review)

It runs before (and instead of) opening the store: an open imports hand edits, renders files,
migrates and creates the database, and the doctor must change nothing (ADR 0036). Exit status:
0 healthy, 1 problems found, 2 the doctor could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: the commands this module adds; none writes
COMMANDS: frozenset[str] = frozenset({"doctor"})
WRITES: frozenset[str] = frozenset()
#: the commands run without opening the store (`run_unopened`)
NO_STORE: frozenset[str] = frozenset({"doctor"})

EXIT_HEALTHY, EXIT_PROBLEMS, EXIT_CANNOT_RUN = 0, 1, 2


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    sub.add_parser(
        "doctor",
        parents=[common],
        help="a read-only health report (exit 0 healthy, 1 problems found, 2 could not run)",
        description="Check the store without changing anything: resolved paths and config "
        "warnings, the embedding provider (a configured apiKeyEnv without a value is reported; "
        "values are never printed), Markdown <-> SQLite per target with the superseded counts, "
        "pending hand edits, unattributed project entries, embedding coverage per model, the "
        "session index, skills, and every cross-scope near-duplicate candidate (project x "
        "project: promotion candidate, project x global: suspected duplicate). Exit status: 0 "
        "healthy, 1 problems found, 2 could not run.",
    )


def run(memory: Any, args: argparse.Namespace) -> int:
    """On an opened store (not the CLI's path, which never opens one): its doctor report."""
    return _print(memory.doctor(), as_json=args.json)


def run_unopened(args: argparse.Namespace) -> int:
    """Run the doctor on the configured store without opening it."""
    from pi_hermes_memory.adapters.doctor import diagnose
    from pi_hermes_memory.errors import ConfigError, HermesMemoryError

    try:
        report = diagnose(cwd=args.cwd, project=args.project)
        report = _with_hosts(report, args.cwd)
    except (HermesMemoryError, ConfigError, OSError) as exc:
        if args.json:
            json.dump({"success": False, "error": str(exc)}, sys.stdout, ensure_ascii=False)
            print()
        print(f"pi-hermes-memory: the doctor could not run: {exc}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    return _print(report, as_json=args.json)


def _with_hosts(report: Any, cwd: str | None) -> Any:
    """The report with its hosts section (issue 30): each host `setup` wired in, whether its
    wiring still works (a problem when not), its last call, the last review."""
    from pathlib import Path

    import attrs
    from pi_hermes_memory.adapters.cli.setup import hosts_report

    hosts = hosts_report(cwd, Path(report.paths.memory_dir))
    problems = [p for h in hosts.hosts for p in h.problems]
    return attrs.evolve(report, hosts=hosts, problems=(*report.problems, *problems))


def _print(report: Any, *, as_json: bool) -> int:
    if as_json:
        json.dump(report.to_json(), sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        print(report.render())
    return EXIT_HEALTHY if report.healthy else EXIT_PROBLEMS
