"""`migrate --to postgres`: copy a local SQLite store into a PostgreSQL one through the
journal (issue 16, ADR 0050).

Every stream's events are appended as they are (same ids, versions and times) and projected,
so the PostgreSQL read models are the SQLite ones. Idempotent: a stream PostgreSQL already
holds in full is skipped, one it holds a prefix of (an interrupted copy) gets the rest, and
one whose history differs is refused (nothing of it is copied). The render ledger of the
local Markdown files is copied too, and an empty PostgreSQL store adopts the local store's
id, so the files this host rendered are not taken for hand edits once it switches over.
"""

from __future__ import annotations

from typing import Any

import attrs
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.journal.codec import encode


@attrs.frozen(kw_only=True)
class CopyReport:
    streams: int
    copied_streams: int
    events: int
    already_there: int
    refused: tuple[str, ...]
    ledger_rows: int
    store_id_adopted: bool

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def copy_store(source: SqliteStorage, target: PgStorage) -> CopyReport:
    with source.snapshot() as local:
        streams = list(local.journal.streams(""))
        histories = {s: list(local.journal.read(s)) for s in streams}
        store_id = local.ledger.store_id()
    ledger: list[tuple[str, str, int, str]] = [
        (str(stream), str(replica), int(version), str(sha256))
        for stream, replica, version, sha256 in source.connection.execute(
            "SELECT stream, replica, version, sha256 FROM markdown_replicas WHERE replica != ''"
        )
    ]
    copied = events = already = 0
    refused: list[str] = []
    adopted = False
    with target.transaction() as uow:
        if not uow.journal.streams(""):  # an empty shared store takes this store's identity
            uow.ledger.adopt_store_id(store_id)
            adopted = True
    for stream, history in histories.items():
        with target.transaction() as uow:
            there = uow.journal.read(stream)
            common = min(len(there), len(history))  # one must be a prefix of the other
            if [encode(e) for e in there[:common]] != [encode(e) for e in history[:common]]:
                refused.append(stream)
                continue
            rest = history[len(there) :]
            already += common
            if not rest:
                continue
            uow.journal.append(stream, len(there), rest)
            uow.projection.apply(rest)
            copied += 1
            events += len(rest)
    with target.transaction() as uow:
        for stream, replica, version, sha256 in ledger:
            if stream not in refused:
                uow.ledger.record(stream, replica, version, sha256)
    if events:
        target.analyze()
    return CopyReport(
        streams=len(histories),
        copied_streams=copied,
        events=events,
        already_there=already,
        refused=tuple(refused),
        ledger_rows=sum(1 for row in ledger if row[0] not in refused),
        store_id_adopted=adopted,
    )
