"""A memory file that is a symlink to a file outside the memory folders (issue 26 §6): it is
neither rewritten (no header prepended to the target) nor imported; writes to its document are
refused with one clear line, the other documents keep working. A link that stays inside the
folders is still followed."""

from __future__ import annotations

import os
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.errors import HermesMemoryError

KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nsome key material that must stay as it is\n"


def _open(root: Path, cwd: Path) -> object:
    return pi_hermes_memory.open(agent_root=root, cwd=cwd, project="web", environ={})


def _memory_dir(tmp_path: Path) -> Path:
    with _open(tmp_path / "agent", tmp_path) as memory:  # creates the layout
        assert memory.add("Prefers short answers", target="user").success  # type: ignore[attr-defined]
        path = Path(memory.config.memory_dir)  # type: ignore[attr-defined]
    return path


def test_a_memory_md_linked_outside_is_never_written_nor_imported(tmp_path: Path) -> None:
    folder = _memory_dir(tmp_path)
    outside = tmp_path / "secret" / "id_ed25519"
    outside.parent.mkdir()
    outside.write_bytes(KEY + b"\n\xc2\xa7\nimported line from the key file\n")
    link = folder / "MEMORY.md"
    if link.exists():
        link.unlink()
    os.symlink(outside, link)
    before = outside.read_bytes()
    with _open(tmp_path / "agent", tmp_path) as memory:
        refused = None
        try:
            result = memory.add("Deploys run on Fridays", target="memory")  # type: ignore[attr-defined]
            assert not result.success
            refused = result.message
        except HermesMemoryError as exc:
            refused = str(exc)
        assert "outside the memory folders" in refused and "neither read nor written" in refused
        texts = [e.text for e in memory.entries()]  # type: ignore[attr-defined]
        assert "imported line from the key file" not in " ".join(texts)
        assert memory.add("Likes tea", target="user").success  # type: ignore[attr-defined]
        memory.flush()  # type: ignore[attr-defined]
    assert outside.read_bytes() == before
    assert link.is_symlink()


def test_a_link_inside_the_memory_folder_is_still_followed(tmp_path: Path) -> None:
    folder = _memory_dir(tmp_path)
    real = folder / "kept" / "MEMORY.md"
    real.parent.mkdir()
    link = folder / "MEMORY.md"
    if link.exists():
        real.write_bytes(link.read_bytes())
        link.unlink()
    os.symlink(real, link)
    with _open(tmp_path / "agent", tmp_path) as memory:
        assert memory.add("Deploys run on Fridays", target="memory").success  # type: ignore[attr-defined]
    assert link.is_symlink() and "Deploys run on Fridays" in real.read_text()


@pytest.mark.parametrize("name", ["USER.md", "failures.md"])
def test_other_memory_files_linked_outside_are_refused_too(tmp_path: Path, name: str) -> None:
    folder = _memory_dir(tmp_path)
    outside = tmp_path / "elsewhere.txt"
    outside.write_bytes(b"not a memory file\n")
    link = folder / name
    if link.exists():
        link.unlink()
    os.symlink(outside, link)
    target = {"USER.md": "user", "failures.md": "failure"}[name]
    with _open(tmp_path / "agent", tmp_path) as memory:
        try:
            result = memory.add("Something new to keep", target=target)  # type: ignore[attr-defined]
            message = result.message
            assert not result.success
        except HermesMemoryError as exc:
            message = str(exc)
        assert "outside the memory folders" in message
    assert outside.read_bytes() == b"not a memory file\n"
