"""The paraphrase benchmark end to end on the tiny synthetic LoCoMo-shaped file of the retrieval
smoke test, with a hashing embedder standing in for the local model (no timing checks)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target

from tests.bench import paraphrase
from tests.bench.test_retrieval_smoke import HashEmbedder, data  # noqa: F401  (a fixture)


class Counting(HashEmbedder):
    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str], *, kind: str) -> npt.NDArray[np.float32]:
        self.calls += 1
        return super().embed(texts, kind=kind)


def test_main_reports_every_variant_and_a_second_run_embeds_nothing(
    data: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(paraphrase, "local_embedder", lambda: (HashEmbedder(), ""))
    argv = ["--data", str(data), "--cache", str(tmp_path / "cache")]
    assert paraphrase.main(argv) == 0
    out = capsys.readouterr().out
    assert "## paraphrase examples" in out and "## LoCoMo" in out
    for name in (
        "dense",
        "hybrid",
        "dense labelled",
        "hybrid centred",
        "dense rocchio top=3 w=0.5",
    ):
        assert re.search(rf"\| {re.escape(name)}[^|]* \| \d\.\d{{3}} \| \d\.\d{{3}} \|", out), name
    assert not out.rstrip().endswith("embedded 0 texts this run; cache " + str(tmp_path / "cache"))
    assert paraphrase.main([*argv, "--only", "dense"]) == 0
    again = capsys.readouterr().out
    assert "embedded 0 texts this run" in again
    assert "| hybrid |" not in again


def test_disk_cache_round_trip(tmp_path: Path) -> None:
    inner = Counting()
    cached = paraphrase.DiskCachedEmbedder(inner, tmp_path)
    texts = ["alpha beta", "gamma", "alpha beta"]
    first = cached.embed(texts, kind="passage")
    assert np.allclose(first, inner.embed(texts, kind="passage"))
    inner.calls = 0
    fresh = paraphrase.DiskCachedEmbedder(inner, tmp_path)  # a new process: read from disk
    assert np.array_equal(fresh.embed(texts, kind="passage"), first)
    assert inner.calls == 0 and fresh.embedded == 0
    fresh.embed(["gamma"], kind="query")  # another kind is another vector
    assert inner.calls == 1 and fresh.embedded == 1


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"target": Target.USER, "kind": MemoryKind.PREFERENCE}, "user preference: T"),
        ({"target": Target.PROJECT}, "project: T"),
        ({"target": Target.MEMORY, "kind": MemoryKind.OTHER}, "note: T"),
        (
            {"target": Target.FAILURE, "category": FailureCategory.TOOL_QUIRK},
            "failure tool quirk: T",
        ),
        ({"target": Target.FAILURE, "category": FailureCategory.FAILURE}, "failure: T"),
    ],
)
def test_passage_text_puts_the_row_words_before_its_text(
    kwargs: dict[str, object], expected: str
) -> None:
    assert paraphrase.passage_text("T", **kwargs) == expected  # type: ignore[arg-type]


def test_paraphrase_ranks_are_ranks_of_the_asked_note() -> None:
    ranks = paraphrase.paraphrase_ranks(HashEmbedder(), paraphrase.PASSAGES["plain text"])
    assert [q for q, _, _ in ranks] == [q for q, _ in paraphrase.PARAPHRASES]
    assert all(1 <= rank <= len(paraphrase.NOTES) for _, rank, _ in ranks)
    assert all((rank == 1) == (margin > 0) for _, rank, margin in ranks if margin != 0)
