"""The auto-recall bench end to end on a tiny store (keyword mode; no timing checks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench import recall


def test_recall_bench_runs_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "recall.json"
    assert recall.main(["--sizes", "60", "--samples", "4", "--no-hybrid", "--out", str(out)]) == 0
    assert "| keyword | 60 | 4 |" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())["recall"]
    assert row["samples"] == 4 and row["p95_ms"] >= row["p50_ms"] > 0
    assert row["injected"] >= 1  # the seeded questions draw on the corpus vocabulary


def test_turn_messages_all_reach_the_search() -> None:
    from pi_hermes_memory.domain.prompt.adaptive import should_retrieve

    assert all(should_retrieve(m).retrieve for m in recall.turn_messages(30))
    assert not any(should_retrieve(m).retrieve for m in recall.SKIPPED_MESSAGES)
