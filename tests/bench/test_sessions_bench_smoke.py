"""The session history benchmark runs end to end on a tiny tree (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench import sessions


def test_session_bench_is_well_formed(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "figures.json"
    args = ["--sessions", "6", "--messages", "300", "--repeat", "1", "--curve", "100"]
    assert sessions.main([*args, "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["files"] == 6 and figures["messages_indexed"] > 0
    assert figures["append_one_file"]["messages"] > 0
    assert figures["legacy"]["rare"]["queries"] == 6
    assert (
        figures["anchors"]["all_any_cwd"]["p95_ms"] >= figures["anchors"]["all_any_cwd"]["p50_ms"]
    )
    assert figures["db_to_jsonl"] > 0
    curve = figures["session_search_curve"]
    assert list(curve) == ["100", "300"]
    for point in curve.values():
        assert 0 < point["messages_indexed"] <= figures["messages_indexed"]
        assert point["same_results"] == {"rare": True, "common": True, "cjk": True}  # tiny
        for side in ("before", "after"):
            assert {case: f["queries"] for case, f in point[side].items()} == {
                "rare": 6,
                "common": 6,
                "cjk": 6,
            }


def test_percentile() -> None:
    assert sessions.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert sessions.percentile([7.0], 95) == 7.0
