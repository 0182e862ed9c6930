"""The Pi sessions tree on disk passes the `SessionSource` contract."""

from __future__ import annotations

from pathlib import Path

import pytest
from pi_hermes_memory.adapters.files.session_files import (
    ClaudeCodeSessionFiles,
    PiSessionFiles,
    SessionSources,
)
from pi_hermes_memory.testing import SessionSourceContract


class TestPiSessionFiles(SessionSourceContract):
    @pytest.fixture
    def session_source(self, tmp_path: Path) -> PiSessionFiles:
        return PiSessionFiles(tmp_path / "sessions")

    def write_session(self, source: PiSessionFiles, name: str, data: bytes) -> None:
        path = source.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def append_session(self, source: PiSessionFiles, name: str, data: bytes) -> None:
        with open(source.root / name, "ab") as f:
            f.write(data)

    def remove_session(self, source: PiSessionFiles, name: str) -> None:
        (source.root / name).unlink()


class TestClaudeCodeSessionFiles(TestPiSessionFiles):
    """Claude Code's `projects/<folder>/<session>.jsonl`, listed with Pi's as one source."""

    @pytest.fixture
    def session_source(self, tmp_path: Path) -> SessionSources:  # type: ignore[override]
        pi = PiSessionFiles(tmp_path / "sessions")
        return SessionSources(pi, ClaudeCodeSessionFiles(tmp_path / ".claude" / "projects"))

    def _root(self, source: SessionSources) -> Path:
        return source.sources[1].root

    def write_session(self, source: SessionSources, name: str, data: bytes) -> None:  # type: ignore[override]
        path = self._root(source) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def append_session(self, source: SessionSources, name: str, data: bytes) -> None:  # type: ignore[override]
        with open(self._root(source) / name, "ab") as f:
            f.write(data)

    def remove_session(self, source: SessionSources, name: str) -> None:  # type: ignore[override]
        (self._root(source) / name).unlink()
