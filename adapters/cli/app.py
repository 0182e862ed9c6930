"""The `pi-hermes-memory` command line.

Exit status: 0 when the operation succeeded, 1 when it ran but did not succeed (the JSON result
has `success: false`, or the store could not be opened), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import attrs
from pi_hermes_memory.adapters.cli import porting as cli_port
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.log import before_first_event

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: 128 + SIGPIPE, what a shell reports for a writer whose reader went away
EXIT_BROKEN_PIPE = 141


class _Parser(argparse.ArgumentParser):
    """argparse, but a refused choice is shown clipped, or not at all when the content
    scanner would refuse it: `--target <a secret>` must not print the secret."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            from pi_hermes_memory.domain.echo import shown

            choices = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(
                action, f"invalid choice: {shown(value)} (choose from {choices})"
            )


class _TopParser(_Parser):
    """The top-level parser: its help groups the commands (adapters/cli/help.py) instead of
    printing them twice in one flat list."""

    def format_help(self) -> str:
        from pi_hermes_memory.adapters.cli.help import grouped_commands

        head = self._get_formatter()
        head.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        head.add_text(self.description)
        options = self._get_formatter()
        for group in self._action_groups:
            shown = [
                a for a in group._group_actions if not isinstance(a, argparse._SubParsersAction)
            ]
            if shown:
                options.start_section(group.title)
                options.add_arguments(shown)
                options.end_section()
        return (
            f"{head.format_help()}\ncommands (`pi-hermes-memory COMMAND --help` for one):\n\n"
            f"{grouped_commands(self)}\n\n{options.format_help()}"
        )


def _common(*, suppress: bool) -> _Parser:
    """The options every command takes. The copy attached to each subcommand suppresses its
    defaults, so an option given before the command name is not reset by the subparser."""
    unset: Any = argparse.SUPPRESS if suppress else None
    common = _Parser(add_help=False)
    common.add_argument(
        "--project", default=unset, help="current project name (default: config, then cwd)"
    )
    common.add_argument(
        "--cwd", default=unset, help="directory the project is derived from (default: .)"
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print machine-readable JSON",
    )
    common.add_argument(
        "--agent",
        default=unset,
        help="agent id: selects the scopes this session may use (scopes.agentAccess)",
    )
    return common


class _Skipped:
    """Stands in for a subcommand's parser that this call does not build: every method call
    (add_argument, add_mutually_exclusive_group, set_defaults, …) does nothing."""

    def __getattr__(self, name: str) -> Any:
        return self._nothing

    def _nothing(self, *args: Any, **kwargs: Any) -> _Skipped:
        return self


class _OnlyOne:
    """The subparsers action, building only the parser of `only` (issue 29, ADR 0099): the
    parser of a command is the same whichever other commands exist, so its help, usage and
    errors are unchanged; building all ~40 costs ~15 ms of argparse per call."""

    def __init__(self, sub: Any, only: str) -> None:
        self._sub = sub
        self._only = only

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name != self._only:
            return _Skipped()
        return self._sub.add_parser(name, **kwargs)


#: the categories `add --category` and `update --category` accept
_ADD_CATEGORIES = ["failure", "correction", "insight", "preference", "convention", "tool-quirk"]
#: the top-level options that take a value (`--project P COMMAND …`)
_VALUED_OPTIONS = ("--project", "--cwd", "--agent")


