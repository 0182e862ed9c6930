"""Smoke test of the per-add system call count (ADR 0085): it runs and reports what it saw."""

from __future__ import annotations

import shutil

from tests.bench import add_syscalls


def test_the_count_reports_syncs_per_add_or_says_it_could_not() -> None:
    result = add_syscalls.count(20, 3)
    text = "\n".join(add_syscalls.render(result))
    if shutil.which("strace") is None:
        assert not result["measured"] and "not measured" in text
        return
    assert result["measured"]
    # every add commits the journal: at least one sync, and no more than before ADR 0085
    assert 1 <= result["syncs_per_add"] <= 7
    assert "fsync + fdatasync per add" in text


def test_the_side_by_side_steady_adds_report_timings_for_each_library() -> None:
    rows = add_syscalls.compare((20,), 3, None, rounds=2)
    assert [row["library"] for row in rows] == ["this"]
    row = rows[0]
    assert row["statuses"] == ["added"]  # fresh facts: every timed add writes
    assert 0 < row["cpu_p50_ms"] <= row["cpu_p95_ms"]
    assert "add p50 / p95 ms" in "\n".join(add_syscalls.render_compare(rows))


def test_steady_adds_after_a_read_report_timings() -> None:
    rows = add_syscalls.compare((20,), 3, None, rounds=1, folded=True)
    assert [row["library"] for row in rows] == ["this (after a read)"]
    assert rows[0]["statuses"] == ["added"]
    assert 0 < rows[0]["cpu_p50_ms"] <= rows[0]["cpu_p95_ms"]
