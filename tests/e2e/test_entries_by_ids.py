"""`Memory.active_entries` and `Memory.revision` (ADR 0103): the lookups the framework front
ends keep their per-call cost flat with, checked against a second session on the same store."""

from __future__ import annotations

from pathlib import Path

import pi_hermes_memory


def _open(tmp_path: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=tmp_path / "agent", cwd=tmp_path, environ={})


def test_active_entries_by_row_or_stable_id_and_another_sessions_writes(tmp_path: Path) -> None:
    with _open(tmp_path) as mine, _open(tmp_path) as other:
        a = mine.add("The kettle is in the kitchen", target="memory").entry_id
        b = mine.add("The walrus lives by the river", target="memory").entry_id
        assert a is not None and b is not None
        rows = {v.id: v.version_id for v in mine.entries("memory")}
        views = mine.active_entries([rows[b], "unknown", a], "memory")
        assert [v.text for v in views] == [
            "The walrus lives by the river",
            "The kettle is in the kitchen",
        ]
        before = mine.revision("memory")
        assert other.update(a, "The kettle is on the shelf").success
        assert other.delete(b).success
        assert mine.revision("memory") > before  # another session's writes are seen
        assert mine.active_entries([rows[b], b], "memory") == []  # removed
        # a memory's first row id is its stable id: it names the current version
        assert rows[a] == a
        new_row = mine.active_entries([a], "memory")[0].version_id
        assert new_row is not None and new_row != a
        assert [v.text for v in mine.active_entries([new_row, a], "memory")] == [
            "The kettle is on the shelf",
            "The kettle is on the shelf",
        ]
        assert mine.revision("memory") == other.revision("memory")
