"""The skill load cleanup bench runs and reports a bounded run (no timing assertions)."""

from __future__ import annotations

import math
from pathlib import Path

from tests.bench import run


def test_one_cleanup_run_deletes_one_budget_and_leaves_the_rest(tmp_path: Path) -> None:
    result = run.bench_skill_cleanup(1_200, budget=500, root=tmp_path)
    assert result.rows == 1_200 and result.deleted == 500 and result.more_left
    assert all(math.isfinite(v) and v > 0 for v in (result.run_ms, result.not_due_ms))
    text = "\n".join(run.render_cleanup(result))
    assert "## Skill load cleanup" in text and "| 1,200 | 500 | yes |" in text


def test_a_table_smaller_than_the_budget_is_emptied(tmp_path: Path) -> None:
    result = run.bench_skill_cleanup(300, budget=500, root=tmp_path)
    assert result.deleted == 300 and not result.more_left
