"""The `pi-hermes-memory` command line.

Exit status: 0 when the operation succeeded, 1 when it ran but did not succeed (the JSON result
has `success: false`, or the store could not be opened), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import attrs

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--project", help="current project name (default: config, then cwd)")
    common.add_argument("--cwd", help="directory the project is derived from (default: .)")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser = argparse.ArgumentParser(
        prog="pi-hermes-memory",
        description="Durable long-term memory for LLM agents. Data lives under "
        "$PI_CODING_AGENT_DIR (default ~/.pi/agent).",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", required=True)
    tool = sub.add_parser("tool", parents=[common], help="call a tool with JSON arguments")
    tool.add_argument("name", help="tool name, e.g. memory")
    tool.add_argument("arguments", help="JSON object of arguments, or - to read stdin")
    add = sub.add_parser("add", parents=[common], help="add an entry")
    add.add_argument("text")
    add.add_argument("--target", default="memory", choices=["user", "memory", "project", "failure"])
    add.add_argument(
        "--category",
        choices=["failure", "correction", "insight", "preference", "convention", "tool-quirk"],
    )
    add.add_argument("--force", action="store_true", help="save despite similar entries")
    lst = sub.add_parser("list", parents=[common], help="list entries")
    lst.add_argument("--target", choices=["user", "memory", "project", "failure"])
    lst.add_argument("--history", action="store_true", help="include superseded history")
    find = sub.add_parser("search", parents=[common], help="full-text search (memory_search)")
    find.add_argument("query", help="words to look for (any language)")
    find.add_argument("--target", choices=["user", "memory", "project", "failure"])
    find.add_argument(
        "--category",
        choices=["failure", "correction", "insight", "preference", "convention", "tool-quirk"],
        help="failure entries of this category only",
    )
    find.add_argument("--limit", type=_limit, default=10, help="1-20 results (default 10)")
    find.add_argument("--history", action="store_true", help="include superseded history")
    sub.add_parser(
        "sync-markdown",
        parents=[common],
        help="import Markdown edits, then verify and repair the search index",
    )
    return parser


def _limit(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if not 1 <= number <= 20:
        raise argparse.ArgumentTypeError(f"must be from 1 to 20, got {number}")
    return number


def _search(memory: Any, args: argparse.Namespace) -> int:
    """Exit 0 when the search ran (also without results), 1 when the query was invalid."""
    from pi_hermes_memory.search import search_result_json

    result = memory.search(
        args.query,
        target=args.target,
        category=args.category,
        limit=args.limit,
        include_superseded=args.history,
    )
    if args.json:
        print(json.dumps(search_result_json(result), ensure_ascii=False, indent=2))
    elif result.status == "invalid_arguments":
        print(f"pi-hermes-memory: {result.message}", file=sys.stderr)
    else:
        print(result.message)
    return EXIT_FAILED if result.status == "invalid_arguments" else EXIT_OK


def _jsonable(value: Any) -> Any:
    if attrs.has(type(value)):
        return {k: _jsonable(v) for k, v in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _print_json(value: Any) -> None:
    print(json.dumps(_jsonable(value), ensure_ascii=False, indent=2))


def _sync_markdown(memory: Any, *, as_json: bool) -> int:
    report = memory.sync_markdown()
    if as_json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        return EXIT_OK
    print(
        f"Imported {report.imported} Markdown change(s); search index: {report.added} added, "
        f"{report.updated} updated, {report.removed} removed, {report.skipped} skipped"
        + (", full-text index rebuilt" if report.fts_rebuilt else "")
        + "."
    )
    for t in report.targets:
        print(
            f"  {t.target}: imported {t.imported}, added {t.added}, updated {t.updated}, "
            f"removed {t.removed}, skipped {t.skipped}"
        )
    for warning in report.warnings:
        print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    arguments: Any = None
    if args.command == "tool":
        raw = sys.stdin.read() if args.arguments == "-" else args.arguments
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as exc:
            print(f"pi-hermes-memory: arguments are not valid JSON: {exc}", file=sys.stderr)
            return EXIT_USAGE

    if args.command == "search" and args.category and args.target not in (None, "failure"):
        print("pi-hermes-memory: --category applies only to --target failure", file=sys.stderr)
        return EXIT_USAGE

    import pi_hermes_memory
    from pi_hermes_memory.errors import HermesMemoryError

    try:
        memory = pi_hermes_memory.open(project=args.project, cwd=args.cwd)
    except (HermesMemoryError, OSError, RuntimeError, ValueError) as exc:
        print(f"pi-hermes-memory: cannot open the memory store: {exc}", file=sys.stderr)
        return EXIT_FAILED
    with memory:
        for warning in memory.warnings:
            print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)
        if args.command == "tool":
            result = memory.call_tool(args.name, arguments)
            _print_json(result)
            return EXIT_OK if result.get("success") else EXIT_FAILED
        if args.command == "sync-markdown":
            return _sync_markdown(memory, as_json=args.json)
        if args.command == "search":
            return _search(memory, args)
        if args.command == "add":
            outcome = memory.add(
                args.text, target=args.target, category=args.category, force=args.force
            )
            if args.json:
                _print_json(outcome)
            else:
                print(outcome.message)
                for c in outcome.candidates:
                    print(f"  similar ({c.basis} {c.score:.2f}): {c.text}")
            return EXIT_OK if outcome.success else EXIT_FAILED
        entries = memory.entries(args.target, include_history=args.history)
        if args.json:
            _print_json(entries)
        else:
            for e in entries:
                where = e.target + (f"/{e.project}" if e.project else "")
                old = f" (superseded by {e.superseded_by})" if e.superseded_by else ""
                print(f"[{where}] {e.text}{old}")
            if not entries:
                print("(no entries)")
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
