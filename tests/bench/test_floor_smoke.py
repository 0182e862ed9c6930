"""The floor calibration bench end to end on the retrieval smoke test's tiny synthetic data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench import floor
from tests.bench.test_retrieval_smoke import HashEmbedder, data  # noqa: F401  (a fixture)

_NUMBER = r"[0-9.]+"
ROW = re.compile(
    rf"\| (?P<name>[^|]+) \| {_NUMBER} \| {_NUMBER} \| {_NUMBER} \| [+-]{_NUMBER} \| "
    rf"(?P<empty>{_NUMBER}) \|"
)


def test_floors_silence_unrelated_queries_and_report_recall(
    data: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(floor, "local_embedder", lambda: (HashEmbedder(), ""))
    assert floor.main(["--data", str(data), "--floors", "0.5", "0.9"]) == 0
    out = capsys.readouterr().out
    empty = {m["name"].strip(): float(m["empty"]) for m in ROW.finditer(out)}
    assert set(empty) == {
        "fts",
        "hybrid (default)",
        "hybrid no floor",
        "hybrid floor 0.50",
        "hybrid floor 0.90",
    }
    # hashed vectors of unrelated words are near-orthogonal: any floor silences them (the
    # lowest explicit floor, 0, still answers those with a positive cosine)
    assert empty["hybrid no floor"] < empty["hybrid floor 0.50"]
    # (FTS hits keep their place only with a keyword relevance the hard minimum accepts:
    # the index's scores are the contract's from issue 27 on, so >=, not ==, here)
    assert empty["hybrid floor 0.50"] == empty["hybrid floor 0.90"] >= empty["fts"] > 0.5
    # the background calibration (ADR 0069, ADR 0072) silences most of them as well (the
    # cosine ranking may find what FTS cannot, so not necessarily all FTS silences)
    assert empty["hybrid (default)"] >= 0.8
    assert "best cosine of an unrelated query" in out
