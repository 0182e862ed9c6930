"""The Jina-compatible /rerank adapter (ADR 0018), against httpx.MockTransport."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pi_hermes_memory.adapters.providers.jina_reranker import (
    DEFAULT_RERANK_MODEL,
    JinaReranker,
    parse_rerank_response,
    rerank_url,
)
from pi_hermes_memory.search.retrieval import Reranker

KEY = "sk-test-0123456789-secret"
BASE = "https://rerank.internal.example:8443/private/v1"


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    @property
    def reasons(self) -> list[Any]:
        return [fields.get("reason") for _, fields in self.events]


Handler = Callable[[httpx.Request], httpx.Response]


def reranker(handler: Handler, log: Log | None = None, **options: Any) -> JinaReranker:
    options.setdefault("base_url", BASE)
    options.setdefault("api_key", KEY)
    return JinaReranker(transport=httpx.MockTransport(handler), logger=log or Log(), **options)


def answer(results: object, status: int = 200) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"model": "m", "results": results})

    return handle


def test_posts_the_jina_request_and_maps_results_by_index() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        results = [
            {"index": 2, "relevance_score": 0.9, "document": {"text": "c"}},
            {"index": 0, "relevance_score": 0.1},
            {"index": 1, "relevance_score": 0.5},
        ]
        return httpx.Response(200, json={"model": "m", "usage": {}, "results": results})

    r = reranker(handle)
    assert isinstance(r, Reranker)
    assert r.rerank("which one?", ["a", "b", "c"]) == [0.1, 0.5, 0.9]
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == BASE + "/rerank"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(request.content) == {
        "model": DEFAULT_RERANK_MODEL,
        "query": "which one?",
        "documents": ["a", "b", "c"],
        "top_n": 3,
    }


def test_no_documents_no_request() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    assert reranker(handle).rerank("q", []) == []


def test_long_documents_are_clipped() -> None:
    sent: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json={"results": [{"index": 0, "relevance_score": 1}]})

    assert reranker(handle, max_document_chars=5).rerank("query text", ["x" * 100]) == [1.0]
    assert sent[0]["documents"] == ["xxxxx"] and sent[0]["query"] == "query"


def test_without_a_key_no_authorization_header() -> None:
    headers: list[httpx.Headers] = []

    def handle(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers)
        return httpx.Response(200, json={"results": [{"index": 0, "relevance_score": 0.3}]})

    assert reranker(handle, api_key=None).rerank("q", ["a"]) == [0.3]
    assert "authorization" not in headers[0]


def test_tei_style_bare_list_and_logits() -> None:
    bare = [{"index": 1, "score": 0.0}, {"index": 0, "score": 2.0}]

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=bare)

    assert reranker(handle).rerank("q", ["a", "b"]) == [2.0, 0.0]
    squashed = reranker(handle, scores_are_logits=True).rerank("q", ["a", "b"])
    assert squashed == pytest.approx([1 / (1 + math.exp(-2.0)), 0.5])


@pytest.mark.parametrize(
    "results",
    [
        [{"index": 0, "relevance_score": 0.5}],  # index 1 missing
        [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}],  # repeated
        [{"index": 0, "relevance_score": 0.5}, {"index": 2, "relevance_score": 0.4}],  # range
        [{"index": 0, "relevance_score": 0.5}, {"index": -1, "relevance_score": 0.4}],
        [{"index": 0, "relevance_score": 0.5}, {"index": True, "relevance_score": 0.4}],
        [{"index": 0, "relevance_score": 0.5}, {"index": "1", "relevance_score": 0.4}],
        [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": "0.4"}],
        [{"index": 0, "relevance_score": 0.5}, {"index": 1}],
        [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": None}],
        [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": False}],
        [{"index": 0, "relevance_score": 0.5}, [1, 0.4]],
        [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4}, {}],
        {"index": 0},
        None,
    ],
)
def test_results_that_do_not_match_the_documents_give_none(results: object) -> None:
    log = Log()
    assert reranker(answer(results), log).rerank("q", ["a", "b"]) is None
    assert log.reasons == ["malformed"]


def test_non_finite_scores_give_none() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        body = b'{"results": [{"index": 0, "relevance_score": NaN}]}'
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    assert reranker(handle).rerank("q", ["a"]) is None


@pytest.mark.parametrize(
    "content", [b"", b"not json", b"<html>oops</html>", b'{"results": ', b"\xff\xfe\x00"]
)
def test_malformed_bodies_give_none(content: bytes) -> None:
    log = Log()

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=content)

    assert reranker(handle, log).rerank("q", ["a"]) is None
    assert log.reasons == ["malformed"]


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
def test_error_statuses_give_none(status: int) -> None:
    log = Log()

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"detail": f"bad key {KEY}"})

    assert reranker(handle, log).rerank("q", ["a"]) is None
    assert log.events == [
        (
            "rerank.failed",
            {"reason": "http_status", "model": DEFAULT_RERANK_MODEL, "status": status},
        )
    ]


def test_redirects_are_not_followed() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"location": "https://elsewhere.example/rerank"})

    log = Log()
    assert reranker(handle, log).rerank("q", ["a"]) is None
    assert log.reasons == ["http_status"]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (httpx.ReadTimeout, "timeout"),
        (httpx.ConnectTimeout, "timeout"),
        (httpx.ConnectError, "transport"),
        (httpx.RemoteProtocolError, "transport"),
    ],
)
def test_transport_failures_give_none(error: type[httpx.TransportError], reason: str) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise error(f"failed talking to {request.url} with {KEY}", request=request)

    log = Log()
    assert reranker(handle, log).rerank("q", ["a"]) is None
    assert log.events == [
        (
            "rerank.failed",
            {"reason": reason, "model": DEFAULT_RERANK_MODEL, "error": error.__name__},
        )
    ]


def test_any_other_exception_gives_none() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise RuntimeError(KEY)

    log = Log()
    assert reranker(handle, log).rerank("q", ["a"]) is None
    closed = reranker(answer([{"index": 0, "relevance_score": 1.0}]), log)
    closed.close()
    assert closed.rerank("q", ["a"]) is None
    assert log.reasons == ["transport", "transport"]


def test_the_timeout_is_five_seconds_by_default() -> None:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return httpx.Response(200, json={"results": [{"index": 0, "relevance_score": 1.0}]})

    reranker(handle).rerank("q", ["a"])
    reranker(handle, timeout_s=0.25).rerank("q", ["a"])
    assert seen[0] == {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}
    assert seen[1]["read"] == 0.25


def test_the_key_and_url_never_show() -> None:
    log = Log()

    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"{BASE} {KEY}", request=request)

    r = reranker(handle, log)
    r.rerank("q", ["a"])
    reranker(answer(None, status=401), log).rerank("q", ["a"])
    reranker(answer(None), log).rerank("q", ["a"])
    shown = repr(r) + repr(log.events) + str(vars(r).get("model"))
    assert KEY not in shown
    assert "rerank.internal.example" not in shown
    assert repr(r) == f"JinaReranker(model={DEFAULT_RERANK_MODEL!r})"


def test_from_environ_reads_the_named_variable() -> None:
    made = JinaReranker.from_environ(api_key_env="RERANK_KEY", environ={"RERANK_KEY": f" {KEY} "})
    assert made is not None and made.model == DEFAULT_RERANK_MODEL
    assert JinaReranker.from_environ(api_key_env="RERANK_KEY", environ={}) is None
    assert JinaReranker.from_environ(api_key_env="RERANK_KEY", environ={"RERANK_KEY": " "}) is None
    keyless = JinaReranker.from_environ(api_key_env=None, environ={}, base_url="http://127.0.0.1:1")
    assert keyless is not None
    for r in (made, keyless):
        r.close()


def test_rerank_url() -> None:
    assert rerank_url("https://api.jina.ai/v1") == "https://api.jina.ai/v1/rerank"
    assert rerank_url("https://api.jina.ai/v1/") == "https://api.jina.ai/v1/rerank"
    assert rerank_url("http://127.0.0.1:8080/rerank") == "http://127.0.0.1:8080/rerank"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x.example",
        "api.jina.ai/v1",
        "https://",
        "https://u:p@x.example",
        "https://x.example?a=1",
    ],
)
def test_bad_base_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError) as raised:
        JinaReranker(base_url=url, api_key=KEY)
    assert KEY not in str(raised.value)


@pytest.mark.parametrize(
    "options",
    [{"model": " "}, {"timeout_s": 0}, {"timeout_s": math.inf}, {"max_document_chars": 0}],
)
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        JinaReranker(api_key=KEY, **options)


def test_parse_rerank_response_directly() -> None:
    body = {"results": [{"index": 1, "relevance_score": 1}, {"index": 0, "relevance_score": 0}]}
    assert parse_rerank_response(body, 2) == [0.0, 1.0]
    assert parse_rerank_response({"results": []}, 0) == []
    assert parse_rerank_response({"data": []}, 0) is None
    assert parse_rerank_response("results", 1) is None
