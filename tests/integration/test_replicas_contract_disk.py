"""The replicas on disk (skill folders, memory Markdown files) pass the `Replicas` contract."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.domain.memory.document import target_of
from pi_hermes_memory.domain.skills.bundle import unpack
from pi_hermes_memory.memory.documents import MemoryReplicas
from pi_hermes_memory.testing import ReplicasContract

from tests.support.replica_documents import memory_file, skill_folder


class TestSkillFolders(ReplicasContract):
    @pytest.fixture
    def replicas(self, tmp_path: Path) -> SkillFolders:
        return SkillFolders(global_root=tmp_path / "skills", project_root=tmp_path / "projects")

    def stream_name(self, n: int) -> str:
        return ("skill:global:deploy", "skill:project:web:deploy", "skill:global:review")[n]

    def document(self, n: int) -> bytes:
        return skill_folder(n)

    def edit_by_hand(self, replicas: SkillFolders, stream: str, data: bytes) -> None:
        folder = replicas.folder(stream)
        shutil.rmtree(folder, ignore_errors=True)
        for rel, content in unpack(data).items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(content)


class TestMarkdownFileReplicas(ReplicasContract):
    @pytest.fixture
    def replicas(self, tmp_path: Path) -> MemoryReplicas:
        return MemoryReplicas(
            MarkdownFiles(tmp_path / "pi-hermes-memory", tmp_path / "projects-memory")
        )

    def stream_name(self, n: int) -> str:
        return ("memory:memory", "memory:user", "memory:project")[n]

    def document(self, n: int) -> bytes:
        return memory_file(n)

    def edit_by_hand(self, replicas: MemoryReplicas, stream: str, data: bytes) -> None:
        markdown = replicas.markdown
        assert isinstance(markdown, MarkdownFiles)
        path = markdown.path_for(target_of(stream))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("r+b" if path.exists() else "wb") as f:  # saved in place: same inode
            f.write(data)
            f.truncate()
