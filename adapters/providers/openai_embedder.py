"""The `Embedder` port over an OpenAI-compatible `/embeddings` endpoint, on httpx.

Request: `POST {baseUrl}/embeddings` with `{"model", "input"}`, plus `dimensions` when
configured and a task-aware `task` field (the Jina convention: `taskQuery` for queries,
`taskPassage` for stored texts) when configured; `Authorization: Bearer <key>`, the key taken
from the environment variable named by `apiKeyEnv` (the config parser already read it).
Answer: `data` is sorted by `index` (servers may answer out of order); the count, each index,
one dimension for all vectors (and the configured one), and finite float32 values are checked;
vectors are L2-normalised unless the config says the server already did (`normalized`).

Any failure is one `EmbeddingFailed` naming the kind and the redacted host (scheme and host):
never the key, the full base URL (its path may carry a tenant or a token) nor the response
body (some servers echo the key back). Logs carry the same fields.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import httpx
import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.config.settings import EmbeddingConfig
from pi_hermes_memory.errors import EmbeddingFailed
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.ports.vectors import EmbeddingKind

__all__ = ["MAX_BATCH", "OpenAICompatibleEmbedder"]

#: Texts per request; longer inputs are split into several requests.
MAX_BATCH: Final = 128
_FLOAT32_MAX: Final = float(np.finfo(np.float32).max)


class OpenAICompatibleEmbedder:
    """`embed(texts, kind=...)` → float32 (n, d), L2-normalised; raises `EmbeddingFailed`."""

    def __init__(
        self,
        config: EmbeddingConfig,
        client: httpx.Client | None = None,
        *,
        logger: Any = None,
        max_batch: int = MAX_BATCH,
    ) -> None:
        self._config = config
        self._owns_client = client is None
        self._client = client or httpx.Client()
        self._url = config.base_url.rstrip("/") + "/embeddings"
        self._host = config.redacted_base_url
        self._timeout = httpx.Timeout(config.timeout_ms / 1000)
        self._dimension: int | None = config.dimensions
        self._max_batch = max(1, max_batch)
        self._log = logger or library_logger()

    def __repr__(self) -> str:  # no URL, no key
        return f"OpenAICompatibleEmbedder(model_id={self.model_id!r}, host={self._host!r})"

    @property
    def model_id(self) -> str:
        return self._config.model_id

    @property
    def dimension(self) -> int | None:
        return self._dimension

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind) -> NDArray[np.float32]:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        parts = [
            self._embed_batch(texts[i : i + self._max_batch], kind)
            for i in range(0, len(texts), self._max_batch)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    # -- one request ------------------------------------------------------------------------

    def _fail(self, reason: str, detail: str = "", **fields: Any) -> EmbeddingFailed:
        # debug: the caller (EmbeddingService) logs the failure once, at warning level
        self._log.debug(
            "embedding.request_failed", reason=reason, host=self._host, detail=detail, **fields
        )
        return EmbeddingFailed(reason, self._host, detail)

    def _body(self, texts: list[str], kind: EmbeddingKind) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._config.model, "input": texts}
        if self._config.dimensions is not None:
            body["dimensions"] = self._config.dimensions
        task = self._config.task_query if kind == "query" else self._config.task_passage
        if task is not None:
            body["task"] = task
        return body

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        headers = {"Accept": "application/json"}
        if self._config.api_key:
            headers["Authorization"] = f"Bearer {self._config.api_key}"
        try:
            return self._client.post(self._url, json=body, headers=headers, timeout=self._timeout)
        except httpx.TimeoutException:
            raise self._fail("timeout", f"no answer within {self._config.timeout_ms} ms") from None
        except httpx.HTTPError as exc:  # str(exc) may hold the URL: only the type is kept
            raise self._fail("transport", type(exc).__name__) from None

    def _embed_batch(self, texts: list[str], kind: EmbeddingKind) -> NDArray[np.float32]:
        response = self._post(self._body(texts, kind))
        if response.status_code != 200:
            raise self._fail(
                "http_status", f"HTTP {response.status_code}", status=response.status_code
            )
        try:
            payload = response.json()
        except ValueError:
            raise self._fail("malformed", "the answer is not JSON") from None
        rows = self._rows(payload, len(texts))
        return self._matrix(rows)

    def _rows(self, payload: object, expected: int) -> list[list[Any]]:
        """The embeddings of `payload["data"]` in index order, after the shape checks."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise self._fail("malformed", "the answer has no 'data' list")
        if len(data) != expected:
            raise self._fail("count", f"asked for {expected} vectors, got {len(data)}")
        by_index: dict[int, list[Any]] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if (
                isinstance(index, bool)
                or not isinstance(index, int)
                or not isinstance(vector, list)
            ):
                raise self._fail("malformed", "a 'data' item lacks an integer index or a list")
            if not 0 <= index < expected or index in by_index:
                raise self._fail("count", "the 'data' indexes are not 0..n-1 each once")
            by_index[index] = vector
        return [by_index[i] for i in range(expected)]

    def _matrix(self, rows: list[list[Any]]) -> NDArray[np.float32]:
        lengths = {len(row) for row in rows}
        if len(lengths) != 1 or 0 in lengths:
            raise self._fail("dimension", "the vectors differ in length or are empty")
        (length,) = lengths
        if self._dimension is not None and length != self._dimension:
            raise self._fail("dimension", f"expected {self._dimension} components, got {length}")
        if not all(
            isinstance(x, int | float) and not isinstance(x, bool) for row in rows for x in row
        ):
            raise self._fail("malformed", "a vector holds something other than numbers")
        wide = np.asarray(rows, dtype=np.float64)
        if not np.isfinite(wide).all() or np.abs(wide).max() > _FLOAT32_MAX:
            raise self._fail("non_finite", "a vector holds NaN, infinity or a float32 overflow")
        matrix = wide.astype(np.float32)
        norms = np.linalg.norm(wide, axis=1)
        if not (norms > 0).all() or not all(math.isfinite(n) for n in norms):
            raise self._fail("non_finite", "a vector has zero length")
        if not self._config.normalized:
            matrix = (wide / norms[:, None]).astype(np.float32)
        self._dimension = length
        return np.ascontiguousarray(matrix, dtype=np.float32)
