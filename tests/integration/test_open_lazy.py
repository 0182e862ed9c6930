"""Opening a store costs its files, not its history (ADR 0038), on SQLite and Markdown files.

A store whose files match the ledger opens by a hash check: no event and no snapshot of the
memory document is decoded, by `open` or by a search right after it. A hand edit is still
imported by the next open, and a write still folds the document it changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.events import MemoryAdded
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.journal import codec as journal_codec
from pi_hermes_memory.memory import documents as memory_documents

PROJECT = "lazy"
_AT = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(
        agent_root=root / "agent", environ={"HOME": str(root)}, cwd=root, project=PROJECT
    )


def _long_history(root: Path, entries: int) -> None:
    """A store of `entries` memory entries appended through the SQLite journal, then settled
    by one open (which renders MEMORY.md and stores the snapshot, as a write would)."""
    agent = root / "agent"
    agent.mkdir(parents=True)
    big = {"memoryCharLimit": 10**9, "userCharLimit": 10**9, "projectCharLimit": 10**9}
    (agent / "hermes-memory-config.json").write_text(json.dumps(big), encoding="utf-8")
    with _open(root) as memory:
        db = memory.config.db_path
    stream = stream_for(Target.MEMORY)
    events = [
        MemoryAdded(
            stream=stream,
            version=i,
            at=_AT + timedelta(seconds=i),
            entry_id=f"01J{i:023d}",
            target=Target.MEMORY,
            text=f"fact number {i} about the zebra{i} deployment",
            project=None,
            category=None,
            created=_AT.date(),
            last_referenced=_AT.date(),
        )
        for i in range(1, entries + 1)
    ]
    storage = SqliteStorage(db)
    try:
        with storage.transaction() as uow:
            uow.journal.append(stream, 0, events)
            uow.projection.apply(events)
    finally:
        storage.close()
    with _open(root) as memory:  # renders MEMORY.md, stores the snapshot
        assert len(memory.entries("memory")) == entries


class _Counts:
    def __init__(self) -> None:
        self.events: dict[str, int] = {}
        self.snapshots: dict[str, int] = {}

    def wrap(self, fn: Callable[..., Any], into: dict[str, int], key: Callable[..., str]) -> Any:
        def counted(*args: Any) -> Any:
            name = key(*args)
            into[name] = into.get(name, 0) + 1
            return fn(*args)

        return counted


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counts]:
    """Counts the events the SQLite journal decodes and the snapshots decoded, by stream."""
    found = _Counts()
    # the journal imports the codec with its first read (ADR 0105): patched where it lives
    monkeypatch.setattr(
        journal_codec,
        "decode",
        found.wrap(
            journal_codec.decode, found.events, lambda tag, data: json.loads(data)["stream"]
        ),
    )
    monkeypatch.setattr(
        memory_documents,
        "decode_document",
        found.wrap(
            memory_documents.decode_document,
            found.snapshots,
            lambda data: json.loads(data)["document"]["stream"],
        ),
    )
    yield found


def test_open_and_search_decode_nothing_of_a_long_history(tmp_path: Path, counts: _Counts) -> None:
    _long_history(tmp_path, 1_200)
    counts.events.clear()
    counts.snapshots.clear()
    with _open(tmp_path) as memory:
        result = memory.search("zebra17")
        assert [h.text for h in result.hits][:1] == ["fact number 17 about the zebra17 deployment"]
        assert "memory:memory" not in counts.events
        assert "memory:memory" not in counts.snapshots
        # reading the document decodes its snapshot and the events after it (fewer than 500)
        assert len(memory.entries("memory")) == 1_200
        assert counts.snapshots.get("memory:memory") == 1
        assert counts.events.get("memory:memory", 0) < 500


def test_a_hand_edit_is_imported_by_the_next_open(tmp_path: Path, counts: _Counts) -> None:
    _long_history(tmp_path, 600)
    path = tmp_path / "agent" / "pi-hermes-memory" / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\n§\nwritten by hand: the staging host is blue-7\n", encoding="utf-8")
    with _open(tmp_path) as memory:
        texts = [e.text for e in memory.entries("memory")]
        assert "written by hand: the staging host is blue-7" in texts
        assert len(texts) == 601
    counts.events.clear()
    counts.snapshots.clear()
    with _open(tmp_path) as memory:  # imported and rendered: the next open is a hash check again
        assert not memory.warnings
        assert "memory:memory" not in counts.snapshots
        hits = memory.search("staging host").hits
        assert [h.text for h in hits] == ["written by hand: the staging host is blue-7"]


def test_a_write_after_a_lazy_open_folds_and_keeps_every_entry(tmp_path: Path) -> None:
    _long_history(tmp_path, 300)
    with _open(tmp_path) as memory:
        outcome = memory.add("the release train leaves on thursdays", target="memory")
        assert outcome.success, outcome.message
    with _open(tmp_path) as memory:
        texts = [e.text for e in memory.entries("memory")]
        assert len(texts) == 301 and "the release train leaves on thursdays" in texts
