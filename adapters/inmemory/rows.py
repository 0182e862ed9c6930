"""The read port `MemoryRows` over an `InMemoryStorage` (ADR 0057)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date

from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.ports.read_model import MemoryRow, RowChanges
from pi_hermes_memory.ports.vectors import VectorScope

__all__ = ["InMemoryRows"]


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _day(value: object) -> date | None:
    return value if isinstance(value, date) else None


def _row(entry_id: str, row: Mapping[str, object]) -> MemoryRow:
    return MemoryRow(
        id=entry_id,
        target=Target(str(row["target"])),
        text=str(row["text"]),
        project=_str(row.get("project")),
        category=_str(row.get("category")),
        namespace=_str(row.get("namespace")),
        superseded_by=_str(row.get("superseded_by")),
        created=_day(row.get("created")),
        last_referenced=_day(row.get("last_referenced")),
        superseded_at=_day(row.get("superseded_at")),
    )


class InMemoryRows:
    def __init__(self, storage: InMemoryStorage) -> None:
        self._storage = storage

    def in_scope(self, scope: VectorScope) -> list[MemoryRow]:
        found = [
            _row(i, r)
            for i, r in list(self._storage.rows.items())
            if r.get("flagged") is None
            and scope.admits(
                Target(str(r["target"])),
                _str(r.get("project")),
                _str(r.get("category")),
                _str(r.get("superseded_by")),
                _str(r.get("namespace")),
            )
        ]
        found.sort(key=lambda row: row.id, reverse=True)
        return found

    def by_id(self, ids: Iterable[str]) -> dict[str, MemoryRow]:
        table = self._storage.rows
        found: dict[str, MemoryRow] = {}
        for entry_id in ids:
            row = table.get(entry_id)
            if row is not None and row.get("flagged") is None:
                found[entry_id] = _row(entry_id, row)
        return found

    def cursor(self) -> int:
        return self._storage.position

    def changed_since(self, cursor: int) -> RowChanges:
        position = self._storage.position
        return RowChanges(cursor=position, ids=self._storage.changes_after(cursor))
