"""The in-memory replicas (skill folders, memory documents) pass the `Replicas` contract; a
broken one fails it, and a subclass that forgets a hook is told which one."""

from __future__ import annotations

import pytest
from pi_hermes_memory.adapters.inmemory.skill_folders import InMemorySkillFolders
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown
from pi_hermes_memory.domain.memory.document import target_of
from pi_hermes_memory.memory.documents import MemoryReplicas
from pi_hermes_memory.ports.store import UNCHECKED
from pi_hermes_memory.testing import ReplicasContract

from tests.support.replica_documents import memory_file, skill_folder


class TestInMemorySkillFolders(ReplicasContract):
    @pytest.fixture
    def replicas(self) -> InMemorySkillFolders:
        return InMemorySkillFolders()

    def stream_name(self, n: int) -> str:
        return f"skill:global:s{n}"

    def document(self, n: int) -> bytes:
        return skill_folder(n)

    def edit_by_hand(self, replicas: InMemorySkillFolders, stream: str, data: bytes) -> None:
        replicas.folders[stream] = data


class TestInMemoryMemoryReplicas(ReplicasContract):
    @pytest.fixture
    def replicas(self) -> MemoryReplicas:
        return MemoryReplicas(InMemoryMarkdown())

    def stream_name(self, n: int) -> str:
        return ("memory:memory", "memory:user", "memory:project")[n]

    def document(self, n: int) -> bytes:
        return memory_file(n)

    def edit_by_hand(self, replicas: MemoryReplicas, stream: str, data: bytes) -> None:
        markdown = replicas.markdown
        assert isinstance(markdown, InMemoryMarkdown)
        markdown.files[target_of(stream)] = data


def test_the_contract_catches_replicas_that_overwrite_a_save() -> None:
    class Careless(InMemorySkillFolders):
        def write(self, stream: str, data: bytes, *, expected: object = UNCHECKED) -> None:
            super().write(stream, data)

    with pytest.raises(AssertionError):
        TestInMemorySkillFolders().test_a_save_made_since_the_read_is_never_overwritten(Careless())


def test_the_contract_catches_replicas_sharing_one_identity() -> None:
    class OneName(InMemorySkillFolders):
        def replica(self, stream: str) -> str:
            return self.name

    with pytest.raises(AssertionError):
        TestInMemorySkillFolders().test_each_stream_has_its_own_name_and_identity(OneName())


def test_a_missing_hook_is_named() -> None:
    class Forgetful(ReplicasContract):
        pass

    with pytest.raises(NotImplementedError, match="stream_name"):
        Forgetful().test_write_then_read_gives_the_bytes(InMemorySkillFolders())
