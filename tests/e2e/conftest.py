"""Fixtures shared by the end-to-end tests that talk to the local embedding fixture server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.embedding_server import EmbeddingServer, serve


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    """The fixture embedding (and rerank) server on 127.0.0.1."""
    with serve() as s:
        yield s


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An agent root that does not exist yet (modules that need another one override it)."""
    return tmp_path / "agent"
