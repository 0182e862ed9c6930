"""`setup [HOST]`: wire this library into a host program (issue 30; registered by
`pi_hermes_memory.adapters.cli.app`).

    setup                         what is installed and what is set up, per host (changes nothing)
    setup HOST [--project|--user] [--uninstall] [--dry-run]
                                  install (or remove) our wiring; prints every file it changed

A host is a module under `pi_hermes_memory.adapters.hosts` named in `HOSTS`; it plans file
changes and `base.apply` makes them (atomic, with a backup of a replaced file). `--dry-run`
prints the unified diff of the plan and writes nothing. Planning twice changes nothing the
second time (idempotent). Runs without opening the store.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

COMMANDS: frozenset[str] = frozenset({"setup"})
WRITES: frozenset[str] = frozenset()
NO_STORE: frozenset[str] = frozenset({"setup"})
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

#: host name -> (module under pi_hermes_memory.adapters.hosts, attribute holding its Host)
HOSTS: dict[str, tuple[str, str]] = {
    "pi": ("pi", "HOST"),
    "claude-desktop": ("mcp_clients", "CLAUDE_DESKTOP"),
    "codex": ("mcp_clients", "CODEX"),
    "cursor": ("mcp_clients", "CURSOR"),
    "openclaw": ("mcp_clients", "OPENCLAW"),
    "vscode": ("mcp_clients", "VSCODE"),
    "claude-code": ("claude_code", "HOST"),
}


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `setup` to the `pi-hermes-memory` parser."""
    setup = sub.add_parser(
        "setup",
        help="wire memory into a host (" + ", ".join(sorted(HOSTS)) + "); no HOST: what is "
        "detected",
        description="Install (or with --uninstall remove) what a host needs to use this "
        "memory by itself. Without HOST: list the hosts, whether each is installed and set up, "
        "and change nothing. --dry-run prints the diff and writes nothing.",
    )
    setup.add_argument("host", nargs="?", choices=sorted(HOSTS), metavar="HOST")
    # not the common options: `--project` here is a flag (this project's host settings)
    setup.add_argument("--cwd", default=argparse.SUPPRESS, help="the project folder (default: .)")
    setup.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    where = setup.add_mutually_exclusive_group()
    where.add_argument(
        "--user",
        dest="scope",
        action="store_const",
        const="user",
        help="for every project (the default)",
    )
    where.add_argument(
        "--project",
        dest="scope",
        action="store_const",
        const="project",
        help="for the current project only (its folder's host settings)",
    )
    setup.add_argument("--uninstall", action="store_true", help="remove what setup installed")
    setup.add_argument(
        "--dry-run", "--print", dest="dry_run", action="store_true", help="print, change nothing"
    )
    setup.set_defaults(scope="user")


def host(name: str) -> Any:
    module, attribute = HOSTS[name]
    return getattr(importlib.import_module(f"pi_hermes_memory.adapters.hosts.{module}"), attribute)


def options(args: argparse.Namespace) -> Any:
    return setup_options(args.cwd, scope=args.scope, uninstall=args.uninstall)


def setup_options(cwd: str | None, *, scope: str = "user", uninstall: bool = False) -> Any:
    """The `SetupOptions` of this process (its environment, HOME, agent root); also what the
    doctor's hosts section checks with."""
    from pi_hermes_memory.adapters.files.config_file import resolve_agent_root
    from pi_hermes_memory.adapters.hosts.base import SetupOptions, command_path

    environ = dict(os.environ)
    folder = Path(cwd).resolve() if cwd else Path.cwd()
    home = Path(environ.get("HOME") or Path.home())
    return SetupOptions(
        scope=scope,  # type: ignore[arg-type]
        project_dir=folder,
        home=home,
        agent_root=resolve_agent_root(environ, home=home, cwd=folder),
        command=command_path(environ),
        environ=environ,
        uninstall=uninstall,
    )


def hosts_report(cwd: str | None, memory_dir: Path) -> Any:
    """The doctor's hosts section (`adapters.hosts.wiring`) over every host in HOSTS."""
    from pi_hermes_memory.adapters.hosts.wiring import hosts_section

    return hosts_section(
        [(name, lambda name=name: host(name)) for name in sorted(HOSTS)],  # type: ignore[misc]
        setup_options(cwd),
        memory_dir,
    )


def run(memory: Any, args: argparse.Namespace) -> int:  # pragma: no cover - NO_STORE
    return run_unopened(args)


def run_unopened(args: argparse.Namespace) -> int:
    from pi_hermes_memory.adapters.hosts.base import apply
    from pi_hermes_memory.errors import HermesMemoryError

    try:
        opts = options(args)
        if args.host is None:
            found = [host(name).detect(opts) for name in sorted(HOSTS)]
            if args.json:
                print(
                    json.dumps({"success": True, "hosts": [d.to_json() for d in found]}, indent=2)
                )
            else:
                for d in found:
                    state = (
                        "set up" if d.configured else ("installed" if d.installed else "not found")
                    )
                    where = f" ({d.where})" if d.where else ""
                    print(f"{d.host:16} {state}{where}{': ' + d.detail if d.detail else ''}")
                print("run `pi-hermes-memory setup HOST` to set one up")
            return EXIT_OK
        plan = [c for c in host(args.host).plan(opts) if c.before != c.after]
        if args.dry_run:
            if args.json:
                print(
                    json.dumps(
                        {
                            "success": True,
                            "dry_run": True,
                            "changes": [{**c.to_json(), "diff": c.diff()} for c in plan],
                        },
                        indent=2,
                    )
                )
            else:
                for c in plan:
                    print(c.diff() or f"{c.action} {c.path}")
                if not plan:
                    print(f"{args.host}: nothing to change")
            return EXIT_OK
        done = apply(plan)
    except BrokenPipeError:
        raise  # the reader went away (`setup | head`): `main` ends quietly
    except (HermesMemoryError, OSError) as exc:
        print(f"pi-hermes-memory: setup: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps({"success": True, "changes": [c.to_json() for c in done]}, indent=2))
    else:
        for c in done:
            print(f"{c.action}d {c.path}" + (f"  ({c.why})" if c.why else ""))
        if not done:
            print(
                f"{args.host}: already {'removed' if args.uninstall else 'set up'}; nothing changed"
            )
    return EXIT_OK
