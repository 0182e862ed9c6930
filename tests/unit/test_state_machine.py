"""Stateful invariants of the service on the in-memory adapters."""

from __future__ import annotations

from hypothesis import settings
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.document import MemoryDocument

from tests.support.machine import MemoryMachine


class InMemoryMachine(MemoryMachine):
    make_adapters = staticmethod(lambda: (InMemoryStorage(), InMemoryMarkdown()))

    def check_projection(self, doc: MemoryDocument) -> None:
        rows = self.storage.rows  # type: ignore[attr-defined]
        expected = {
            e.id: (e.text, e.superseded_by)
            for e in doc.all_entries()
            if not (e.target.value == "project" and e.project is None)
        }
        actual = {
            k: (r["text"], r["superseded_by"])
            for k, r in rows.items()
            if r["target"] == doc.target.value
        }
        assert actual == expected


InMemoryMachine.TestCase.settings = settings(
    InMemoryMachine.TestCase.settings, stateful_step_count=40
)
TestInMemoryMachine = InMemoryMachine.TestCase
