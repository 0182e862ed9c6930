"""The in-memory session files pass the `SessionSource` contract; a subclass that forgets a
hook is told which one."""

from __future__ import annotations

import pytest
from pi_hermes_memory.adapters.inmemory.history import InMemorySessionFiles
from pi_hermes_memory.testing import SessionSourceContract


class TestInMemorySessionFiles(SessionSourceContract):
    @pytest.fixture
    def session_source(self) -> InMemorySessionFiles:
        return InMemorySessionFiles()

    def write_session(self, source: InMemorySessionFiles, name: str, data: bytes) -> None:
        source.write(f"/sessions/{name}", data)

    def append_session(self, source: InMemorySessionFiles, name: str, data: bytes) -> None:
        source.append(f"/sessions/{name}", data)

    def remove_session(self, source: InMemorySessionFiles, name: str) -> None:
        source.delete(f"/sessions/{name}")


def test_a_missing_hook_is_named() -> None:
    class Forgetful(SessionSourceContract):
        pass

    with pytest.raises(NotImplementedError, match="write_session"):
        Forgetful().test_a_new_file_is_listed_once_with_its_size(InMemorySessionFiles())


def test_the_contract_catches_a_source_that_loses_appends() -> None:
    class Truncating(InMemorySessionFiles):
        def read(self, path: str, offset: int, length: int) -> bytes:
            return super().read(path, offset, length)[:1]

    class TestTruncating(TestInMemorySessionFiles):
        pass

    with pytest.raises(AssertionError):
        TestTruncating().test_reads_return_the_bytes_asked_for(Truncating())
