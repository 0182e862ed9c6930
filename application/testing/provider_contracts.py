"""The provider contract suites: `Embedder`, `Reranker`, `Completer` (ADR 0058). Requires
numpy (for the embedder).

Each suite checks what the library relies on, not the quality of the model. Provide the
working adapter as a fixture (``embedder``, ``reranker``, ``completer``); optionally a
``failing_*`` one (every call fails: a closed port, a server answering 500, a child that
exits 1) and a ``slow_*`` one (its provider never answers within the adapter's timeout) with
the class attribute ``timeout_s`` (the timeout that adapter honours). The failure and timeout
tests are skipped, saying why, when those fixtures are not given::

    class TestMyEmbedder(EmbedderContract):
        timeout_s = 0.5

        @pytest.fixture
        def embedder(self):
            return MyEmbedder(url=..., timeout_s=0.5)

        @pytest.fixture
        def failing_embedder(self):
            return MyEmbedder(url="http://127.0.0.1:9", timeout_s=0.5)  # nothing listens

Or from the command line: ``python -m pi_hermes_memory.testing.run --kind embedder
--adapter my_pkg.my_module:make_embedder`` (`make contracts`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np
import pytest
from pi_hermes_memory.errors import (
    CompletionFailed,
    CompletionFailure,
    EmbeddingFailed,
    HermesMemoryError,
)

__all__ = ["CompleterContract", "EmbedderContract", "RerankerContract"]

E = TypeVar("E", bound=BaseException)

#: texts the library meets: accents, CJK (no spaces), Korean, Arabic (RTL), emoji with a ZWJ
UNICODE_TEXTS = (
    "Café naïve façade: crème brûlée",
    "日本語の文章を埋め込みます",
    "部署流程通过预发布集群",
    "한국어 문장도 저장됩니다",
    "مرحبا بالعالم",
    "emoji 🚀 and a ZWJ 👩‍💻 sequence",
)
TEXTS = (
    "The CI runs on Buildkite",
    "Deploys go through the staging cluster",
    "The user prefers tabs over spaces",
)
#: a long text: an adapter embeds it (truncating or windowing) or fails with its own error
LONG_TEXT = "The release checklist has many steps. " * 120


def _expect(error: type[E], call: Callable[[], object], what: str) -> E:
    """Run `call`; it must raise `error`. Anything else fails the test naming what came."""
    try:
        value = call()
    except error as exc:
        return exc
    except Exception as exc:
        pytest.fail(
            f"{what} raised {type(exc).__module__}.{type(exc).__name__} ({exc}); "
            f"the port allows only {error.__name__}: wrap foreign exceptions in it"
        )
    pytest.fail(f"{what} returned {value!r:.80} instead of raising {error.__name__}")


def _needs(adapter: Any, fixture: str) -> Any:
    if adapter is None:
        pytest.skip(f"no {fixture} fixture: override it to check this part of the contract")
    return adapter


# -- Embedder ----------------------------------------------------------------------------------


class EmbedderContract:
    """What the library relies on from an `Embedder` (`pi_hermes_memory.ports.Embedder`).

    ``embed(texts, kind=...)`` returns a float32 matrix (len(texts), d), one finite,
    L2-normalised row per text in the texts' order; d is the same on every call and equals
    ``dimension`` once known; ``model_id`` is a stable non-empty string; every failure is
    `EmbeddingFailed` (never httpx/OSError/ValueError...), within ``timeout_s`` + grace.
    """

    #: the timeout the ``slow_embedder`` honours, in seconds
    timeout_s: ClassVar[float] = 1.0
    #: what a failure may take past `timeout_s` (a connection attempt, stopping a process)
    grace_s: ClassVar[float] = 3.0
    #: rows of one text embedded alone and within a batch must agree this closely (cosine)
    batch_agreement: ClassVar[float] = 0.99

    @pytest.fixture
    def failing_embedder(self) -> Any:
        return None

    @pytest.fixture
    def slow_embedder(self) -> Any:
        return None

    def _matrix(self, embedder: Any, texts: list[str], kind: str = "passage") -> Any:
        matrix = embedder.embed(texts, kind=kind)
        assert isinstance(matrix, np.ndarray), f"embed returned {type(matrix).__name__}"
        assert matrix.dtype == np.float32, f"embed returned dtype {matrix.dtype}, not float32"
        assert matrix.ndim == 2, f"embed returned {matrix.ndim} dimensions, not 2"
        assert matrix.shape[0] == len(texts), f"{matrix.shape[0]} rows for {len(texts)} texts"
        return matrix

    def _rows_ok(self, matrix: Any) -> None:
        assert matrix.shape[1] > 0, "the vectors have no components"
        assert np.isfinite(matrix).all(), "a vector holds NaN or infinity"
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
        assert np.allclose(norms, 1.0, atol=1e-3), f"rows are not L2-normalised: {norms}"

    def test_model_id_is_a_stable_non_empty_string(self, embedder: Any) -> None:
        first = embedder.model_id
        assert isinstance(first, str) and first.strip(), f"model_id {first!r}"
        embedder.embed([TEXTS[0]], kind="query")
        assert embedder.model_id == first, "model_id changed after a call"

    @pytest.mark.parametrize("kind", ["query", "passage"])
    def test_one_float32_unit_row_per_text(self, embedder: Any, kind: str) -> None:
        matrix = self._matrix(embedder, list(TEXTS), kind)
        self._rows_ok(matrix)

    def test_the_dimension_is_stable_and_matches_the_declared_one(self, embedder: Any) -> None:
        declared = embedder.dimension
        assert declared is None or (isinstance(declared, int) and declared > 0), declared
        one = self._matrix(embedder, [TEXTS[0]], "query")
        many = self._matrix(embedder, list(TEXTS) * 3, "passage")
        assert one.shape[1] == many.shape[1], f"dimension {one.shape[1]} then {many.shape[1]}"
        if declared is not None:
            assert one.shape[1] == declared, f"declared {declared}, returned {one.shape[1]}"
        assert embedder.dimension == one.shape[1], (
            f"dimension is {embedder.dimension!r} after a call returned {one.shape[1]} columns"
        )

    def test_no_texts_give_an_empty_matrix(self, embedder: Any) -> None:
        matrix = self._matrix(embedder, [], "passage")
        if embedder.dimension is not None:  # unknown: any width of nothing will do
            assert matrix.shape[1] in (0, embedder.dimension), f"shape {matrix.shape}"

    def test_unicode_and_cjk_texts_embed(self, embedder: Any) -> None:
        matrix = self._matrix(embedder, list(UNICODE_TEXTS), "passage")
        self._rows_ok(matrix)

    def test_rows_follow_the_order_of_the_texts(self, embedder: Any) -> None:
        texts = [*TEXTS, UNICODE_TEXTS[1]]
        together = self._matrix(embedder, texts, "passage")
        backwards = self._matrix(embedder, texts[::-1], "passage")
        alone = np.vstack([self._matrix(embedder, [t], "passage") for t in texts])
        for name, other in (("reversed", backwards[::-1]), ("one by one", alone)):
            agreement = np.sum(together.astype(np.float64) * other, axis=1)
            assert (agreement >= self.batch_agreement).all(), (
                f"row i is not the vector of text i ({name}): cosines {agreement}"
            )

    def test_a_repeated_text_gets_the_same_row(self, embedder: Any) -> None:
        matrix = self._matrix(embedder, [TEXTS[0], TEXTS[1], TEXTS[0]], "query")
        assert float(np.dot(matrix[0], matrix[2])) >= self.batch_agreement

    def test_a_long_text_embeds_or_fails_with_embedding_failed(self, embedder: Any) -> None:
        try:
            matrix = embedder.embed([LONG_TEXT], kind="passage")
        except EmbeddingFailed:
            return
        except Exception as exc:
            pytest.fail(f"a long text raised {type(exc).__name__}, not EmbeddingFailed")
        assert matrix.shape[0] == 1

    @pytest.mark.parametrize("kind", ["query", "passage"])
    def test_a_failure_is_embedding_failed(self, failing_embedder: Any, kind: str) -> None:
        embedder = _needs(failing_embedder, "failing_embedder")
        exc = _expect(
            EmbeddingFailed, lambda: embedder.embed(list(TEXTS), kind=kind), "a failing embed"
        )
        assert isinstance(exc.reason, str) and exc.reason, "EmbeddingFailed.reason is empty"
        assert str(exc), "EmbeddingFailed has no message"

    def test_a_timeout_is_embedding_failed_within_the_bound(self, slow_embedder: Any) -> None:
        embedder = _needs(slow_embedder, "slow_embedder")
        started = time.monotonic()
        _expect(EmbeddingFailed, lambda: embedder.embed([TEXTS[0]], kind="query"), "a slow embed")
        took = time.monotonic() - started
        assert took <= self.timeout_s + self.grace_s, (
            f"the embedder gave up after {took:.2f} s; its timeout is {self.timeout_s} s"
        )


# -- Reranker ----------------------------------------------------------------------------------


class RerankerContract:
    """What the library relies on from a `Reranker` (`pi_hermes_memory.ports.Reranker`).

    ``rerank(query, documents)`` returns one finite number per document (not a bool), in the
    documents' order; a failure answers None ("unavailable": the search falls back to cosine)
    instead of raising, within ``timeout_s`` + grace.
    """

    timeout_s: ClassVar[float] = 1.0
    grace_s: ClassVar[float] = 3.0
    #: scores of the same document asked in another order must agree this closely
    tolerance: ClassVar[float] = 1e-3

    @pytest.fixture
    def failing_reranker(self) -> Any:
        return None

    @pytest.fixture
    def slow_reranker(self) -> Any:
        return None

    def _scores(self, reranker: Any, query: str, documents: list[str]) -> list[float]:
        scores = reranker.rerank(query, documents)
        assert isinstance(scores, list), f"rerank returned {type(scores).__name__}, not a list"
        assert len(scores) == len(documents), f"{len(scores)} scores for {len(documents)} docs"
        for s in scores:
            assert isinstance(s, int | float) and not isinstance(s, bool), f"score {s!r}"
            assert math.isfinite(s), f"score {s!r} is not finite"
        return scores

    def test_one_finite_score_per_document(self, reranker: Any) -> None:
        self._scores(reranker, "where do the builds run?", list(TEXTS))
        self._scores(reranker, "one document", [TEXTS[0]])

    def test_scores_follow_the_order_of_the_documents(self, reranker: Any) -> None:
        query = "how do deploys reach production?"
        forwards = self._scores(reranker, query, list(TEXTS))
        backwards = self._scores(reranker, query, list(TEXTS)[::-1])
        assert forwards == pytest.approx(backwards[::-1], abs=self.tolerance), (
            f"score i is not the score of document i: {forwards} vs {backwards[::-1]}"
        )

    def test_unicode_and_cjk_documents_are_scored(self, reranker: Any) -> None:
        self._scores(reranker, "日本語の文章", list(UNICODE_TEXTS))

    def test_no_documents_give_no_scores(self, reranker: Any) -> None:
        assert reranker.rerank("anything", []) in ([], None)

    def test_a_failure_answers_none(self, failing_reranker: Any) -> None:
        reranker = _needs(failing_reranker, "failing_reranker")
        try:
            scores = reranker.rerank("where do the builds run?", list(TEXTS))
        except Exception as exc:
            pytest.fail(f"a failing rerank raised {type(exc).__name__}; it must answer None")
        assert scores is None, f"a failing rerank answered {scores!r}, not None"

    def test_a_timeout_answers_none_within_the_bound(self, slow_reranker: Any) -> None:
        reranker = _needs(slow_reranker, "slow_reranker")
        started = time.monotonic()
        try:
            scores = reranker.rerank("where do the builds run?", list(TEXTS))
        except Exception as exc:
            pytest.fail(f"a slow rerank raised {type(exc).__name__}; it must answer None")
        took = time.monotonic() - started
        assert scores is None, f"a slow rerank answered {scores!r}, not None"
        assert took <= self.timeout_s + self.grace_s, (
            f"the reranker gave up after {took:.2f} s; its timeout is {self.timeout_s} s"
        )


# -- Completer ---------------------------------------------------------------------------------


class CompleterContract:
    """What the library relies on from a `Completer` (`pi_hermes_memory.ports.Completer`).

    ``complete(system, user, timeout=...)`` returns a `str`; every failure is
    `CompletionFailed` with a `CompletionFailure` reason (never httpx/OSError/RuntimeError...,
    though the library now wraps those too, ADR 0058); no usable reply within `timeout` is
    `CompletionFailed(TIMEOUT)` within the timeout plus a short grace.
    """

    #: the timeout passed to the ``slow_completer``, in seconds
    timeout_s: ClassVar[float] = 1.0
    #: what a timeout may take past `timeout_s` (stopping a child process group)
    grace_s: ClassVar[float] = 3.0
    #: the timeout of the calls that should succeed
    reply_timeout_s: ClassVar[float] = 30.0

    @pytest.fixture
    def failing_completer(self) -> Any:
        return None

    @pytest.fixture
    def slow_completer(self) -> Any:
        return None

    def _reply(self, completer: Any, system: str, user: str) -> str:
        reply = completer.complete(system, user, timeout=self.reply_timeout_s)
        assert isinstance(reply, str), f"complete returned {type(reply).__name__}, not str"
        return reply

    def test_a_completion_is_a_str(self, completer: Any) -> None:
        self._reply(completer, "You answer in one word.", "Say ok.")

    def test_unicode_prompts_complete(self, completer: Any) -> None:
        self._reply(completer, "Réponds brièvement. 簡潔に答えて。", "\n".join(UNICODE_TEXTS))

    def test_a_long_prompt_completes_or_fails_with_completion_failed(self, completer: Any) -> None:
        try:
            reply = completer.complete("Summarise.", LONG_TEXT * 4, timeout=self.reply_timeout_s)
        except CompletionFailed:
            return
        except Exception as exc:
            pytest.fail(f"a long prompt raised {type(exc).__name__}, not CompletionFailed")
        assert isinstance(reply, str)

    def test_a_failure_is_completion_failed(self, failing_completer: Any) -> None:
        completer = _needs(failing_completer, "failing_completer")
        exc = _expect(
            CompletionFailed,
            lambda: completer.complete("system", "user", timeout=self.reply_timeout_s),
            "a failing completion",
        )
        assert isinstance(exc.reason, CompletionFailure), f"reason {exc.reason!r}"
        assert isinstance(exc, HermesMemoryError) and str(exc), "CompletionFailed has no message"

    def test_a_timeout_is_completion_failed_within_the_bound(self, slow_completer: Any) -> None:
        completer = _needs(slow_completer, "slow_completer")
        started = time.monotonic()
        exc = _expect(
            CompletionFailed,
            lambda: completer.complete("system", "user", timeout=self.timeout_s),
            "a slow completion",
        )
        took = time.monotonic() - started
        assert exc.reason is CompletionFailure.TIMEOUT, f"reason {exc.reason!r}, not timeout"
        assert took <= self.timeout_s + self.grace_s, (
            f"the completer gave up after {took:.2f} s; the timeout was {self.timeout_s} s"
        )
