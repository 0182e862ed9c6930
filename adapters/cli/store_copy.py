"""`pi-hermes-memory migrate --to postgres` (issue 16, ADR 0050): copy the local SQLite store
of this agent root into the PostgreSQL store, without opening either as a `Memory` (opening
the shared store first would import this host's files as hand edits)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def migrate_to_postgres(args: argparse.Namespace) -> int:
    from pi_hermes_memory.adapters.files.config_file import load_config
    from pi_hermes_memory.errors import HermesMemoryError

    config, _ = load_config(
        environ=dict(os.environ), cwd=Path(args.cwd or os.getcwd()), project_override=None
    )
    if config.location_unknown is not None:  # the local store's place is in doubt (ADR 0065)
        return _fail(f"nothing was copied: {config.location_unknown}", EXIT_FAILED)
    name = args.dsn_env or config.storage.dsn_env
    if not name:
        return _fail("--to postgres needs --dsn-env NAME (or storage.dsnEnv in the config)")
    dsn = os.environ.get(name, "").strip()
    if not dsn:
        return _fail(f"the environment variable {name} (the PostgreSQL DSN) is not set or empty")
    if not config.db_path.exists():
        return _fail(f"there is no local store to copy: {config.db_path} does not exist", 1)
    try:
        from pi_hermes_memory.adapters.postgres.copy import copy_store
        from pi_hermes_memory.adapters.postgres.storage import PgStorage
    except ImportError:
        return _fail("psycopg is not installed: pip install 'pi-hermes-memory[postgres]'")
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

    try:
        source = SqliteStorage(config.db_path)
        try:
            target = PgStorage(dsn)
            try:
                report = copy_store(source, target)
            finally:
                target.close()
        finally:
            source.close()
    except (HermesMemoryError, OSError) as exc:
        return _fail(str(exc), EXIT_FAILED)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        print()
    else:
        print(
            f"Copied {report.events} events of {report.copied_streams} streams to "
            f"{target.where} ({report.already_there} events were already there; "
            f"{report.ledger_rows} Markdown render records)."
        )
        for stream in report.refused:
            print(
                f"  refused {stream}: PostgreSQL holds a different history of it (another "
                "host's, or this host's Markdown files imported by an open before this copy); "
                "nothing of it was copied",
                file=sys.stderr,
            )
        if report.refused:
            print(_MERGE_STEPS.format(source=config.db_path), file=sys.stderr)
    return EXIT_FAILED if report.refused else EXIT_OK


#: what becomes of this host's entries of a refused stream (a team store already in use)
_MERGE_STEPS = (
    "This host's entries of those documents are not lost: the first command on the shared "
    "store (e.g. `pi-hermes-memory list`) merges this host's Markdown files into it as "
    "additions (same text, new ids); their removed and superseded versions stay in {source}, "
    "which is left as it is."
)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"pi-hermes-memory: {message}", file=sys.stderr)
    return code
