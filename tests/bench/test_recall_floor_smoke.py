"""The auto-recall threshold benchmark end to end on the retrieval smoke test's tiny synthetic
LoCoMo-shaped file (no timing checks; the real dev data is never read here)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.bench import recall_floor
from tests.bench.test_retrieval_smoke import synthetic


@pytest.mark.parametrize("preview", [False, True])
def test_the_curve_is_monotone_and_bounded(tmp_path: Path, preview: bool) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(synthetic()), encoding="utf-8")
    rows = recall_floor.run(data, (0.0, 0.5, 1.0, 100.0), preview=preview)
    assert [r["threshold"] for r in rows] == [0.0, 0.5, 1.0, 100.0]
    for key in ("silent_unrelated", "silent_cross", "injects_evidence", "injects_any"):
        assert all(0.0 <= r[key] <= 1.0 for r in rows)
    # a higher threshold never injects more, and never keeps fewer questions silent
    for lower, higher in itertools.pairwise(rows):
        assert higher["silent_cross"] >= lower["silent_cross"]
        assert higher["injects_any"] <= lower["injects_any"]
    # the unrelated questions only ever match stop words: silent at any threshold > 0
    assert rows[1]["silent_unrelated"] == 1.0
    # an unreachable threshold injects nothing at all
    assert rows[-1]["injects_any"] == 0.0 and rows[-1]["silent_cross"] == 1.0
    assert "| threshold |" in recall_floor.render(rows)
