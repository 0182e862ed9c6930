"""Documents for the `ReplicasContract` subclasses: skill folders and memory files."""

from __future__ import annotations

from pi_hermes_memory.domain.skills.bundle import pack


def skill_folder(n: int) -> bytes:
    """A packed skill folder, longer for each n; odd n carry a support file."""
    files = {"SKILL.md": b"---\nname: deploy\n---\n" + b"step\n" * (n + 1)}
    if n % 2:
        files["references/notes.md"] = b"notes\n" * n
    return pack(files)


def memory_file(n: int) -> bytes:
    return f"fact number {n}\n".encode() * (n + 1)
