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
