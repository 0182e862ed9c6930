"""CLI commands for the whole store (registered by `pi_hermes_memory.adapters.cli`, ADR 0046).

stats         counts per target, scope and project; superseded; characters vs limits; vectors
delete-bulk   remove the active entries of one or more scopes (--before DATE, --dry-run)
export        every entry with its supersede history as JSON Lines (header line first)
import        an export file, idempotent by id (--dry-run, --scope)
migrate       a second-seed export ({"memories": [...]}) into this store
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from typing import Any

COMMANDS: frozenset[str] = frozenset({"stats", "delete-bulk", "export", "import", "migrate"})
WRITES: frozenset[str] = frozenset({"delete-bulk", "import", "migrate"})

EXIT_OK, EXIT_FAILED = 0, 1
_TARGETS = ["user", "memory", "project", "failure"]
_SCOPE_HELP = "global, agent:<id>, custom:<name>, user:<id> or project:<name>"


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a date as YYYY-MM-DD") from None


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    sub.add_parser(
        "stats",
        parents=[common],
        help="counts per target, scope and project; superseded; characters vs limits; vectors",
    )
    bulk = sub.add_parser(
        "delete-bulk",
        parents=[common],
        help="remove the active entries of these scopes (restore brings each back)",
    )
    bulk.add_argument("--scope", nargs="+", required=True, help=_SCOPE_HELP)
    bulk.add_argument("--before", type=_date, help="only entries created before this date")
    bulk.add_argument("--dry-run", action="store_true", help="only show what would be removed")
    export = sub.add_parser(
        "export",
        parents=[common],
        help="every entry and its supersede history as JSON Lines (the whole store)",
    )
    export.add_argument("--scope", nargs="+", default=(), help=_SCOPE_HELP)
    export.add_argument("--target", choices=_TARGETS)
    export.add_argument("--category", help="only entries of this category")
    export.add_argument("--output", "-o", help="write to this file (default: stdout)")
    imp = sub.add_parser(
        "import", parents=[common], help="import an export file (idempotent by id)"
    )
    imp.add_argument("file", help="an export file (JSON Lines), or - for stdin")
    imp.add_argument("--scope", nargs="+", default=(), help="only entries of these scopes")
    imp.add_argument("--dry-run", action="store_true", help="only show what would be imported")
    mig = sub.add_parser(
        "migrate",
        parents=[common],
        help='import a second-seed export ({"memories": [...]}: id, text, scope, timestamp, …)',
    )
    mig.add_argument("file", help="the JSON export file, or - for stdin")
    mig.add_argument("--dry-run", action="store_true", help="only show what would be imported")


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    from pi_hermes_memory import porting

    if args.command == "stats":
        return _stats(porting.stats(memory), as_json=args.json)
    if args.command == "delete-bulk":
        return _delete_bulk(memory, args)
    if args.command == "export":
        return _export(memory, args)
    if args.command == "import":
        with _open(args.file) as lines:
            read = porting.read_export(lines)
        report = porting.import_entries(
            memory, read.rows, scopes=args.scope, dry_run=args.dry_run, removed=read.removed
        )
        return _report(report, {}, as_json=args.json)
    from pi_hermes_memory.adapters.system import UlidFactory

    with _open(args.file) as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as e:
            from pi_hermes_memory.errors import InvalidArgument

            raise InvalidArgument(f"{args.file}: not JSON ({e}); nothing was imported") from None
    report, mapping = porting.migrate_seed(
        memory, data, new_id=UlidFactory().new_id, dry_run=args.dry_run
    )
    return _report(report, mapping, as_json=args.json)


def _open(path: str) -> Any:
    import contextlib

    if path == "-":
        return contextlib.nullcontext(sys.stdin)
    return open(path, encoding="utf-8")


def _stats(data: dict[str, Any], *, as_json: bool) -> int:
    if as_json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        print()
        return EXIT_OK
    for name, t in data["targets"].items():
        print(
            f"{name}: {t['active']} active, {t['superseded']} superseded, {t['removed']} removed,"
            f" {t['chars']:,}/{t['limit']:,} chars"
        )
    print("scopes: " + (", ".join(f"{k} {v}" for k, v in data["scopes"].items()) or "(none)"))
    print("projects: " + (", ".join(f"{k} {v}" for k, v in data["projects"].items()) or "(none)"))
    v = data["vectors"]
    print(
        "vectors: off" if v is None else f"vectors: {v['with_vector']}/{v['rows']} ({v['model']})"
    )
    return EXIT_OK


def _delete_bulk(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory import porting

    rows = porting.bulk_candidates(memory, args.scope, before=args.before)
    removed: list[str] = []
    failed: list[dict[str, str]] = []
    if not args.dry_run:
        for e, outcome in porting.remove_rows(memory, rows):
            if outcome.success:
                removed.append(e.id)
            else:
                failed.append({"id": e.id, "message": outcome.message})
    if args.json:
        data = {
            "dry_run": args.dry_run,
            "matched": [{"id": e.id, "target": e.target.value, "text": e.text} for e in rows],
            "removed": removed,
            "failed": failed,
        }
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        for e in rows:
            print(f"{e.id}  [{e.target.value} {porting.entry_scope(e)}] {e.text}")
        if args.dry_run:
            print(f"Would remove {len(rows)} entries (dry run: nothing changed).")
        else:
            print(f"Removed {len(removed)} of {len(rows)} entries (restore brings one back).")
        for f in failed:
            print(f"pi-hermes-memory: {f['id']}: {f['message']}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def _export(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory import porting
    from pi_hermes_memory.domain.model import Target

    targets = [Target(args.target)] if args.target else None
    lines = porting.export_lines(memory, targets=targets, scopes=args.scope, category=args.category)
    count = -1  # the header is not an entry
    if args.output:
        temp = f"{args.output}.partial"
        with open(temp, "w", encoding="utf-8") as out:
            for line in lines:
                out.write(line + "\n")
                count += 1
        import os

        os.replace(temp, args.output)
        print(f"Exported {count} entries to {args.output}", file=sys.stderr)
    else:
        for line in lines:
            sys.stdout.write(line + "\n")
            count += 1
    return EXIT_OK


def _report(report: Any, mapping: dict[str, str], *, as_json: bool) -> int:
    if as_json:
        data = report.to_json()
        if mapping:
            data["id_mapping"] = mapping
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        print(report.message[0].upper() + report.message[1:] + ".")
        for r in report.refused:
            print(f"  refused {', '.join(r.ids)}: {r.reason}")
        for old, new in mapping.items():
            print(f"  id {old} -> {new}")
        for note in report.notes:
            print(f"pi-hermes-memory: note: {note}", file=sys.stderr)
    return EXIT_FAILED if report.refused else EXIT_OK
