"""The `MemoryRows` read port contract suite (see `pi_hermes_memory.testing`, ADR 0057)."""

from __future__ import annotations

from datetime import date
from typing import Any

from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.events import MemoryRemoved, RemovalReason
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.ports.read_model import MemoryRow
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.memory_search import ScopeClause
from pi_hermes_memory.testing.contracts import AT, DAY, EVERYTHING, EventWriter

__all__ = ["MemoryRowsContract"]

ALL = VectorScope(clauses=EVERYTHING)


class MemoryRowsContract:
    """Semantics of a `MemoryRows` adapter. Provide a ``storage`` fixture (a fresh, empty
    Storage) and a ``rows`` fixture: the read port over that storage's rows."""

    def test_rows_in_scope_newest_first(self, storage: Any, rows: Any) -> None:
        writer = EventWriter(storage)
        a = writer.add("alpha")
        b = writer.add("web deploys", Target.PROJECT, project="web")
        c = writer.add("gamma")
        assert [r.id for r in rows.in_scope(ALL)] == [c, b, a]
        web = VectorScope(clauses=(ScopeClause(Target.PROJECT, ("web",)),))
        assert rows.in_scope(web) == [
            MemoryRow(
                id=b,
                target=Target.PROJECT,
                text="web deploys",
                project="web",
                created=DAY,
                last_referenced=DAY,
            )
        ]
        assert rows.in_scope(VectorScope(clauses=())) == []

    def test_rows_by_id(self, storage: Any, rows: Any) -> None:
        writer = EventWriter(storage)
        old = writer.add("The CI runs on Jenkins")
        new = writer.replace(old, "The CI runs on Buildkite")
        found = rows.by_id([new, "nope", old])
        assert list(found) == [new, old]
        assert found[old].superseded_by == new and found[new].text == "The CI runs on Buildkite"
        assert found[old].superseded_at == date(2026, 8, 2) and found[new].superseded_at is None
        assert found[new].last_referenced == date(2026, 8, 2) and found[old].created == DAY
        assert [r.id for r in rows.in_scope(ALL)] == [new]

    def test_changed_since_names_the_rows_written_after_the_cursor(
        self, storage: Any, rows: Any
    ) -> None:
        writer = EventWriter(storage)
        a = writer.add("alpha")
        cursor = rows.cursor()
        assert rows.changed_since(cursor).ids == frozenset()
        b = writer.add("beta")
        changes = rows.changed_since(cursor)
        assert changes.ids == {b} and a not in changes.ids
        assert rows.changed_since(changes.cursor).ids == frozenset()
        with storage.transaction() as uow:
            stream = stream_for(Target.MEMORY)
            version = uow.journal.version(stream)
            removed = MemoryRemoved(
                stream=stream, version=version + 1, at=AT, entry_id=a, reason=RemovalReason.TOOL
            )
            uow.journal.append(stream, version, [removed])
            uow.projection.apply([removed])
        after = rows.changed_since(changes.cursor)
        # a removed row is named, or the store says it cannot tell (None): never "nothing"
        assert after.ids is None or a in after.ids
        assert after.cursor != changes.cursor
        assert list(rows.by_id([a, b])) == [b]
