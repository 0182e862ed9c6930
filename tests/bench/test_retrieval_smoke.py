"""The retrieval benchmark end to end on a tiny synthetic LoCoMo-shaped file (no timing checks).

The real dev data (CC BY-NC) is never read here: the file is made in tmp_path.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from tests.bench import retrieval

HEADLINE = re.compile(r"overall R@10 fts=(\d\.\d{3}) dense=(\d\.\d{3}|n/a) hybrid=(\d\.\d{3}|n/a)")


def _turn(speaker: str, dia_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def synthetic() -> list[Any]:
    """Two conversations, categories 1-5, and every kind of broken evidence the loader counts."""
    first = {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [
                _turn("Ann", "D1:1", "I adopted a kitten called Pepper last week."),
                _turn("Bob", "D1:2", "Congratulations! I started learning the violin."),
                _turn("Ann", "D1:3", "Look at this.", blip_caption="a photo of a lighthouse"),
                _turn("Bob", "D1:4", ""),  # no text: a malformed turn
                _turn("Bob", "D1:2", "a duplicate dia_id"),
            ],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [
                _turn("Ann", "D2:1", "We drove to Lisbon for the marathon."),
                _turn("Bob", "D2:2", "My violin teacher moved to Porto."),
                {"speaker": "Bob"},  # no dia_id, no text
                "not a turn",
            ],
        },
        "qa": [
            {"question": "What is the name of Ann's kitten?", "evidence": ["D1:1"], "category": 4},
            {"question": "Which instrument is Bob learning?", "evidence": ["D1:2"], "category": 1},
            {
                "question": "Which city did Ann drive to for the marathon?",
                "evidence": ["D2:1", "D9:9", "D1"],  # one good, one missing, one malformed
                "category": 2,
            },
            {"question": "What did Ann photograph?", "evidence": ["D1:3 "], "category": 3},
            {"question": "Where does Bob's teacher live?", "evidence": ["D2:2"], "category": 5},
            {"question": "Broken evidence only", "evidence": ["D:1:2", 7], "category": 1},
            {"question": "Joined ids", "evidence": ["D1:1; D1:2"], "category": 4},
            {"question": "No evidence", "evidence": [], "category": 4},
            {"question": "", "evidence": ["D1:1"], "category": 4},  # malformed question
            {"question": "Odd category", "evidence": ["D1:1"], "category": "4"},
            "not a question",
        ],
    }
    second = {
        "sample_id": "conv-b",
        "conversation": {
            "session_1": [
                _turn("Cy", "D1:1", "Our team won the chess tournament in Oslo."),
                _turn("Di", "D1:2", "The bakery on the corner sells sourdough."),
            ]
        },
        "qa": [
            {"question": "What did the team win?", "evidence": ["D1:1"], "category": 4},
            {"question": "What does the bakery sell?", "evidence": ["D1:2"], "category": 1},
        ],
    }
    return [first, "not a sample", {"sample_id": "no conversation"}, second]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps(synthetic()), encoding="utf-8")
    return path


class HashEmbedder:
    """Deterministic bag-of-words hashing vectors (stands in for the local model)."""

    model_id = "test/hash"
    dimension = 64

    def embed(self, texts: Sequence[str], *, kind: str) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def test_loader_counts_and_skips_malformed_parts(data: Path) -> None:
    dataset = retrieval.load_dataset(data)
    assert [s.sample_id for s in dataset.samples] == ["conv-a", "conv-b"]
    a = dataset.samples[0]
    assert [u.dia_id for u in a.units] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert a.units[0].text == "Ann: I adopted a kitten called Pepper last week."
    assert a.units[2].text == "Ann: Look at this. [shares an image: a photo of a lighthouse]"
    assert [(q.category, q.evidence) for q in a.questions] == [
        (4, ("D1:1",)),
        (1, ("D1:2",)),
        (2, ("D2:1",)),
        (3, ("D1:3",)),
    ]
    assert dataset.skips == retrieval.Skips(
        malformed_samples=2,
        malformed_turns=3,
        duplicate_turns=1,
        malformed_questions=3,
        adversarial_questions=1,
        malformed_evidence=4,  # "D1", "D:1:2", 7, "D1:1; D1:2"
        missing_evidence=1,  # "D9:9"
        questions_without_evidence=3,
    )
    assert dataset.questions == 6 and dataset.units == 7


def test_run_gives_well_formed_numbers(data: Path, tmp_path: Path) -> None:
    embedder = HashEmbedder()
    factories = {
        "dense": retrieval.dense_factory(embedder),
        "hybrid": retrieval.hybrid_factory(embedder),
    }
    dataset, reports = retrieval.run(
        data, retrieval.MODES, (5, 20), factories=factories, root=tmp_path / "stores"
    )
    assert [r.mode for r in reports] == ["fts", "dense", "hybrid"]
    for report in reports:
        assert report.available and report.ks == (5, 10, 20)  # 10 always (the closing line)
        assert report.count() == dataset.questions == 6
        for k in report.ks:
            assert 0.0 <= report.recall(k) <= 1.0
            assert report.recall(5) <= report.recall(10) <= report.recall(20)
        assert math.isnan(report.recall(10, category=5))
        assert 0 <= report.latency(50) <= report.latency(95)
    fts = reports[0]
    assert fts.recall(10) == 1.0  # every question shares a rare word with its evidence
    assert fts.count(4) == 2 and fts.recall(5, 4) == 1.0


def test_main_prints_tables_and_ends_with_the_headline(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(retrieval, "local_embedder", lambda: (HashEmbedder(), ""))
    assert retrieval.main(["--data", str(data), "--k", "5", "10", "20"]) == 0
    out = capsys.readouterr().out
    lines = out.rstrip("\n").splitlines()
    match = HEADLINE.fullmatch(lines[-1])
    assert match is not None, lines[-1]
    assert all(value != "n/a" for value in match.groups())
    assert sum(1 for line in lines if HEADLINE.fullmatch(line)) == 1
    for mode in retrieval.MODES:
        assert f"## {mode}" in out
    assert "| 1 multi-hop |" in out and "| **overall** |" in out and "p95" in out
    assert "malformed evidence 4" in out and "missing evidence 1" in out


def test_sweep_adds_the_hybrid_variants(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(retrieval, "local_embedder", lambda: (HashEmbedder(), ""))
    assert retrieval.main(["--data", str(data), "--sweep"]) == 0
    out = capsys.readouterr().out
    for name in ("hybrid w=0.25 no mmr", "hybrid mmr>0.9", "hybrid no stages", "hybrid cosine mix"):
        assert f"## {name}" in out
    assert "latency excludes embedding the query" in out
    assert HEADLINE.fullmatch(out.rstrip("\n").splitlines()[-1])


def test_unavailable_modes_are_na(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(retrieval, "local_embedder", lambda: (None, "no local extra"))
    assert retrieval.main(["--data", str(data), "--mode", "all"]) == 0
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    match = HEADLINE.fullmatch(lines[-1])
    assert match is not None and match.group(2) == match.group(3) == "n/a"
    assert "n/a: no local extra" in lines
    assert retrieval.main(["--data", str(data), "--mode", "fts"]) == 0
    last = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    assert re.fullmatch(r"overall R@10 fts=1\.000 dense=n/a hybrid=n/a", last), last


def test_bad_arguments_and_odd_files(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        retrieval.main(["--data", str(tmp_path / "missing.json")])
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"sample_id": "x", "qa": []}), encoding="utf-8")
    assert retrieval.load_dataset(odd).samples == ()
    odd.write_text("42", encoding="utf-8")
    assert retrieval.load_dataset(odd).skips.malformed_samples == 1


def test_unit_ids_are_ulid_shaped_and_ordered() -> None:
    at = retrieval._BASE_TIME
    ids = [retrieval.unit_id(at + timedelta(seconds=n), n) for n in range(1, 40)]
    assert all(len(i) == 26 and set(i) <= set(retrieval._CROCKFORD) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert ids == [retrieval.unit_id(at + timedelta(seconds=n), n) for n in range(1, 40)]


def test_helpers() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.9], dtype=np.float32)
    assert retrieval.top_k(scores, 3) == [1, 3, 2]
    assert retrieval.top_k(scores, 10) == [1, 3, 2, 0]
    assert retrieval.top_k(scores, 0) == []
    assert retrieval.recall_at(["x", "a", "b"], ["a", "c"], 2) == 0.5
    assert retrieval.recall_at(["x"], [], 2) == 0.0
