"""CLI commands for the knowledge base (registered by `pi_hermes_memory.adapters.cli.app`,
ADR 0048).

    knowledge index [--json]
        bring the index up to date with the configured folders; progress on stderr at most
        once a second
    knowledge search QUERY [--limit N] [--path PREFIX_OR_GLOB] [--json]
    knowledge stats [--json]

Exit status: 0 done, 1 the operation failed (no folders configured, another indexer is
running), 2 usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

COMMANDS: frozenset[str] = frozenset({"knowledge"})
#: the index is derived data outside the memory store: a read-only store may still index it
WRITES: frozenset[str] = frozenset()

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _limit(value: str) -> int:
    from pi_hermes_memory.domain.echo import shown
    from pi_hermes_memory.knowledge.service import MAX_KNOWLEDGE_LIMIT

    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {shown(value, 40)}") from None
    if not 1 <= number <= MAX_KNOWLEDGE_LIMIT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_KNOWLEDGE_LIMIT}")
    return number


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    knowledge = sub.add_parser(
        "knowledge",
        parents=[common],
        help="the knowledge base: index, search and describe the configured folders",
        description="Folders come from knowledge.paths in the config file or "
        "PI_MEMORY_KNOWLEDGE_PATHS (a JSON array).",
    )
    actions = knowledge.add_subparsers(dest="knowledge_command", metavar="ACTION", required=True)
    actions.add_parser("index", parents=[common], help="index new and changed files")
    find = actions.add_parser("search", parents=[common], help="search the indexed chunks")
    find.add_argument("query", help="words to look for")
    find.add_argument("--limit", type=_limit, default=5, help="1-20 chunks (default 5)")
    find.add_argument("--path", help="only files under this path prefix or matching this glob")
    actions.add_parser("stats", parents=[common], help="folders, files, chunks, last run")


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def run(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.errors import KnowledgeBusy, KnowledgeNotConfigured

    try:
        if args.knowledge_command == "index":
            return _index(memory, args)
        if args.knowledge_command == "search":
            return _search(memory, args)
        return _stats(memory, args)
    except (KnowledgeNotConfigured, KnowledgeBusy) as exc:
        print(f"pi-hermes-memory: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _index(memory: Any, args: argparse.Namespace) -> int:
    """Progress on stderr (a bar on a terminal, else a line a second): the folders are walked
    as they are indexed, so the count of files has no total to show."""
    from pi_hermes_memory.adapters.cli.progress import Progress, rate

    bar = Progress("knowledge index", "files seen")

    def progress(p: Any) -> None:
        speed = rate(p.bytes_read, p.seconds, "B")
        bar.update(
            p.files_seen,
            None,
            f"{p.files_indexed} indexed, {p.bytes_read / 1e6:.1f} MB"
            + (f" ({speed})" if speed else ""),
        )

    try:
        report = memory.knowledge.index(progress)
    finally:
        bar.close()
    if args.json:
        _print_json(report.to_json())
        return EXIT_OK
    skipped = ", ".join(f"{k} {v}" for k, v in report.skipped.items()) or "none"
    print(
        f"Indexed {report.files_seen} files in {len(report.roots)} folders: {report.files_new} "
        f"new, {report.files_changed} changed, {report.files_unchanged} unchanged, "
        f"{report.files_removed} removed, {report.files_deferred} changing (left for the next "
        f"run); {report.chunks_written} chunks written in {report.seconds:.1f} s"
        + (f" ({speed})" if (speed := rate(report.bytes_read, report.seconds, "B")) else "")
        + "."
    )
    print(f"Skipped: {skipped}.")
    if report.redaction_message:
        print(f"Redacted: {report.redaction_message}.")
    if report.budget_message:
        print(f"pi-hermes-memory: warning: {report.budget_message}", file=sys.stderr)
    return EXIT_OK


def _search(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.knowledge.tool import hit_notes, search_json

    hits = memory.knowledge.search(args.query, limit=args.limit, path=args.path)
    if args.json:
        _print_json(search_json(args.query, hits))
        return EXIT_OK
    if not hits:
        print("(no matches)")
    for rank, hit in enumerate(hits, start=1):
        heading = f"  § {hit.heading}" if hit.heading else ""
        notes = hit_notes(hit)
        print(
            f"[{rank}] {hit.path}:{hit.start_line}-{hit.end_line}{heading}{notes}  "
            f"({hit.score:.3g})"
        )
        print(f"    {hit.snippet}")
    return EXIT_OK


def _stats(memory: Any, args: argparse.Namespace) -> int:
    stats = memory.knowledge.stats()
    if args.json:
        _print_json(stats.to_json())
        return EXIT_OK
    print(f"Folders: {', '.join(stats.roots) or '(none configured)'}")
    for missing in stats.missing_roots:
        print(f"pi-hermes-memory: warning: {missing} is not a folder", file=sys.stderr)
    print(f"Files: {stats.files}, chunks: {stats.chunks}, bytes: {stats.bytes}")
    print(f"Embeddings: {'on' if stats.embeddings else 'off'} ({stats.vectors} vectors)")
    print(f"Secrets redacted: {stats.secrets_redacted}")
    if stats.last_run is not None:
        run = stats.last_run
        print(
            f"Last run: {run.get('files_seen')} files seen, {run.get('chunks_written')} chunks "
            f"written in {run.get('seconds')} s"
        )
    return EXIT_OK


__all__ = ["COMMANDS", "WRITES", "add_parsers", "run"]
