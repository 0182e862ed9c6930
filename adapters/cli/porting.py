"""CLI commands for the whole store (registered by `pi_hermes_memory.adapters.cli.app`, ADR 0046).

stats         counts per target, scope and project; superseded; characters vs limits; vectors
delete-bulk   remove the active entries of one or more scopes (--before DATE, --dry-run)
export        every entry with its supersede history as JSON Lines (header line first)
import        an export file, idempotent by id (--dry-run, --scope)
migrate       a second-seed export ({"memories": [...]}) or LanceDB directory (its dbPath,
              ADR 0075) into this store; with --to postgres: copy the local SQLite store
              into the PostgreSQL one (ADR 0050)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind

COMMANDS: frozenset[str] = frozenset({"stats", "delete-bulk", "export", "import", "migrate"})
WRITES: frozenset[str] = frozenset({"delete-bulk", "import", "migrate"})
#: `migrate --to postgres` runs without opening the store (see `unopened`)
NO_STORE: frozenset[str] = frozenset()

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_TARGETS = ["user", "memory", "project", "failure"]
#: `--category` of list and export: a failure category or the second seed's (ADR 0045);
#: "preference" is both and matches either
CATEGORIES: list[str] = list(
    dict.fromkeys([*(c.value for c in FailureCategory), *(k.value for k in MemoryKind)])
)
_SCOPE_HELP = "global, agent:<id>, custom:<name>, user:<id> or project:<name>"


def scope_name(value: str) -> str:
    """An argparse type: a scope as `stats` names them (global, agent:<id>, custom:<name>,
    user:<id>, project:<name>); anything else is a usage error (exit 2), so a typo in the
    form of a scope never selects nothing silently."""
    from pi_hermes_memory.domain.memory.model import (
        GLOBAL_NAMESPACE,
        Target,
        is_safe_project_name,
        namespace_problem,
    )

    kind, colon, name = value.partition(":")
    if value == GLOBAL_NAMESPACE:
        return value
    if kind == "project" and colon and is_safe_project_name(name):
        return value
    target = Target.USER if kind == "user" else Target.MEMORY
    if colon and namespace_problem(value, target) is None:
        return value
    raise argparse.ArgumentTypeError(f"expected {_SCOPE_HELP}, got {shown(value, 60)}")


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
    bulk.add_argument("--scope", nargs="+", required=True, type=scope_name, help=_SCOPE_HELP)
    bulk.add_argument("--before", type=_date, help="only entries created before this date")
    bulk.add_argument("--dry-run", action="store_true", help="only show what would be removed")
    export = sub.add_parser(
        "export",
        parents=[common],
        help="every entry and its supersede history as JSON Lines (the whole store)",
    )
    export.add_argument("--scope", nargs="+", default=(), type=scope_name, help=_SCOPE_HELP)
    export.add_argument("--target", choices=_TARGETS)
    export.add_argument(
        "--category",
        choices=CATEGORIES,
        help="only entries of this category: a failure category, or an imported "
        "pi-memory entry's (preference, fact, decision, entity, other)",
    )
    export.add_argument("--output", "-o", help="write to this file (default: stdout)")
    imp = sub.add_parser(
        "import", parents=[common], help="import an export file (idempotent by id)"
    )
    imp.add_argument("file", help="an export file (JSON Lines), or - for stdin")
    imp.add_argument(
        "--scope",
        nargs="+",
        default=(),
        type=scope_name,
        help="only entries of these scopes (a pi-memory JSON export: import into this scope)",
    )
    imp.add_argument("--dry-run", action="store_true", help="only show what would be imported")
    mig = sub.add_parser(
        "migrate",
        parents=[common],
        help="import pi-memory / memory-lancedb-pro data: its LanceDB directory (dbPath) or "
        'its JSON export ({"memories": [...]})',
    )
    mig.add_argument(
        "file",
        nargs="?",
        help="the LanceDB directory (the plugin's dbPath, needs the [lancedb] extra), "
        "the JSON export file, or - for stdin",
    )
    mig.add_argument(
        "--source-model",
        help="the embedding model that wrote the LanceDB vectors (default: embedding.model "
        "of the openclaw.json, PI_MEMORY_CONFIG or ~/.openclaw/openclaw.json); the vectors "
        "are reused when it and the dimension match the configured model, else re-embedded",
    )
    mig.add_argument(
        "--to",
        choices=["postgres"],
        help="instead: copy the local SQLite store (sessions.db) into the PostgreSQL store "
        "(idempotent; the Markdown files are left as they are)",
    )
    mig.add_argument(
        "--dsn-env",
        help="with --to postgres: the environment variable holding the DSN "
        "(default: storage.dsnEnv of the configuration)",
    )
    mig.add_argument(
        "--scope",
        help="import every memory into this scope (global, agent:<id>, custom:<name>,"
        " user:<id>, project:<name>) instead of its own",
    )
    mig.add_argument("--dry-run", action="store_true", help="only show what would be imported")


def unopened(args: argparse.Namespace) -> bool:
    """Whether `args` is a command that must run before (without) opening the store."""
    return args.command == "migrate" and getattr(args, "to", None) is not None


def run_unopened(args: argparse.Namespace) -> int:
    from pi_hermes_memory.adapters.cli.store_copy import migrate_to_postgres

    return migrate_to_postgres(args)


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    from pi_hermes_memory.errors import UnusableInput
    from pi_hermes_memory.memory import porting

    if args.command == "stats":
        return _stats(porting.stats(memory), as_json=args.json)
    if args.command == "delete-bulk":
        return _delete_bulk(memory, args)
    if args.command == "export":
        return _export(memory, args)
    if args.command == "import":
        with _reading(args.file) as handle:
            first, rest = _first_line(handle)
            seed = _seed_document(first, rest)
            if seed is None:
                read = porting.read_export(itertools.chain([first], rest))
        if seed is not None:  # a second-seed export: imported as `migrate` does
            if len(args.scope) > 1:
                raise UnusableInput(
                    "a pi-memory export (memories: [...]) is imported into one --scope;"
                    " nothing was imported"
                )
            return _migrate(memory, seed, args, into=args.scope[0] if args.scope else None)
        with _embedding_progress("import") as progress:
            report = porting.import_entries(
                memory,
                read.rows,
                scopes=args.scope,
                dry_run=args.dry_run,
                removed=read.removed,
                progress=progress,
            )
        return _report(report, {}, as_json=args.json)
    if args.file is None:  # a usage error, as argparse's own (FILE is optional for --to)
        print("pi-hermes-memory: migrate takes an export FILE (or --to postgres)", file=sys.stderr)
        return EXIT_USAGE
    from pathlib import Path

    from pi_hermes_memory.adapters.files.lancedb_table import is_lancedb_dir

    if args.file != "-" and Path(args.file).is_dir():
        if not is_lancedb_dir(Path(args.file)):
            raise UnusableInput(
                f"{args.file}: a folder without a LanceDB table memories.lance (give the "
                "plugin's dbPath, or a JSON export file); nothing was imported"
            )
        return _migrate_lancedb(memory, Path(args.file), args)
    with _reading(args.file) as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as e:
            raise UnusableInput(
                f"{args.file} is not JSON (line {e.lineno} column {e.colno}: {e.msg}); "
                "nothing was imported"
            ) from None
    return _migrate(memory, data, args, into=args.scope)


def _migrate(memory: Any, data: Any, args: argparse.Namespace, *, into: str | None) -> int:
    from pi_hermes_memory.adapters.system import UlidFactory
    from pi_hermes_memory.errors import InvalidArgument, UnusableInput
    from pi_hermes_memory.memory import porting

    with _embedding_progress("migrate") as progress:
        try:
            report, mapping = porting.migrate_seed(
                memory,
                data,
                new_id=UlidFactory().new_id,
                dry_run=args.dry_run,
                into_scope=into,
                progress=progress,
            )
        except InvalidArgument as exc:  # a malformed record or --scope, before any write
            raise UnusableInput(str(exc)) from None
    return _report(report, mapping, as_json=args.json)


def _source_model(args: argparse.Namespace) -> tuple[str | None, str]:
    """The model of the table's vectors and where it was read (--source-model, else the
    openclaw.json's embedding.model)."""
    import os
    from pathlib import Path

    from pi_hermes_memory.adapters.server.config import (
        CONFIG_ENV,
        default_config_path,
        read_plugin_config,
    )

    if args.source_model:
        return args.source_model, "--source-model"
    named = os.environ.get(CONFIG_ENV, "").strip()
    path = Path(named) if named else default_config_path(os.environ)
    if path is None or not path.is_file():
        return None, ""
    try:
        config, _ = read_plugin_config(path)
    except Exception:  # a broken file is `serve`'s error to report; here it only names no model
        return None, ""
    embedding = config.get("embedding")
    model = embedding.get("model") if isinstance(embedding, dict) else None
    if isinstance(model, str) and model.strip():
        return model.strip(), f"embedding.model of {path}"
    return None, ""


