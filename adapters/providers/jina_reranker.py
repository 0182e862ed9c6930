"""A Jina-compatible cross-encoder reranker over HTTP (the `Reranker` port; ADR 0018).

`POST <baseUrl>/rerank` with `{"model", "query", "documents", "top_n"}`; the answer's
`results` carry `index` (into `documents`) and `relevance_score`, in any order. `top_n` is the
number of documents, so every document must come back exactly once. Any failure (transport,
timeout, non-2xx status, a body that is not that shape, a missing, repeated or out-of-range
index, a non-finite score) answers None, logged by kind only, and the pipeline falls back to
cosine. The API key is sent as `Authorization: Bearer …` and appears nowhere else: not in
`repr`, logs or exceptions; neither does the URL (it may carry a private host or path).

Servers answering a bare list (`[{"index", "score"}]`, Hugging Face TEI) are accepted too;
`scores_are_logits=True` squashes raw logits (llama.cpp) with a sigmoid.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
from pi_hermes_memory.log import library_logger

DEFAULT_RERANK_BASE_URL: Final = "https://api.jina.ai/v1"
DEFAULT_RERANK_MODEL: Final = "jina-reranker-v2-base-multilingual"
DEFAULT_RERANK_TIMEOUT_S: Final = 5.0
#: Characters of each document (and of the query) sent; cross-encoders truncate far earlier.
MAX_DOCUMENT_CHARS: Final = 4096


def rerank_url(base_url: str) -> str:
    """`<base_url>/rerank` (a base URL already ending in `/rerank` is used as it is)."""
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("rerank base URL must be an http or https URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("rerank base URL must not embed credentials")
    if parts.query or parts.fragment:
        raise ValueError("rerank base URL must not have a query or fragment")
    return url if url.endswith("/rerank") else url + "/rerank"


def parse_rerank_response(body: object, count: int) -> list[float] | None:
    """The scores in document order, or None unless every index 0..count-1 comes exactly once
    with a finite number."""
    results = body.get("results") if isinstance(body, dict) else body
    if not isinstance(results, list) or len(results) != count:
        return None
    scores: list[float | None] = [None] * count
    for item in results:
        if not isinstance(item, dict):
            return None
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            return None
        if isinstance(score, bool) or not isinstance(score, int | float):
            return None
        if not math.isfinite(score) or scores[index] is not None:
            return None
        scores[index] = float(score)
    filled = [s for s in scores if s is not None]
    return filled if len(filled) == count else None


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


class JinaReranker:
    """The `Reranker` port over a Jina-compatible `/rerank` endpoint. One `httpx.Client`
    (connection reuse); `close()` it, or use it as a context manager."""

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_RERANK_BASE_URL,
        model: str = DEFAULT_RERANK_MODEL,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_RERANK_TIMEOUT_S,
        max_document_chars: int = MAX_DOCUMENT_CHARS,
        scores_are_logits: bool = False,
        transport: httpx.BaseTransport | None = None,
        logger: Any = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("rerank model must be a non-empty string")
        if isinstance(timeout_s, bool) or not (
            isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0
        ):
            raise ValueError("rerank timeout must be a positive number of seconds")
        if isinstance(max_document_chars, bool) or not isinstance(max_document_chars, int):
            raise ValueError("max_document_chars must be an integer")
        if max_document_chars < 1:
            raise ValueError("max_document_chars must be >= 1")
        self._url = rerank_url(base_url)
        self.model = model.strip()
        self.timeout_s = float(timeout_s)
        self._max_chars = max_document_chars
        self._logits = scores_are_logits
        self._log = logger or library_logger()
        headers = {"Accept": "application/json"}
        key = (api_key or "").strip()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.timeout_s),
            transport=transport,
            headers=headers,
            follow_redirects=False,
        )

    @classmethod
    def from_environ(
        cls,
        *,
        api_key_env: str | None,
        environ: Mapping[str, str] | None = None,
        **options: Any,
    ) -> JinaReranker | None:
        """A reranker whose key is read from the environment variable named `api_key_env`
        (like `embedding.apiKeyEnv`); None (reranking off) when that variable is unset or
        empty. `api_key_env=None`: no key (a local server)."""
        if api_key_env is None:
            return cls(api_key=None, **options)
        key = (os.environ if environ is None else environ).get(api_key_env, "").strip()
        return cls(api_key=key, **options) if key else None

    def __repr__(self) -> str:
        return f"JinaReranker(model={self.model!r})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> JinaReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None:
        docs = [d[: self._max_chars] for d in documents]
        if not docs:
            return []
        payload = {
            "model": self.model,
            "query": query[: self._max_chars],
            "documents": docs,
            "top_n": len(docs),
        }
        try:
            response = self._client.post(self._url, json=payload)
        except httpx.TimeoutException as exc:
            self._fail("timeout", error=type(exc).__name__)
            return None
        except Exception as exc:  # transport errors, a closed client, anything: degrade
            self._fail("transport", error=type(exc).__name__)
            return None
        if not response.is_success:
            self._fail("http_status", status=response.status_code)
            return None
        try:
            body = response.json()
        except Exception:  # not JSON, bad encoding
            self._fail("malformed", detail="not json")
            return None
        scores = parse_rerank_response(body, len(docs))
        if scores is None:
            self._fail("malformed", detail="results do not match the documents")
            return None
        return [_sigmoid(s) for s in scores] if self._logits else scores

    def _fail(self, reason: str, **fields: Any) -> None:
        self._log.warning("rerank.failed", reason=reason, model=self.model, **fields)


__all__ = [
    "DEFAULT_RERANK_BASE_URL",
    "DEFAULT_RERANK_MODEL",
    "DEFAULT_RERANK_TIMEOUT_S",
    "MAX_DOCUMENT_CHARS",
    "JinaReranker",
    "parse_rerank_response",
    "rerank_url",
]
