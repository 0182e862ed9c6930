"""A deterministic OpenAI-compatible `/embeddings` server on 127.0.0.1 for tests.

Vectors are hashed bags of words: each token (lower-cased word, CJK code-point bigram), after
a small synonym table and a crude suffix stemmer, adds ±1 to one of `dimension` components
(blake2b of the token picks the component and the sign). Texts sharing words therefore get a
high cosine, and paraphrases that the synonym table maps onto each other ("prod deployments"
/ "production deploys") get a cosine near 1 while their token Jaccard stays low.

Switches make it misbehave: `mode` = "ok" | "status" (answer `status`) | "timeout" (wait
`delay` seconds first) | "wrong_count" | "wrong_dimension" | "malformed" | "non_finite";
"rerank_status" / "rerank_slow" do the same to `/rerank`;
`fail_texts`: a request containing one of these texts is answered with HTTP 500 (a partial
failure of a batch). `data` comes back in reverse order unless `shuffle` is False. Each
request is recorded in `requests` (path, JSON body, Authorization header).

Use `serve()` as a context manager, or the `embedding_server` fixture::

    from tests.support.embedding_server import EmbeddingServer, serve

    @pytest.fixture
    def server() -> Iterator[EmbeddingServer]:
        with serve() as s:
            yield s
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from pi_hermes_memory.domain.search.similarity import is_cjk

from tests.support.local_server import LocalPostServer

FIXTURE_KEY = "sk-fixture-0123456789abcdef"
#: The base URL path: it stands for a tenant/token path that must never reach logs or errors.
SECRET_PATH = "/v1/tenant-s3cr3t-path"

DEFAULT_SYNONYMS: Mapping[str, str] = {
    "prod": "production",
    "db": "database",
    "k8s": "kubernetes",
    "repo": "repository",
    "ci": "pipeline",
    "builds": "pipeline",
    "build": "pipeline",
}
_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ments", "ment", "ing", "ed", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def tokens(text: str, synonyms: Mapping[str, str] = DEFAULT_SYNONYMS) -> list[str]:
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group()
        if any(is_cjk(ch) for ch in word):
            cjk = "".join(ch for ch in word if is_cjk(ch))
            out.extend(cjk[i : i + 2] for i in range(max(len(cjk) - 1, 1)))
            continue
        out.append(_stem(synonyms.get(word, word)))
    return out


def bag_vector(
    text: str, dimension: int, synonyms: Mapping[str, str] = DEFAULT_SYNONYMS
) -> NDArray[np.float64]:
    vector = np.zeros(dimension, dtype=np.float64)
    for token in tokens(text, synonyms) or ["<empty>"]:
        digest = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
        vector[digest % dimension] += 1.0 if (digest >> 40) & 1 else -1.0
    if not vector.any():
        vector[0] = 1.0
    return vector


def cosine(a: NDArray[Any], b: NDArray[Any]) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class EmbeddingServer(LocalPostServer):
    def __init__(
        self,
        *,
        dimension: int = 64,
        api_key: str = FIXTURE_KEY,
        synonyms: Mapping[str, str] = DEFAULT_SYNONYMS,
    ) -> None:
        self.dimension = dimension
        self.api_key = api_key
        self.synonyms = dict(synonyms)
        self.mode = "ok"
        self.status = 500
        self.delay = 2.0
        self.shuffle = True
        self.fail_texts: set[str] = set()
        self.rerank_scores: dict[str, float] = {}
        self.requests: list[dict[str, Any]] = []
        super().__init__()

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL to configure (`/embeddings` is appended by the client)."""
        return f"http://127.0.0.1:{self.port}{SECRET_PATH}"

    def reset(self) -> None:
        self.mode = "ok"
        self.fail_texts.clear()
        self.rerank_scores.clear()
        self.requests.clear()

    def vector(self, text: str) -> NDArray[np.float64]:
        return bag_vector(text, self.dimension, self.synonyms)

    def embedded_texts(self) -> list[str]:
        return [text for request in self.requests for text in request["body"].get("input", [])]

    # -- one request ------------------------------------------------------------------------

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        with contextlib.suppress(OSError):  # the client may have given up (timeout)
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        self.requests.append(
            {
                "path": handler.path,
                "body": body,
                "authorization": handler.headers.get("Authorization"),
            }
        )
        if handler.path.endswith("/rerank"):
            return self._rerank(handler, body)
        if not handler.path.endswith("/embeddings"):
            return self._reply(handler, 404, b'{"error": "not found"}')
        if handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            # like some real servers, echo (part of) what was sent: clients must never show it
            echo = json.dumps({"error": f"bad key {handler.headers.get('Authorization')}"})
            return self._reply(handler, 401, echo.encode())
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return self._reply(handler, 400, b'{"error": "input must be a list of strings"}')
        if self.mode == "timeout" and self._release.wait(self.delay):
            return None  # stopped while waiting: the client is long gone
        if self.mode == "status" or self.fail_texts.intersection(texts):
            code = self.status if self.mode == "status" else 500
            return self._reply(handler, code, b'{"error": "fixture failure"}')
        if self.mode == "malformed":
            return self._reply(handler, 200, b"{not json")
        dimension = int(body.get("dimensions") or self.dimension)
        vectors = [bag_vector(t, dimension, self.synonyms).tolist() for t in texts]
        if self.mode == "wrong_count":
            vectors = vectors[:-1] if len(vectors) > 1 else vectors * 2
        if self.mode == "wrong_dimension":
            vectors[-1] = [*vectors[-1], 0.5]  # one vector longer than the others
        if self.mode == "non_finite":
            vectors[0][0] = float("nan")  # json.dumps writes NaN, which json.loads accepts
        data: list[dict[str, Any]] = [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ]
        payload_text = json.dumps(
            {
                "object": "list",
                "data": list(reversed(data)) if self.shuffle else data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        )
        return self._reply(handler, 200, payload_text.encode())

    def _rerank(self, handler: BaseHTTPRequestHandler, body: Mapping[str, Any]) -> None:
        """A Jina-compatible `/rerank`: the share of the query's tokens a document holds
        (`rerank_scores` overrides by document text), results in reverse order."""
        if handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._reply(handler, 401, b'{"error": "bad key"}')
        if self.mode == "rerank_status":
            return self._reply(handler, 503, b'{"error": "fixture failure"}')
        if self.mode == "rerank_slow" and self._release.wait(self.delay):
            return None  # stopped while waiting: the client is long gone
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not isinstance(documents, list):
            return self._reply(handler, 400, b'{"error": "query and documents are required"}')
        wanted = set(tokens(query, self.synonyms))
        results = []
        for i, doc in enumerate(documents):
            have = set(tokens(str(doc), self.synonyms))
            score = self.rerank_scores.get(str(doc), len(wanted & have) / max(len(wanted), 1))
            results.append({"index": i, "relevance_score": score})
        payload = json.dumps({"model": body.get("model"), "results": list(reversed(results))})
        return self._reply(handler, 200, payload.encode())


@contextlib.contextmanager
def serve(**kw: Any) -> Iterator[EmbeddingServer]:
    server = EmbeddingServer(**kw).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    """A started fixture server (import it into a conftest.py, or wrap `serve()`)."""
    with serve() as server:
        yield server
