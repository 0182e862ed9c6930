"""An embedder wrapper that keeps vectors on disk between benchmark runs.

    DiskCachedEmbedder(embedder, directory)

Embedding LoCoMo's units with the offline model takes minutes of CPU on a shared machine;
the benchmarks that sweep settings (`tests.bench.false_recall`, `tests.bench.floor`) ask the
same texts again on every run. Vectors are stored per (model id, kind, sha256 of the text) in
one `.npy` file per (model, kind) plus a text index, under a directory the caller chooses
(default: `$TMPDIR/pi-hermes-bench-vectors`, never inside the repository). The cache is only an
accelerator: a missing or unreadable file means the texts are embedded again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

Kind = Literal["query", "passage"]

#: Where vectors are kept unless a directory is given.
DEFAULT_DIRECTORY = Path(tempfile.gettempdir()) / "pi-hermes-bench-vectors"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DiskCachedEmbedder:
    """The wrapped embedder's vectors, remembered on disk (see the module)."""

    def __init__(self, embedder: object, directory: Path | None = None) -> None:
        self._embedder = embedder
        self._directory = directory or DEFAULT_DIRECTORY
        self._loaded: dict[str, dict[str, npt.NDArray[np.float32]]] = {}

    @property
    def model_id(self) -> str:
        return str(self._embedder.model_id)  # type: ignore[attr-defined]

    @property
    def dimension(self) -> int:
        return int(self._embedder.dimension)  # type: ignore[attr-defined]

    def _stem(self, kind: Kind) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.model_id)
        return self._directory / f"{safe}.{kind}"

    def _table(self, kind: Kind) -> dict[str, npt.NDArray[np.float32]]:
        if kind in self._loaded:
            return self._loaded[kind]
        table: dict[str, npt.NDArray[np.float32]] = {}
        stem = self._stem(kind)
        try:
            keys = json.loads(stem.with_suffix(stem.suffix + ".json").read_text("utf-8"))
            matrix = np.load(stem.with_suffix(stem.suffix + ".npy"))
            if isinstance(keys, list) and matrix.ndim == 2 and matrix.shape[0] == len(keys):
                table = {str(k): matrix[i].astype(np.float32) for i, k in enumerate(keys)}
        except (OSError, ValueError):
            table = {}
        self._loaded[kind] = table
        return table

    def _save(self, kind: Kind) -> None:
        table = self._loaded[kind]
        if not table:
            return
        self._directory.mkdir(parents=True, exist_ok=True)
        stem = self._stem(kind)
        keys = list(table)
        npy = stem.with_suffix(stem.suffix + ".npy")
        tmp = npy.with_suffix(".tmp.npy")
        np.save(tmp, np.stack([table[k] for k in keys]))
        os.replace(tmp, npy)
        index = stem.with_suffix(stem.suffix + ".json")
        tmp_index = index.with_suffix(".tmp")
        tmp_index.write_text(json.dumps(keys), "utf-8")
        os.replace(tmp_index, index)

    def embed(self, texts: Sequence[str], *, kind: Kind) -> npt.NDArray[np.float32]:
        table = self._table(kind)
        missing = [t for t in dict.fromkeys(texts) if _key(t) not in table]
        if missing:
            vectors = np.asarray(
                self._embedder.embed(missing, kind=kind),  # type: ignore[attr-defined]
                dtype=np.float32,
            )
            table.update((_key(t), v) for t, v in zip(missing, vectors, strict=True))
            self._save(kind)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([table[_key(t)] for t in texts])


__all__ = ["DEFAULT_DIRECTORY", "DiskCachedEmbedder"]
