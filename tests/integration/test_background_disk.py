"""The dense floor's background sample on a real SQLite file (ADR 0069): embedded once per
model, stored in the file, read back by the next process, embedded again for another model."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.search.background import BACKGROUND, BACKGROUND_DIGEST
from pi_hermes_memory.ports.search import ScopeClause
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.testing.contracts import EventWriter

from tests.support.embedders import BagEmbedder

SCOPE = VectorScope(clauses=(ScopeClause(Target.MEMORY),))


def _search(path: Path, embedder: BagEmbedder) -> np.ndarray:
    storage = SqliteStorage(path)
    try:
        embeddings = EmbeddingService(embedder=embedder, store=SqliteVectorStore(storage))
        found = embeddings.search_vectors(SCOPE, "production deploys")
        assert found is not None and found.background is not None
        assert found.calibration() is not None
        return found.background
    finally:
        storage.close()


def test_the_background_is_embedded_once_per_model_and_kept_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    storage = SqliteStorage(path)
    EventWriter(storage).add("Production deploys use the blue green script")
    storage.close()
    embedder = BagEmbedder()
    first = _search(path, embedder)
    assert embedder.calls.count(("passage", list(BACKGROUND))) == 1
    second = _search(path, embedder)  # another process: read from the file
    assert embedder.calls.count(("passage", list(BACKGROUND))) == 1
    np.testing.assert_allclose(second, first, atol=1e-6)
    raw = apsw.Connection(str(path))
    rows = list(raw.execute("SELECT model_id, sample, dimension FROM embedding_background"))
    assert rows == [(embedder.model_id, BACKGROUND_DIGEST, first.shape[1])]
    embedder.model_id = "openai-compatible/another"
    _search(path, embedder)
    assert embedder.calls.count(("passage", list(BACKGROUND))) == 2
    assert len(list(raw.execute("SELECT model_id FROM embedding_background"))) == 2
    raw.close()