def _command_of(argv: Sequence[str]) -> str | None:
    """The command `argv` names, when it can be told for sure without argparse: only exact
    top-level options before it (no abbreviation, no --help/--version, no `--`). None means
    build every command's parser (the help, an unknown command, anything unusual)."""
    tokens = iter(argv)
    for token in tokens:
        if token == "--json" or token.startswith(tuple(f"{o}=" for o in _VALUED_OPTIONS)):
            continue
        if token in _VALUED_OPTIONS:
            next(tokens, None)
            continue
        if token.startswith("-"):
            return None
        return token if token in _BUILTIN_COMMANDS or token in _EXTRA_OF else None
    return None


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `only` (a command name), the subcommand parser of
    that command alone."""
    common = _common(suppress=True)
    parser = _TopParser(
        prog="pi-hermes-memory",
        description="Durable long-term memory for LLM agents. Data lives under "
        "$PI_CODING_AGENT_DIR (default ~/.pi/agent).",
        parents=[_common(suppress=False)],
    )
    from pi_hermes_memory import __version__

    parser.add_argument("--version", action="version", version=f"pi-hermes-memory {__version__}")
    # not required: no command prints the help and exits 0 (`_main`)
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    if only is not None:
        sub = _OnlyOne(sub, only)
    tool = sub.add_parser("tool", parents=[common], help="call a tool with JSON arguments")
    tool.add_argument("name", help="tool name, e.g. memory")
    tool.add_argument("arguments", help="JSON object of arguments, or - to read stdin")
    add = sub.add_parser("add", parents=[common], help="add an entry")
    add.add_argument("text", help="the entry's text, or - to read it from stdin")
    add.add_argument(
        "--target",
        default="memory",
        choices=["user", "memory", "project", "failure"],
        help="memory: facts for every project (default); user: about the person; "
        "project: the current project only; failure: what went wrong and the fix",
    )
    add.add_argument("--category", choices=_ADD_CATEGORIES)
    add.add_argument("--force", action="store_true", help="save despite similar entries")
    add.add_argument("--scope", help="memory/user: global, agent:<id>, custom:<name>, user:<id>")
    lst = sub.add_parser("list", parents=[common], help="list entries")
    lst.add_argument("--target", choices=["user", "memory", "project", "failure"])
    lst.add_argument("--history", action="store_true", help="include superseded history")
    lst.add_argument(
        "--scope",
        type=cli_port.scope_name,
        help="only entries of this scope (global, agent:<id>, custom:<name>, user:<id>, "
        "project:<name>), as stats, export and delete-bulk name them",
    )
    lst.add_argument("--of-project", help="only entries attributed to this project")
    lst.add_argument(
        "--category",
        choices=cli_port.CATEGORIES,
        help="only entries of this category: a failure category, or an imported entry's "
        "(preference, fact, decision, entity, other)",
    )
    lst.add_argument("--limit", type=_count, help="at most this many entries")
    lst.add_argument("--offset", type=_count, default=0, help="skip this many entries first")
    restore = sub.add_parser(
        "restore",
        parents=[common],
        help="bring back a removed entry (deleted by hand, the tool or eviction); "
        "without TEXT_OR_ID: list the removed entries",
    )
    restore.add_argument("text_or_id", nargs="?", help="its id or a unique part of its text")
    restore.add_argument(
        "--target", default="memory", choices=["user", "memory", "project", "failure"]
    )
    purge = sub.add_parser(
        "purge",
        parents=[common],
        help="erase an entry and all its versions for good (journal, log, search, files); "
        "without --yes only shows what would be erased",
    )
    purge.add_argument("text_or_id", help="its id or a unique part of any version's text")
    purge.add_argument(
        "--target", default="memory", choices=["user", "memory", "project", "failure"]
    )
    purge.add_argument(
        "--yes", action="store_true", help="really purge (nothing is asked interactively)"
    )
    for verb, what in (
        ("promote", "move a current-project entry to global memory"),
        ("demote", "move a global memory entry into the current project"),
    ):
        move = sub.add_parser(verb, parents=[common], help=what)
        move.add_argument("old_text", help="a unique substring of the entry")
        move.add_argument("--force", action="store_true", help="move despite similar entries")
    tools = sub.add_parser("tools", parents=[common], help="print the tool definitions as JSON")
    tools.add_argument(
        "--format", default="openai", choices=["openai", "openai-responses", "anthropic", "mcp"]
    )
    tools.add_argument(
        "--strict", action="store_true", help="OpenAI strict-mode schemas (null = absent)"
    )
    for verb, what in (
        ("get", "show the entry with this id"),
        ("history", "the versions of the entry with this id, oldest first"),
        ("delete", "remove the entry with this id (restore brings it back)"),
        ("update", "replace the text of the entry with this id (the old text is kept)"),
    ):
        by_id = sub.add_parser(verb, parents=[common], help=what)
        by_id.add_argument(
            "id",
            help="a memory's id (list --json, search --json; it stays the same across "
            "updates), ID@N for its version N, or an old version's id",
        )
        if verb == "update":
            by_id.add_argument("text", help="the new text")
            by_id.add_argument(
                "--category",
                choices=_ADD_CATEGORIES,
                help="failure entries: the new category",
            )
    sub.add_parser(
        "switch-project",
        parents=[common],
        help="entries per real project attribution (the current project comes from cwd/config)",
    )
    sub.add_parser("insights", parents=[common], help="overview of every memory target")
    find = sub.add_parser("search", parents=[common], help="full-text search (memory_search)")
    find.add_argument("query", help="words to look for (any language)")
    find.add_argument(
        "--target",
        choices=["memory", "user", "failure", "project"],
        help="memory: global and the current project's memory; user; failure; "
        "project: the current project's memory only (default: all)",
    )
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
    sub.add_parser(
        "recover",
        parents=[common],
        help="move a damaged sessions.db aside and rebuild it from the event log",
    )
    reembed = sub.add_parser(
        "reembed",
        parents=[common],
        help="embed the entries lacking a vector of the configured embedding model",
    )
    reembed.add_argument(
        "--all", action="store_true", help="re-embed every entry, not only the missing ones"
    )
    reembed.add_argument(
        "--batch-size", type=_batch_size, default=64, help="entries per request (default 64)"
    )
    index = sub.add_parser(
        "index-sessions",
        parents=[common],
        help="index the Pi session files for session-search (incremental)",
    )
    index.add_argument("--file", help="index only this session file's new lines (live indexing)")
    history = sub.add_parser(
        "session-search", parents=[common], help="search past sessions (session_search)"
    )
    history.add_argument("query", nargs="?", help="words to look for (legacy variant)")
    history.add_argument(
        "--only-project", help="only sessions of this project ('*': all, none first)"
    )
    history.add_argument("--role", choices=["user", "assistant", "system"])
    history.add_argument("--limit", type=_limit, default=5, help="1-20 sessions (default 5)")
    history.add_argument(
        "--request",
        help="an anchors Markdown request (JSONL source ranges); - reads it from stdin",
    )
    for name in _EXTRA_COMMANDS if only is None else (_EXTRA_OF.get(only),):
        if name is not None:
            _extra_module(name).add_parsers(sub, common)
    return parser


def _index_sessions(memory: Any, args: argparse.Namespace) -> int:
    """Progress on stderr (a bar on a terminal, else a line a second); the report on stdout."""
    from pi_hermes_memory.adapters.cli.progress import Progress, rate

    bar = Progress("index-sessions", "files")

    def progress(p: Any) -> None:
        speed = rate(p.bytes_read, p.seconds, "B")
        bar.update(
            p.files_done,
            p.files_total,
            f"{p.messages} messages, {p.bytes_read / 1e6:.1f} MB"
            + (f" ({speed})" if speed else ""),
        )

    if args.file and not os.path.isfile(args.file):
        print(
            f"pi-hermes-memory: warning: {args.file} does not exist (or is not a file); "
            "nothing was indexed",
            file=sys.stderr,
        )
    try:
        report = memory.index_live(args.file) if args.file else memory.index_sessions(progress)
    finally:
        bar.close()
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        read = report.files_new + report.files_appended + report.files_reindexed
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(report.skipped.items())) or "none"
        print(
            f"Indexed {report.messages} messages from {read} of {report.files_seen} session "
            f"files ({report.files_unchanged} unchanged, {report.files_new} new, "
            f"{report.files_appended} grown, {report.files_reindexed} rewritten, "
            f"{report.files_removed} removed) in {report.seconds:.1f} s"
            + (f" ({speed})" if (speed := rate(report.bytes_read, report.seconds, "B")) else "")
            + "."
        )
        print(f"Lines skipped: {skipped} ({report.problems} damaged).")
    for failure in report.failures:
        print(f"pi-hermes-memory: warning: cannot read {failure}", file=sys.stderr)
    return EXIT_OK


def _session_search(memory: Any, args: argparse.Namespace, request: str | None) -> int:
    """Exit 0 when the search ran (also without results), 1 for a query without words (as
    `search`), 2 for a request that is not one (a usage error, as a malformed JSON argument)."""
    from pi_hermes_memory.history.tool import anchors_json, legacy_json

    if request is not None:
        result = memory.session_anchors(request)
        out = anchors_json(result)
    else:
        result = memory.session_search(
            args.query, project=args.only_project, role=args.role, limit=args.limit
        )
        out = legacy_json(result)
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
    elif result.status == Status.INVALID_ARGUMENTS:
        print(f"pi-hermes-memory: {result.message}", file=sys.stderr)
    else:
        print(result.message)
    if result.status != Status.INVALID_ARGUMENTS:
        return EXIT_OK
    return EXIT_USAGE if request is not None else EXIT_FAILED


def _batch_size(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {_shown(value)}") from None
    if not 1 <= number <= 2048:
        raise argparse.ArgumentTypeError(f"must be from 1 to 2048, got {number}")
    return number


def _shown(value: str) -> str:
    from pi_hermes_memory.domain.echo import shown

    return shown(value)


def _count(value: str) -> int:
    """A count option (`list --limit/--offset`): a whole number, 0 or more."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {_shown(value)}") from None
    if number < 0:
        raise argparse.ArgumentTypeError("expected 0 or more")
    return number


