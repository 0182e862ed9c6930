"""The OpenAI-compatible embedder against `httpx.MockTransport` (no network)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest
import structlog
from pi_hermes_memory.adapters.providers.openai_embedder import OpenAICompatibleEmbedder
from pi_hermes_memory.config.settings import EmbeddingConfig, EmbeddingProvider
from pi_hermes_memory.errors import EmbeddingFailed, HermesMemoryError

KEY = "sk-unit-test-key-9f8e7d6c"
BASE = "https://embed.example.com/v1/tenant-8472-secret"

Handler = Callable[[httpx.Request], httpx.Response]


def config(**kw: Any) -> EmbeddingConfig:
    values: dict[str, Any] = {
        "provider": EmbeddingProvider.OPENAI_COMPATIBLE,
        "requested_provider": EmbeddingProvider.OPENAI_COMPATIBLE,
        "base_url": BASE,
        "model": "text-embedding-3-small",
        "api_key": KEY,
        "api_key_env": "EMBED_KEY",
        "timeout_ms": 1500,
        "disabled_reason": None,
    }
    values.update(kw)
    return EmbeddingConfig(**values)


def embedder(handler: Handler, **kw: Any) -> OpenAICompatibleEmbedder:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return OpenAICompatibleEmbedder(config(**kw), client)


def answer(vectors: list[list[float]], order: list[int] | None = None) -> httpx.Response:
    indexes = order if order is not None else list(range(len(vectors)))
    data = [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in indexes]
    return httpx.Response(200, json={"object": "list", "data": data, "model": "m"})


def ok(dimension: int = 3) -> Handler:
    """Vector i = (i+1, 0, 0, …) + e_{i mod d}: distinct, predictable directions."""

    def handle(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        vectors = []
        for i, _ in enumerate(texts):
            v = [0.0] * dimension
            v[0] = float(i + 1)
            v[i % dimension] += 1.0
            vectors.append(v)
        return answer(vectors, order=list(reversed(range(len(texts)))))

    return handle


def test_request_shape_and_headers() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer([[1.0, 0.0], [0.0, 2.0]])

    result = embedder(handle).embed(["alpha", "beta"], kind="passage")
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == BASE + "/embeddings"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert json.loads(request.content) == {
        "model": "text-embedding-3-small",
        "input": ["alpha", "beta"],
    }
    assert request.extensions["timeout"]["read"] == pytest.approx(1.5)
    assert result.dtype == np.float32 and result.shape == (2, 2)
    np.testing.assert_allclose(result, [[1, 0], [0, 1]])


def test_dimensions_and_task_aware_fields() -> None:
    bodies: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return answer([[0.6, 0.8]] * len(bodies[-1]["input"]))

    e = embedder(
        handle, dimensions=2, task_query="retrieval.query", task_passage="retrieval.passage"
    )
    e.embed(["q"], kind="query")
    e.embed(["p1", "p2"], kind="passage")
    assert bodies[0] == {"model": "text-embedding-3-small", "input": ["q"], "dimensions": 2,
                         "task": "retrieval.query"}  # fmt: skip
    assert bodies[1]["task"] == "retrieval.passage" and bodies[1]["dimensions"] == 2
    assert e.dimension == 2


def test_no_task_field_for_a_kind_without_one() -> None:
    bodies: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return answer([[1.0, 0.0]])

    embedder(handle, task_passage="retrieval.passage").embed(["q"], kind="query")
    assert "task" not in bodies[0]


def test_shuffled_index_is_sorted() -> None:
    result = embedder(ok()).embed(["a", "b", "c"], kind="passage")
    expected = np.array([[2, 0, 0], [2, 1, 0], [3, 0, 1]], dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_vectors_are_l2_normalised_unless_the_server_says_it_did() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return answer([[3.0, 4.0]])

    np.testing.assert_allclose(embedder(handle).embed(["x"], kind="query"), [[0.6, 0.8]])
    raw = embedder(handle, normalized=True).embed(["x"], kind="query")
    np.testing.assert_allclose(raw, [[3.0, 4.0]])


def test_empty_input_makes_no_request() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    assert embedder(handle).embed([], kind="query").shape[0] == 0


def test_large_inputs_are_split_into_batches() -> None:
    sizes: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        sizes.append(len(texts))
        return answer([[1.0, float(i)] for i in range(len(texts))])

    client = httpx.Client(transport=httpx.MockTransport(handle))
    e = OpenAICompatibleEmbedder(config(), client, max_batch=4)
    assert e.embed([f"t{i}" for i in range(10)], kind="passage").shape == (10, 2)
    assert sizes == [4, 4, 2]


def _fails(handler: Handler, reason: str, **kw: Any) -> EmbeddingFailed:
    with pytest.raises(EmbeddingFailed) as caught:
        embedder(handler, **kw).embed(["one", "two"], kind="passage")
    assert caught.value.reason == reason
    assert isinstance(caught.value, HermesMemoryError)
    return caught.value


def test_wrong_count() -> None:
    _fails(lambda r: answer([[1.0, 0.0]]), "count")
    _fails(lambda r: answer([[1.0, 0.0]] * 3), "count")


def test_duplicate_or_out_of_range_index() -> None:
    _fails(lambda r: answer([[1.0, 0.0], [0.0, 1.0]], order=[0, 0]), "count")
    bad = {"data": [{"index": 0, "embedding": [1.0]}, {"index": 5, "embedding": [1.0]}]}
    _fails(lambda r: httpx.Response(200, json=bad), "count")


def test_wrong_dimension() -> None:
    _fails(lambda r: answer([[1.0, 0.0], [1.0, 0.0, 0.0]]), "dimension")
    _fails(lambda r: answer([[1.0, 0.0], [1.0, 0.0]]), "dimension", dimensions=3)
    _fails(lambda r: answer([[], []]), "dimension")


def test_dimension_must_stay_the_same_across_calls() -> None:
    sizes = iter([2, 3])

    def handle(request: httpx.Request) -> httpx.Response:
        return answer([[1.0] * next(sizes)])

    e = embedder(handle)
    e.embed(["a"], kind="query")
    with pytest.raises(EmbeddingFailed) as caught:
        e.embed(["b"], kind="query")
    assert caught.value.reason == "dimension" and e.dimension == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 502, 503])
def test_http_errors(status: int) -> None:
    error = _fails(
        lambda r: httpx.Response(status, json={"error": {"message": f"bad key {KEY}"}}),
        "http_status",
    )
    assert f"HTTP {status}" in str(error)
    assert KEY not in str(error)


def test_timeout() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    error = _fails(handle, "timeout")
    assert "1500 ms" in str(error)


def test_transport_error_keeps_no_url() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot reach {request.url}", request=request)

    error = _fails(handle, "transport")
    assert "tenant-8472" not in str(error) and error.__cause__ is None


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"data": 3}',
        b'{"data": [{"index": "0", "embedding": [1]}, {"index": 1, "embedding": [1]}]}',
        b'{"data": [{"index": 0, "embedding": "x"}, {"index": 1, "embedding": [1]}]}',
        b'{"data": [{"index": 0, "embedding": [true]}, {"index": 1, "embedding": [1]}]}',
        b'{"data": [{"index": 0, "embedding": ["1"]}, {"index": 1, "embedding": [1]}]}',
        b'{"data": [0, 1]}',
    ],
)
def test_malformed_bodies(body: bytes) -> None:
    with pytest.raises(EmbeddingFailed) as caught:
        embedder(lambda r: httpx.Response(200, content=body)).embed(["a", "b"], kind="query")
    assert caught.value.reason in {"malformed", "count"}


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e39"])
def test_non_finite_values(value: str) -> None:
    second = '{"index": 1, "embedding": [' + value + ", 1]}"
    body = ('{"data": [{"index": 0, "embedding": [1, 0]}, ' + second + "]}").encode()
    _fails(lambda r: httpx.Response(200, content=body), "non_finite")


def test_zero_vector_is_refused() -> None:
    _fails(lambda r: answer([[0.0, 0.0], [1.0, 0.0]]), "non_finite")


def test_key_and_full_url_never_in_messages_or_logs() -> None:
    failures: list[Handler] = [
        lambda r: httpx.Response(401, text=f"Incorrect API key provided: {KEY} for {BASE}"),
        lambda r: httpx.Response(500, text=BASE),
        lambda r: httpx.Response(200, text=f"{{{KEY}"),
        lambda r: answer([[1.0]]),
    ]

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout(f"{request.url} {request.headers}", request=request)

    messages: list[str] = []
    with structlog.testing.capture_logs() as logs:
        for handler in [*failures, timeout]:
            with pytest.raises(EmbeddingFailed) as caught:
                embedder(handler).embed(["a", "b"], kind="query")
            messages.append(str(caught.value))
            messages.append(repr(caught.value))
    text = json.dumps(logs, default=str) + "\n".join(messages)
    assert len(logs) == 5
    assert all(log["host"] == "https://embed.example.com" for log in logs)
    assert KEY not in text and "tenant-8472" not in text and "/v1" not in text
    assert "embed.example.com" in messages[0]


def test_repr_shows_neither_key_nor_url() -> None:
    e = embedder(ok())
    assert KEY not in repr(e) and "tenant" not in repr(e)
    assert e.model_id == "openai-compatible/text-embedding-3-small"


def test_close_leaves_an_injected_client_open() -> None:
    client = httpx.Client(transport=httpx.MockTransport(ok()))
    OpenAICompatibleEmbedder(config(), client).close()
    assert not client.is_closed
    own = OpenAICompatibleEmbedder(config())
    own.close()
