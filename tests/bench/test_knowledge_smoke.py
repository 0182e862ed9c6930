"""The knowledge bench end to end on a tiny tree (no timing checks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench import knowledge


def test_knowledge_bench_runs_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "kb.json"
    assert knowledge.main(["--mb", "0.3", "--samples", "10", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "unchanged re-index s" in printed and "| common |" in printed
    result = json.loads(out.read_text())
    assert result["tree"]["files"] == result["reindex_unchanged"]["files_unchanged"] > 10
    assert result["reindex_unchanged"]["bytes_read"] == 0
    assert result["index"]["chunks"] > result["tree"]["files"]
    assert result["search"]["samples"] == 10 and result["search"]["p95_ms"] > 0
