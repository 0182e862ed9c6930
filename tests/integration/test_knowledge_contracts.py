"""The shipped knowledge adapters pass the `KnowledgeIndex` and `KnowledgeSource` contracts on
a real SQLite file and real folders; a broken adapter of each fails them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import pytest
from pi_hermes_memory.adapters.files.knowledge_folders import KnowledgeFiles
from pi_hermes_memory.adapters.sqlite.knowledge import SqliteKnowledgeIndex
from pi_hermes_memory.ports.knowledge import FileChunks, SourceFile
from pi_hermes_memory.testing import KnowledgeIndexContract, KnowledgeSourceContract


class TestSqliteKnowledgeIndex(KnowledgeIndexContract):
    @pytest.fixture
    def knowledge_index(self, tmp_path: Path) -> Iterator[SqliteKnowledgeIndex]:
        index = SqliteKnowledgeIndex(tmp_path / "state" / "knowledge.db")
        yield index
        index.close()


class TestKnowledgeFiles(KnowledgeSourceContract):
    @pytest.fixture
    def knowledge_source(self) -> KnowledgeFiles:
        return KnowledgeFiles()

    @pytest.fixture
    def knowledge_base(self, tmp_path: Path) -> str:
        return str(tmp_path)

    def write_document(self, source: KnowledgeFiles, path: str, data: bytes) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)

    def remove_document(self, source: KnowledgeFiles, path: str) -> None:
        Path(path).unlink()


def test_the_index_contract_catches_an_index_that_keeps_old_chunks(tmp_path: Path) -> None:
    class Appending(SqliteKnowledgeIndex):
        """Adds a rewritten file's chunks beside its old ones (forgets to drop them)."""

        def write(self, items: Sequence[FileChunks]) -> int:
            for item in items:
                if item.chunks is not None and item.file.path in self.known():
                    moved = item.file.path + "#again"
                    item = attrs.evolve(item, file=attrs.evolve(item.file, path=moved))
                super().write([item])
            return sum(len(i.chunks or ()) for i in items)

    index = Appending(tmp_path / "knowledge.db")
    try:
        with pytest.raises(AssertionError):
            TestSqliteKnowledgeIndex().test_a_rewrite_replaces_the_files_chunks_whole(index)
    finally:
        index.close()


def test_the_index_contract_catches_a_lock_that_is_always_taken(tmp_path: Path) -> None:
    import contextlib

    class Careless(SqliteKnowledgeIndex):
        @contextlib.contextmanager
        def run_lock(self) -> Iterator[bool]:
            yield True

    index = Careless(tmp_path / "knowledge.db")
    try:
        with pytest.raises(AssertionError):
            TestSqliteKnowledgeIndex().test_one_run_at_a_time(index)
    finally:
        index.close()


def test_the_source_contract_catches_a_walk_that_shows_hidden_files(tmp_path: Path) -> None:
    class Indiscreet(KnowledgeFiles):
        def scan(self, roots: Sequence[str], skipped: Counter[str]) -> Iterator[SourceFile]:
            yield from super().scan(roots, skipped)
            for root in roots:
                for path in sorted(Path(root).rglob(".*.md")):
                    yield SourceFile(  # a hidden file, reported
                        path=str(path.resolve()),
                        root=str(Path(root).resolve()),
                        rel=path.relative_to(root).as_posix(),
                        size=path.stat().st_size,
                        mtime_ns=path.stat().st_mtime_ns,
                        kind="markdown",
                    )

    with pytest.raises(AssertionError):
        TestKnowledgeFiles().test_what_is_left_out_is_counted(Indiscreet(), str(tmp_path))


def test_a_missing_hook_is_named(tmp_path: Path) -> None:
    class Forgetful(KnowledgeSourceContract):
        pass

    with pytest.raises(NotImplementedError, match="write_document"):
        Forgetful().test_is_dir_and_real_path(KnowledgeFiles(), str(tmp_path))
