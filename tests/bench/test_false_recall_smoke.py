"""The false-recall bench end to end on the retrieval smoke test's tiny synthetic data, with
the hashed test embedder (no timing checks; the real data is never read here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench import false_recall
from tests.bench.test_retrieval_smoke import HashEmbedder, data  # noqa: F401  (a fixture)

_N = r"[0-9.]+|nan"
LOCOMO = re.compile(
    rf"^\| (?P<name>[^|]+) \| (?P<r5>{_N}) \| (?P<r10>{_N}) \| (?P<asked>\d+) \| "
    rf"(?P<search>{_N}) \| (?P<recall>{_N}) \|$",
    re.MULTILINE,
)
FACTS = re.compile(
    rf"^\| (?P<name>[^|]+) \| (?P<r1>{_N}) \| (?P<r5>{_N}) \| (?P<recalled>{_N}) \| "
    rf"(?P<asked>\d+) \| (?P<search>{_N}) \| (?P<recall>{_N}) \|$",
    re.MULTILINE,
)


def test_reports_the_share_answered_with_nothing_per_floor(
    data: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(false_recall, "local_embedder", lambda: (HashEmbedder(), ""))
    argv = [
        *("--data", str(data), "--z-floors", "3", "6", "--csls-floors", "-0.1", "0.1"),
        *("--vector-cache", str(tmp_path / "v")),
    ]
    assert false_recall.main(argv) == 0
    out, _, paraphrase = capsys.readouterr().out.partition("Paraphrase notes")
    locomo = {m["name"].strip(): m for m in LOCOMO.finditer(out)}
    facts = {m["name"].strip(): m for m in FACTS.finditer(out)}
    para = {m["name"].strip(): m for m in LOCOMO.finditer(paraphrase)}
    names = {
        "keyword",
        "hybrid z_floor 3",
        "hybrid z_floor 6",
        "hybrid csls_floor -0.1",
        "hybrid csls_floor 0.1",
        "hybrid z_floor 4.5 without hard_min",
        "hybrid csls_floor 0.02 without hard_min",
    }
    assert set(locomo) == set(facts) == set(para) == names
    assert all(int(m["asked"]) == len(false_recall.PARAPHRASE_UNRELATED) for m in para.values())
    for floor in ("z_floor", "csls_floor"):
        low, high = ("3", "6") if floor == "z_floor" else ("-0.1", "0.1")
        for rows in (locomo, facts, para):
            assert float(rows[f"hybrid {floor} {high}"]["search"]) >= float(
                rows[f"hybrid {floor} {low}"]["search"]
            )
    for rows in (locomo, facts):
        for m in rows.values():
            search, recall = float(m["search"]), float(m["recall"])
            assert 0.0 <= search <= recall <= 1.0  # auto-recall answers nothing at least as often
    assert all(int(m["asked"]) == len(false_recall.EVERYDAY_QUESTIONS) for m in facts.values())
    # a higher floor answers nothing at least as often
    assert float(locomo["hybrid z_floor 6"]["search"]) >= float(
        locomo["hybrid z_floor 3"]["search"]
    )
    assert float(facts["hybrid z_floor 6"]["search"]) >= float(facts["hybrid z_floor 3"]["search"])
    assert any((tmp_path / "v").iterdir())  # vectors were cached on disk
