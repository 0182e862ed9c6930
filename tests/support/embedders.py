"""An in-process `Embedder` for unit tests: the fixture server's hashed bag of words, no HTTP."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pi_hermes_memory.errors import EmbeddingFailed

from tests.support.embedding_server import bag_vector


class BagEmbedder:
    """Deterministic vectors (see `tests.support.embedding_server.bag_vector`).

    `fail`: every call raises `EmbeddingFailed`; `fail_texts`: a call containing one of them
    does; `on_call(kind, texts)` runs first (to check locks, count, …). Calls are recorded.
    """

    def __init__(self, dimension: int = 64, model: str = "bag-of-words") -> None:
        self.model_id = f"openai-compatible/{model}"
        self.size = dimension
        self.dimension: int | None = None
        self.calls: list[tuple[str, list[str]]] = []
        self.fail = False
        self.fail_texts: set[str] = set()
        self.on_call: Callable[[str, list[str]], None] | None = None

    def embed(self, texts: Sequence[str], *, kind: str) -> Any:
        texts = list(texts)
        self.calls.append((kind, texts))
        if self.on_call is not None:
            self.on_call(kind, texts)
        if self.fail or self.fail_texts.intersection(texts):
            raise EmbeddingFailed("timeout", "http://embedder.test", "no answer within 3000 ms")
        matrix = np.stack([bag_vector(t, self.size) for t in texts]) if texts else None
        if matrix is None:
            return np.zeros((0, self.size), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        self.dimension = self.size
        return matrix.astype(np.float32)

    @property
    def texts(self) -> list[str]:
        return [t for _, batch in self.calls for t in batch]
