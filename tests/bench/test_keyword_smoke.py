"""The keyword benchmark end to end on tiny stores and the retrieval smoke test's synthetic
data (no timing checks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench import keyword
from tests.bench.run import SEARCH_KINDS
from tests.bench.test_retrieval_smoke import data  # noqa: F401  (a fixture)

_NUMBER = r"[0-9.]+"
SCALE_ROW = re.compile(
    rf"^\| (?P<rows>\d+) \| {_NUMBER} \| {_NUMBER} \| {_NUMBER} \| {_NUMBER} \|", re.MULTILINE
)
FLOOR_ROW = re.compile(
    rf"^\| (?P<floor>[01]\.\d\d) \| {_NUMBER} \| (?P<r10>{_NUMBER}) \| (?P<other>{_NUMBER}) \| "
    rf"(?P<everyday>{_NUMBER}) \|$",
    re.MULTILINE,
)


def test_scale_and_floor_report(
    data: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--sizes", "60", "120", "--queries", "3", "--work", str(tmp_path / "stores")]
    argv += ["--data", str(data), "--floors", "0", "0.9", "--speed-sizes", "60", "--samples", "1"]
    assert keyword.main(argv) == 0
    out = capsys.readouterr().out
    assert [m["rows"] for m in SCALE_ROW.finditer(out)] == ["60", "120"]
    assert "largest / smallest p50" in out
    floors = {float(m["floor"]): m for m in FLOOR_ROW.finditer(out)}
    assert set(floors) == {0.0, 0.9}
    # everyday questions share almost no meaningful word with the engineering facts
    assert float(floors[0.0]["everyday"]) >= 0.9 and float(floors[0.9]["everyday"]) == 1.0
    # a higher floor answers fewer questions: recall can only fall, silence only rise
    assert float(floors[0.9]["r10"]) <= float(floors[0.0]["r10"])
    assert float(floors[0.9]["other"]) >= float(floors[0.0]["other"])
    # the stores are kept in --work and reused by the next run
    assert (tmp_path / "stores" / "keyword-120.db").exists()
    assert keyword.main([*argv[:7], "--part", "scale"]) == 0


SPEED_ROW = re.compile(
    rf"^\| (?P<rows>[0-9,]+) \| (?P<kind>[A-Za-z ]+) \| (?:{_NUMBER} \| ){{6}}"
    rf"(?:{_NUMBER} \| ){{3}}(?P<floor>{_NUMBER}) \|$",
    re.MULTILINE,
)


def test_speed_report_has_every_size_and_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--part", "speed", "--speed-sizes", "80", "--samples", "2"]
    assert keyword.main([*argv, "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = [(m["rows"], m["kind"]) for m in SPEED_ROW.finditer(out)]
    assert rows == [("80", k) for k in SEARCH_KINDS]
    assert "ours / floor" in out and "ours / TS" in out and "ours / old" in out
    assert "keyword index segments (`memories_fts`): 80: " in out


def test_speed_report_on_a_store_written_by_single_adds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--part", "speed", "--speed-sizes", "40", "--samples", "1", "--by-adds"]
    assert keyword.main([*argv, "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert [m["kind"] for m in SPEED_ROW.finditer(out)] == list(SEARCH_KINDS)
    for kind in SEARCH_KINDS:
        assert f"| 40 by adds | {kind} | " in out
    assert "; 40 by adds: " in out  # its segment count


def test_common_queries_pair_the_most_common_words() -> None:
    assert keyword.common_queries(["a", "b", "c"], 2) == ["a b", "a c"]
