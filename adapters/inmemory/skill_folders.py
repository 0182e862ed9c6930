"""Skill folders in memory (for tests and embedding): the `Replicas` of the skill streams as
packed byte strings, like `SkillFolders` keeps them on disk (`domain/skills/bundle.py`)."""

from __future__ import annotations

import hashlib
import threading

from pi_hermes_memory.domain.skills.bundle import unpack
from pi_hermes_memory.domain.skills.skill_md import SKILL_FILE
from pi_hermes_memory.errors import MarkdownChanged
from pi_hermes_memory.ports.store import UNCHECKED

__all__ = ["InMemorySkillFolders"]


class InMemorySkillFolders:
    """`Replicas` of `skill:<id>` streams; `folders` maps a stream to its packed folder (a
    test edits a folder by hand by replacing its bytes)."""

    def __init__(self, name: str = "in-memory") -> None:
        self.folders: dict[str, bytes] = {}
        self.name = name
        self.lock = threading.RLock()

    def read(self, stream: str) -> bytes | None:
        return self.folders.get(stream, b"")

    def write(self, stream: str, data: bytes, *, expected: object = UNCHECKED) -> None:
        if expected is not UNCHECKED and self.stamp(stream) != expected:
            raise MarkdownChanged(f"<{stream}> changed while it was rendered")
        if data:
            self.folders[stream] = data
        else:
            self.folders.pop(stream, None)

    def stamp(self, stream: str) -> object:
        data = self.folders.get(stream)
        return None if data is None else hashlib.sha256(data).digest()

    def describe(self, stream: str) -> str:
        return f"<{stream}>"

    def replica(self, stream: str) -> str:
        return f"{self.name}/{stream}"

    def slugs(self, project: str | None) -> list[str]:
        """The ids of the folders holding a SKILL.md: global ones and `project`'s."""
        found = []
        for stream, data in sorted(self.folders.items()):
            skill_id = stream.removeprefix("skill:")
            mine = skill_id.startswith("global:") or (
                project is not None and skill_id.startswith(f"project:{project}:")
            )
            if mine and SKILL_FILE in unpack(data):
                found.append(skill_id)
        return found
