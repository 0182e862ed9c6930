"""`porting.remove_rows` (the CLI's delete-bulk) on the real store: batches by id, each row
with its own outcome, a row gone meanwhile reported without stopping the others."""

from __future__ import annotations

from pathlib import Path

import pi_hermes_memory
from pi_hermes_memory.memory import porting


def test_remove_rows_removes_by_id_in_batches_and_reports_each_row(tmp_path: Path) -> None:
    with pi_hermes_memory.open(project="bulk", agent_root=tmp_path) as memory:
        for i in range(40):
            assert memory.add(f"Bulk fact number {i} about service q{i}x", target="memory").success
            assert memory.add(f"Project rule {i} for module m{i}z", target="project").success
        rows = porting.bulk_candidates(memory, ["global", "project:bulk"])
        assert len(rows) == 80
        gone = rows[7]
        assert memory.delete(gone.id).success  # removed meanwhile by someone else
        outcomes = porting.remove_rows(memory, rows)
        assert [e.id for e, _ in outcomes] == [e.id for e in rows]
        failed = [e.id for e, r in outcomes if not r.success]
        assert failed == [gone.id]
        assert memory.entries("memory") == [] and memory.entries("project") == []
        # removed, not purged: each one can come back
        assert memory.restore(rows[0].id).success
    with pi_hermes_memory.open(project="bulk", agent_root=tmp_path) as memory:
        assert [v.id for v in memory.entries()] == [rows[0].id]