def _migrate_lancedb(memory: Any, path: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.adapters.files.lancedb_table import read_seed_table
    from pi_hermes_memory.memory.seed_table import migrate_table

    table = read_seed_table(path)
    model, where = _source_model(args)
    with _embedding_progress("migrate") as progress:
        report, mapping = migrate_table(
            memory,
            table.records,
            table.vectors,
            dimension=table.dimension,
            source_model=model,
            source_where=where,
            dry_run=args.dry_run,
            into_scope=args.scope,
            progress=progress,
        )
    return _report(report, mapping, as_json=args.json)


@contextlib.contextmanager
def _embedding_progress(label: str) -> Iterator[Callable[[Any], None]]:
    """The progress of embedding the imported entries (the long part of a large import) on
    stderr: a bar on a terminal, else a line a second."""
    from pi_hermes_memory.adapters.cli.progress import Progress, reembed_detail

    bar = Progress(f"{label}: embedding", "entries")
    try:
        yield lambda p: bar.update(p.done, p.total, reembed_detail(p))
    finally:
        bar.close()


def _first_line(handle: Any) -> tuple[str, Any]:
    """The first non-blank line of `handle` ("" when none) and the iterator of the rest."""
    lines = iter(handle)
    for line in lines:
        if line.strip():
            return line, lines
    return "", lines


def _seed_document(first: str, rest: Any) -> Any:
    """The parsed second-seed export when the file is one (a JSON document whose first line
    is not this library's export header), else None (the lines are left to `read_export`,
    whose errors name the line)."""
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        header = None
    if isinstance(header, dict) and "format" in header:
        return None  # this library's JSON Lines export
    if isinstance(header, dict) and "memories" not in header:
        return None
    text = first + "".join(rest)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if isinstance(data, list) or (isinstance(data, dict) and "memories" in data):
        return data
    return None


@contextlib.contextmanager
def _reading(path: str) -> Iterator[Any]:
    """The export file (`-`: stdin) as text lines. A file that cannot be read (missing, a
    folder, not UTF-8) or whose content is not an export (a malformed line: the parser's
    InvalidArgument, raised before anything is written) is a usage error (exit 2, ADR 0120)."""
    from pi_hermes_memory.adapters.files.input_files import cannot_read
    from pi_hermes_memory.errors import InvalidArgument, UnusableInput

    name = "stdin" if path == "-" else path
    try:
        if path == "-":
            yield sys.stdin
        else:
            with open(path, encoding="utf-8") as handle:
                yield handle
    except (OSError, UnicodeDecodeError) as exc:
        raise cannot_read(name, exc) from None
    except InvalidArgument as exc:
        raise UnusableInput(f"{name}: {exc}") from None


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
    from pi_hermes_memory.memory import porting

    rows = porting.bulk_candidates(memory, args.scope, before=args.before)
    hidden = porting.bulk_hidden(memory, args.scope, before=args.before)
    removed: list[str] = []
    failed: list[dict[str, str]] = []
    if not args.dry_run:
        for e, outcome in porting.remove_rows(memory, rows):
            if outcome.success:
                removed.append(e.stable_id)
            else:
                failed.append({"id": e.stable_id, "message": outcome.message})
    if args.json:  # ids: the memory's stable id, as list, get and restore name it (ADR 0074)
        data = {
            "dry_run": args.dry_run,
            "matched": [
                {"id": e.stable_id, "version_id": e.id, "target": e.target.value, "text": e.text}
                for e in rows
            ],
            "removed": removed,
            "failed": failed,
            "not_visible": hidden,
        }
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        for e in rows:
            print(f"{e.stable_id}  [{e.target.value} {porting.entry_scope(e)}] {e.text}")
        if args.dry_run:
            print(f"Would remove {len(rows)} entries (dry run: nothing changed).")
        else:
            print(f"Removed {len(removed)} of {len(rows)} entries (restore brings one back).")
        for f in failed:
            print(f"pi-hermes-memory: {f['id']}: {f['message']}", file=sys.stderr)
    for scope, count in hidden.items():
        how = (
            "--project NAME" if scope.startswith("project:") else "--agent ID (scopes.agentAccess)"
        )
        print(
            f"pi-hermes-memory: note: {count} entries of {scope} are not visible to this session "
            f"and are not selected; run with the {how} that may see them",
            file=sys.stderr,
        )
    return EXIT_FAILED if failed else EXIT_OK


def _export(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.domain.memory.model import Target
    from pi_hermes_memory.memory import porting

    targets = [Target(args.target)] if args.target else None
    lines = porting.export_lines(memory, targets=targets, scopes=args.scope, category=args.category)
    count = -1  # the header is not an entry
    if args.output:
        temp = f"{args.output}.partial"
        with _writing(args.output, temp) as out:
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


def _writing(path: str, temp: str) -> Any:
    """`temp` (beside `path`) open for writing; a path that cannot be written (its folder
    missing, a folder itself, no permission) is a usage error, said in plain words."""
    import os

    from pi_hermes_memory.adapters.files.input_files import why
    from pi_hermes_memory.errors import UnusableInput

    if os.path.isdir(path):
        raise UnusableInput(f"cannot write {path}: it is a folder, not a file")
    try:
        return open(temp, "w", encoding="utf-8")
    except OSError as exc:
        reason = "its folder does not exist" if isinstance(exc, FileNotFoundError) else why(exc)
        raise UnusableInput(f"cannot write {path}: {reason}") from None


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