def _limit(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {_shown(value)}") from None
    if not 1 <= number <= 20:
        raise argparse.ArgumentTypeError(f"must be from 1 to 20, got {number}")
    return number


def _search(memory: Any, args: argparse.Namespace) -> int:
    """Exit 0 when the search ran (also without results), 1 when the query was invalid."""
    result = memory.search(
        args.query,
        target=args.target,
        category=args.category,
        limit=args.limit,
        include_superseded=args.history,
    )
    if args.json:
        from pi_hermes_memory.search.search_tool import search_result_json  # the tool's JSON

        print(json.dumps(search_result_json(result), ensure_ascii=False, indent=2))
    elif result.status == Status.INVALID_ARGUMENTS:
        print(f"pi-hermes-memory: {result.message}", file=sys.stderr)
    elif result.hits:
        print(result.message.split("\n", 1)[0])
        for rank, hit in enumerate(result.hits, start=1):
            print(_hit_line(rank, hit))
    else:
        print(result.message)
    return EXIT_FAILED if result.status == Status.INVALID_ARGUMENTS else EXIT_OK


def _hit_line(rank: int, hit: Any) -> str:
    """The tool's hit line with the score (0-1, two decimals) and the id that get, update,
    delete and history take: `[1] 0.83 <id> (memory, 2026-07-29) text`."""
    from pi_hermes_memory.search.memory_search import hit_line

    score = min(1.0, max(0.0, hit.score)) if hit.score == hit.score else 0.0
    rest = hit_line(rank, hit).removeprefix(f"[{rank}] ")
    return f"[{rank}] {score:.2f} {hit.memory_id or hit.id} {rest}"  # the memory's id (ADR 0074)


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


def _entries_json(rows: Any) -> list[dict[str, Any]]:
    """Entry views (list, get, history, restore) as JSON, each `scope` named as `--scope`,
    `stats`, `export` and `delete-bulk` name it: a project's row is `project:<name>`."""
    return [{**_jsonable(e), "scope": _scope_of(e)} for e in rows]


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


def _reembed(memory: Any, args: argparse.Namespace) -> int:
    """Progress lines on stderr; exit 1 when embeddings are off or some rows failed."""
    from pi_hermes_memory.adapters.cli.progress import Progress, reembed_detail
    from pi_hermes_memory.errors import HermesMemoryError

    bar = Progress("reembed", "entries")

    def progress(p: Any) -> None:
        bar.update(p.done, p.total, reembed_detail(p))

    try:
        report = memory.reembed(progress, everything=args.all, batch_size=args.batch_size)
    except HermesMemoryError as exc:
        bar.close()
        if args.json:
            print(json.dumps({"success": False, "message": f"cannot reembed: {exc}"}, indent=2))
        print(f"pi-hermes-memory: cannot reembed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    bar.close()
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(
            f"Embedded {report.embedded} of {report.total} entries with {report.model_id} in "
            f"{report.seconds:.1f} s ({report.rate:.1f} entries/s); {report.failed} failed."
        )
    if report.stopped:
        print(f"pi-hermes-memory: stopped early: {report.stopped}", file=sys.stderr)
    return EXIT_OK if report.success else EXIT_FAILED


def _recover(*, as_json: bool) -> int:
    """Exit 0 when the database is sound or was rebuilt, 1 when it could not be."""
    import pi_hermes_memory
    from pi_hermes_memory.errors import HermesMemoryError

    try:
        report = pi_hermes_memory.recover()
    except (HermesMemoryError, OSError) as exc:
        print(f"pi-hermes-memory: cannot recover: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(report.message)
    for line in (*report.problems, *report.warnings):
        print(f"pi-hermes-memory: warning: {line}", file=sys.stderr)
    return EXIT_OK


#: modules that add their own commands (each: COMMANDS, WRITES, add_parsers, run), by the
#: commands they add: a call imports only its command's module (issue 29, ADR 0099);
#: tests/e2e/test_cli_startup.py checks this table against each module's COMMANDS
_EXTRA_COMMANDS: dict[str, tuple[str, ...]] = {
    "skills": ("skills", "skill-visibility", "skill-stats"),
    "governance": ("skill-governance",),
    "learn": ("interview", "learn-skill"),
    "consolidate": ("consolidate",),
    "review": ("review-status",),
    "context": ("preview-context", "learn"),
    "doctor": ("doctor",),
    "porting": ("stats", "delete-bulk", "export", "import", "migrate"),
    "server": ("serve", "mcp"),
    "knowledge": ("knowledge",),
    "setup": ("setup",),
    "bridge": ("bridge",),
    "hook": ("hook",),
}
_EXTRA_OF: dict[str, str] = {c: m for m, commands in _EXTRA_COMMANDS.items() for c in commands}
#: the commands `_parser` adds itself (the same check)
_BUILTIN_COMMANDS = frozenset(
    {
        "tool",
        "add",
        "list",
        "restore",
        "purge",
        "promote",
        "demote",
        "tools",
        "get",
        "history",
        "delete",
        "update",
        "search",
        "sync-markdown",
        "recover",
        "reembed",
        "index-sessions",
        "switch-project",
        "insights",
        "session-search",
    }
)


def _extra_module(name: str) -> ModuleType:
    return importlib.import_module(f"pi_hermes_memory.adapters.cli.{name}")


def _extra_of(command: str | None) -> ModuleType | None:
    """The module that adds and runs `command`, imported now; None for a built-in one."""
    name = _EXTRA_OF.get(command or "")
    return None if name is None else _extra_module(name)


def __getattr__(name: str) -> Any:
    """`_EXTRA`: every command module, imported (for tests and tools that list them all)."""
    if name == "_EXTRA":
        return tuple(_extra_module(m) for m in _EXTRA_COMMANDS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: commands that write (in a read-only store their refusal says why; no warning first)
_WRITES = frozenset(
    {
        "add",
        "promote",
        "demote",
        "restore",
        "purge",
        "sync-markdown",
        "reembed",
        "index-sessions",
        "update",
        "delete",
    }
)


def _entry_line(e: Any) -> str:
    where = e.target + (f"/{e.project}" if e.project else "")
    where += "" if e.scope == "global" else f" {e.scope}"
    old = f" (superseded by {e.superseded_by})" if e.superseded_by else ""
    flag = " (flagged: kept out of search until fixed)" if e.flagged else ""
    return f"[{where}] {e.text}{old}{flag}"


def _by_id(memory: Any, args: argparse.Namespace) -> int:
    """get / history (exit 1 when this session sees no entry with the id), update / delete
    (exit 1 when not applied: not_found, gone, superseded, ...)."""
    if args.command == "update":
        return _write(memory.update(args.id, args.text, category=args.category), as_json=args.json)
    if args.command == "delete":
        return _write(memory.delete(args.id), as_json=args.json)
    if args.command == "get":
        entry = memory.get(args.id)
        rows = [] if entry is None else [entry]
    else:
        rows = memory.history(args.id)
    if args.json:
        shown = _entries_json(rows)
        _print_json((shown[0] if shown else None) if args.command == "get" else shown)
    else:
        for e in rows:  # ID@N: the memory's stable id and this version's number (ADR 0074)
            print(f"{e.id}@{e.version}  {_entry_line(e)}")
    if not rows:
        print("pi-hermes-memory: no visible entry has this id", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _tools(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.tools.schemas import render_all

    rendered = render_all(memory.tool_definitions(), args.format, strict=args.strict)
    print(json.dumps(rendered, ensure_ascii=False, indent=2))
    return EXIT_OK


def _write(outcome: Any, *, as_json: bool) -> int:
    if as_json:  # the shape the memory tool returns (`tool memory`)
        from pi_hermes_memory.tools.registry import write_result_json

        _print_json(write_result_json(outcome))
    else:
        print(outcome.message)
        if outcome.success and outcome.entry_id is not None:
            print(f"id: {outcome.entry_id}")  # what get, update, delete and history take
        for c in outcome.candidates:
            print(f"  similar ({c.basis} {c.score:.2f}): {c.text}")
        for warning in outcome.warnings:
            print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)
    return EXIT_OK if outcome.success else EXIT_FAILED


def _restore(memory: Any, args: argparse.Namespace) -> int:
    if args.text_or_id is None:
        removed = memory.removed(args.target)
        if args.json:
            _print_json(_entries_json(removed))
        else:
            for e in removed:
                print(f"{e.id}  {e.text}")
            if not removed:
                print(f"(no removed {args.target} entries)")
        return EXIT_OK
    outcome = memory.restore(args.text_or_id, target=args.target)
    if not args.json:
        for c in outcome.candidates if outcome.status == Status.AMBIGUOUS else ():
            print(f"  {c.entry_id}  {c.text}")
        outcome = attrs.evolve(outcome, candidates=())
    return _write(outcome, as_json=args.json)


def _purge(memory: Any, args: argparse.Namespace) -> int:
    """Without --yes a dry run: exit 1 after saying what would be purged (nothing changed)."""
    if not args.text_or_id.strip():
        print("pi-hermes-memory: purge needs an id or a part of the text", file=sys.stderr)
        return EXIT_USAGE
    outcome = memory.purge(args.text_or_id, target=args.target, dry_run=not args.yes)
    if args.json:
        _print_json(outcome.to_json())
    else:
        print(outcome.message)
        if outcome.success and outcome.entry_id is not None:
            print(f"id: {outcome.entry_id}")  # what get, update, delete and history take
        for c in outcome.candidates:
            print(f"  {c.entry_id}  {c.text}")
        if outcome.status == "preview":
            print("Run again with --yes to purge; this cannot be undone.")
        for leftover in outcome.leftovers:
            print(
                f"pi-hermes-memory: warning: may still hold the text: {leftover}", file=sys.stderr
            )
        for warning in outcome.warnings:
            print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)
    return EXIT_OK if outcome.status == "purged" else EXIT_FAILED


def _switch_project(overview: Any, *, as_json: bool) -> int:
    if as_json:
        _print_json(overview)
        return EXIT_OK
    print(f"Current project: {overview.current or '(none)'} (set by projectName, --project or cwd)")
    for p in overview.projects:
        mark = "*" if p.project == overview.current else " "
        print(f" {mark} {p.project}: {p.project_entries} project entries, {p.failures} failures")
    print(
        f"Unattributed: {overview.unattributed_project_entries} project entries, "
        f"{overview.unattributed_failures} failures (global)"
    )
    return EXIT_OK


def _insights(insights: Any, *, as_json: bool) -> int:
    if as_json:
        _print_json(insights)
        return EXIT_OK
    sharing = " (projectMemorySharing on)" if insights.sharing else ""
    print(f"Project: {insights.project or '(none)'}{sharing}")
    for t in insights.targets:
        print(
            f"  {t.target}: {t.active} active, {t.superseded} superseded, "
            f"{t.chars_used}/{t.char_limit} characters ({t.limit_setting})"
        )
        for text in t.latest:
            print(f"    - {text if len(text) <= 100 else text[:99] + '…'}")
    return EXIT_OK


def _configure_logging() -> None:
    from pi_hermes_memory.adapters.cli.log_lines import configure_logging

    configure_logging()


class _Watched:
    """A stream that remembers whether anything was written (stdout) and the last error line
    (stderr), delegating everything else; installed only for `--json` commands."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.written = False
        self.last_error: str | None = None

    def write(self, text: str) -> int:
        if text:
            self.written = True
            for line in text.splitlines():
                message = _error_message(line)
                if message is not None:
                    self.last_error = message
        return int(self._stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _error_message(line: str) -> str | None:
    """The message of an error line (`pi-hermes-memory: …`, argparse's `…: error: …`), not a
    warning's."""
    if line.startswith("pi-hermes-memory: warning:"):
        return None
    if ": error: " in line and line.startswith("pi-hermes-memory"):
        return line.split(": error: ", 1)[1]
    if line.startswith("pi-hermes-memory: "):
        return line.removeprefix("pi-hermes-memory: ")
    return None


def _wants_json(argv: Sequence[str]) -> bool:
    """`--json` among the options (not after `--`, where it would be a text argument)."""
    head = list(argv)[: list(argv).index("--")] if "--" in argv else list(argv)
    return "--json" in head


#: commands that read or write one entry or one query's hits (a hook's or an agent's call):
#: the cyclic garbage collector stays off while they run, not only while the store opens. What
#: they import (the write side) and build is not cyclic garbage, and their work is bounded;
#: its passes cost an add ~13 ms CPU of ~31 collections (ADR 0111). `main` turns it on again.
_COLLECTOR_OFF = frozenset({"search", "add", "get", "update", "delete"})


def main(argv: Sequence[str] | None = None) -> int:
    """The console script. Ctrl-C ends it quietly with 130 (128 + SIGINT), as shells expect.

    With `--json`, stdout always holds JSON: a command that failed before printing its own
    result (a usage error, a store that cannot be opened, a missing file) prints
    `{"success": false, "status": …, "message": …}` with the error it wrote to stderr."""
    if _command_of(sys.argv[1:] if argv is None else argv) in _COLLECTOR_OFF:
        gc.disable()  # from the parse on (the command's parser, its module)
    try:
        return _main_with_output(argv)
    finally:
        gc.enable()  # as `_main` leaves it for every other command (ADR 0080)


def _main_with_output(argv: Sequence[str] | None) -> int:
    if not _wants_json(sys.argv[1:] if argv is None else argv):
        return _guarded(argv)
    out, err = _Watched(sys.stdout), _Watched(sys.stderr)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = _guarded(argv)
    finally:
        sys.stdout, sys.stderr = saved
    if code not in (EXIT_OK, EXIT_BROKEN_PIPE) and not out.written:
        status = Status.INVALID_ARGUMENTS if code == EXIT_USAGE else Status.FAILED
        if code == EXIT_INTERRUPTED:
            status = Status.ERROR
        _print_json(
            {
                "success": False,
                "status": status.value,
                "message": err.last_error or f"failed (exit status {code})",
            }
        )
    return code


def _guarded(argv: Sequence[str] | None) -> int:
    # `logging` loads with the first event (ADR 0110) the CLI shows: a warning or worse
    before_first_event(_configure_logging, shows_debug_or_info=False)
    try:
        return _main(argv)
    except SystemExit as exc:  # argparse: --help, --version (0) and usage errors (2)
        if exc.code is None:
            return EXIT_OK
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        print("pi-hermes-memory: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`... | head`): not an error of ours; point stdout at devnull
        # so the interpreter's final flush does not complain again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser(_command_of(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if args.command is None:  # no command: the help, which is not a usage error
        parser.print_help()
        return EXIT_OK
    arguments: Any = None
    if args.command == "tool":
        raw = sys.stdin.read() if args.arguments == "-" else args.arguments
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as exc:
            print(f"pi-hermes-memory: arguments are not valid JSON: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except RecursionError:
            print("pi-hermes-memory: arguments are nested too deeply", file=sys.stderr)
            return EXIT_USAGE

    request: str | None = None
    if args.command == "session-search":
        if (args.query is None) == (args.request is None):
            print(
                "pi-hermes-memory: session-search takes a QUERY (legacy) or --request "
                "(anchors), not both or neither",
                file=sys.stderr,
            )
            return EXIT_USAGE
        request = sys.stdin.read() if args.request == "-" else args.request

    if args.command == "search" and args.category and args.target not in (None, "failure"):
        print("pi-hermes-memory: --category applies only to --target failure", file=sys.stderr)
        return EXIT_USAGE

    if args.command == "recover":
        return _recover(as_json=args.json)

    extra = _extra_of(args.command)
    if extra is not None:  # commands that must not open the store (the read-only doctor)
        unopened = getattr(extra, "unopened", None)
        if args.command in getattr(extra, "NO_STORE", ()) or (unopened and unopened(args)):
            return int(extra.run_unopened(args))

    # Opening imports a few hundred modules and builds their classes: none of that is cyclic
    # garbage, so the collector's passes over it are wasted (~5 % of a one-shot command, issue
    # 29, ADR 0080). It is on again before the command runs, except for the one-entry commands
    # (ADR 0111): their work is bounded, so `main` turns it on again when they return.
    gc.disable()
    try:
        import pi_hermes_memory
        from pi_hermes_memory.errors import ConfigError, HermesMemoryError

        try:
            memory = pi_hermes_memory.open(
                project=_listed_project(args) or args.project, cwd=args.cwd, agent_id=args.agent
            )
        except (HermesMemoryError, OSError, RuntimeError, ValueError) as exc:
            print(f"pi-hermes-memory: cannot open the memory store: {exc}", file=sys.stderr)
            return EXIT_USAGE if isinstance(exc, ConfigError) else EXIT_FAILED
    finally:
        if args.command not in _COLLECTOR_OFF:
            gc.enable()
    from pi_hermes_memory.errors import UnusableInput

    with memory:
        writes = (
            args.command in _WRITES
            or (extra is not None and args.command in extra.WRITES)
            or (args.command == "tool" and isinstance(arguments, dict) and args.name == "memory")
        )
        shown = 1 if memory.read_only and writes else 0
        _print_warnings(memory.warnings[shown:])
        shown = max(shown, len(memory.warnings))
        try:
            return _run(memory, args, arguments, request)
        except BrokenPipeError:
            raise  # the reader went away: `main` ends quietly
        except UnusableInput as exc:  # a file or argument it was given: a usage error
            print(f"pi-hermes-memory: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except (HermesMemoryError, OSError) as exc:  # one line, never a traceback
            print(f"pi-hermes-memory: {exc}", file=sys.stderr)
            return EXIT_FAILED
        except Exception as exc:
            if type(exc).__module__ != "apsw":  # e.g. the session index's own connection
                raise
            print(
                f"pi-hermes-memory: the database failed ({type(exc).__name__}: {exc}); if "
                "it is damaged, run `pi-hermes-memory recover`",
                file=sys.stderr,
            )
            return EXIT_FAILED
        finally:  # warnings of documents first read by the command itself (lazy open)
            _print_warnings(memory.warnings[shown:])


def _print_warnings(warnings: Sequence[str]) -> None:
    """The store's warnings on stderr, each once: one the log handler already printed (the
    event log's, said while the store opened) is not repeated."""
    log_lines = sys.modules.get("pi_hermes_memory.adapters.cli.log_lines")  # loaded by a log event
    for warning in warnings:
        if log_lines is None or not log_lines.printed(warning):
            print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)


def _run(memory: Any, args: argparse.Namespace, arguments: Any, request: str | None) -> int:
    """Run the parsed command on an open store."""
    extra = _extra_of(args.command)
    if extra is not None:
        return int(extra.run(memory, args))
    if args.command == "tool":
        result = memory.call_tool(args.name, arguments)
        _print_json(result)
        return EXIT_OK if result.get("success") else EXIT_FAILED
    if args.command == "sync-markdown":
        return _sync_markdown(memory, as_json=args.json)
    if args.command == "search":
        return _search(memory, args)
    if args.command == "reembed":
        return _reembed(memory, args)
    if args.command == "index-sessions":
        return _index_sessions(memory, args)
    if args.command == "session-search":
        return _session_search(memory, args, request)
    if args.command == "add":
        outcome = memory.add(
            sys.stdin.read().strip() if args.text == "-" else args.text,
            target=args.target,
            category=args.category,
            force=args.force,
            scope=args.scope,
        )
        return _write(outcome, as_json=args.json)
    if args.command == "restore":
        return _restore(memory, args)
    if args.command == "purge":
        return _purge(memory, args)
    if args.command in ("promote", "demote"):
        move = memory.promote if args.command == "promote" else memory.demote
        return _write(move(args.old_text, force=args.force), as_json=args.json)
    if args.command in ("get", "history", "update", "delete"):
        return _by_id(memory, args)
    if args.command == "tools":
        return _tools(memory, args)
    if args.command == "switch-project":
        return _switch_project(memory.project_overview(), as_json=args.json)
    if args.command == "insights":
        return _insights(memory.insights(), as_json=args.json)
    entries = memory.entries(args.target, include_history=args.history)
    if args.scope is not None:  # the scope names of stats, export and delete-bulk
        entries = [e for e in entries if _scope_of(e) == args.scope]
    if args.of_project is not None:
        entries = [e for e in entries if e.project == args.of_project]
    if args.category is not None:
        entries = [e for e in entries if args.category in (e.category, e.kind)]
    end = None if args.limit is None else args.offset + args.limit
    entries = entries[args.offset : end]
    if args.json:
        _print_json(_entries_json(entries))
    else:
        for e in entries:
            print(f"{e.id}  {_entry_line(e)}")
        unseen = _unseen_project(memory, args)
        if not entries and unseen is not None:
            print(
                f"(no entries: this session's project is {memory.project or '(none)'}, and a "
                f"session sees only its own project's entries; run with --project {unseen})"
            )
        elif not entries:
            print("(no entries)")
    return EXIT_OK


def _listed_project(args: argparse.Namespace) -> str | None:
    """The project `list --of-project P` / `--scope project:P` asks about, when --project does
    not name one: the session opens as that project, since a session sees only its own
    project's entries (from another directory the listing would otherwise be empty)."""
    if args.command != "list" or args.project is not None:
        return None
    if args.of_project is not None:
        return str(args.of_project)
    if args.scope is not None and str(args.scope).startswith("project:"):
        return str(args.scope).removeprefix("project:")
    return None


def _unseen_project(memory: Any, args: argparse.Namespace) -> str | None:
    """The project a `list` filter names that this session (another --project) cannot see."""
    wanted = args.of_project
    if wanted is None and args.scope is not None and str(args.scope).startswith("project:"):
        wanted = str(args.scope).removeprefix("project:")
    return wanted if wanted is not None and wanted != memory.project else None


def _scope_of(view: Any) -> str:
    """A row's scope as `porting.entry_scope` names it: its namespace, else
    `project:<name>` for a project-attributed row, else global."""
    if view.scope == "global" and view.project is not None:
        return f"project:{view.project}"
    return str(view.scope)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
