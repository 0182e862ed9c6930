"""A person's in-place save that lands between the render's last check and its rename is put
back, never orphaned with the replaced inode (the window the editor-race test found)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pi_hermes_memory.adapters.markdown import store as store_module
from pi_hermes_memory.adapters.markdown.format import render_version_line
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import MarkdownChanged


def test_a_save_in_the_last_window_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = MarkdownFiles(tmp_path / "mem", tmp_path / "projects")
    path = files.path_for(Target.MEMORY)
    files.write(Target.MEMORY, b"rendered v1\n")
    seen = files.stamp(Target.MEMORY)
    real = store_module.atomic_write
    saved = b"rendered v1\n\xc2\xa7\ntyped by hand\n"

    def racing(
        target: Path,
        data: bytes,
        *,
        before_replace: Callable[[], None] | None = None,
        **options: Any,
    ) -> None:
        def check_then_save() -> None:
            if before_replace is not None:
                before_replace()  # passes: nothing changed yet
            with path.open("r+b") as f:  # the editor saves in place, right after the check
                f.truncate(0)
                f.write(saved)

        real(target, data, before_replace=check_then_save, **options)

    monkeypatch.setattr(store_module, "atomic_write", racing)
    with pytest.raises(MarkdownChanged):
        files.write(Target.MEMORY, b"rendered v2\n", expected=seen)
    monkeypatch.setattr(store_module, "atomic_write", real)
    assert path.read_bytes() == saved  # the person's save, not the render


def test_no_save_meanwhile_keeps_the_render(tmp_path: Path) -> None:
    files = MarkdownFiles(tmp_path / "mem", tmp_path / "projects")
    files.write(Target.MEMORY, b"rendered v1\n")
    seen = files.stamp(Target.MEMORY)
    files.write(Target.MEMORY, b"rendered v2\n", expected=seen)
    assert files.path_for(Target.MEMORY).read_bytes() == b"rendered v2\n"


def test_a_save_in_the_last_window_of_an_appending_render_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same window when the render appends (ADR 0088): the person's save is put back, and
    the sidecar records the render that was on the path for a moment (ADR 0115: a person may
    have loaded it); the next read takes the save for a hand edit and imports it."""
    files = MarkdownFiles(tmp_path / "mem", tmp_path / "projects")
    path, side = files.path_for(Target.MEMORY), files.sidecar_for(Target.MEMORY)

    def line(version: int) -> str:
        return render_version_line(VersionLine(target="memory", version=version, store="abc"))

    entry = "{} <!-- created=2026-01-01, last=2026-01-01 -->"
    full = f"{line(1)}\n{entry.format('rendered first')}\n".encode()
    files.write(Target.MEMORY, full)
    seen = files.stamp(Target.MEMORY)
    sidecar = side.read_bytes()
    saved = path.read_bytes() + "§\ntyped by hand\n".encode()
    real = store_module.replace_temp

    def racing(
        tmp: Path, target: Path, *, before_replace: Callable[[], None] | None = None, **kw: Any
    ) -> None:
        def check_then_save() -> None:
            if before_replace is not None:
                before_replace()  # passes: nothing changed yet
            if target.name == path.name:
                with path.open("r+b") as f:  # the editor saves in place, right after the check
                    f.truncate(0)
                    f.write(saved)

        real(tmp, target, before_replace=check_then_save, **kw)

    monkeypatch.setattr(store_module, "replace_temp", racing)
    tail = f"{line(2)}\n{entry.format('appended second')}\n".encode()
    with pytest.raises(MarkdownChanged):
        files.append(Target.MEMORY, tail, hashlib.sha256(full).hexdigest(), expected=seen)
    monkeypatch.setattr(store_module, "replace_temp", real)
    assert path.read_bytes() == saved  # the person's save, not the render
    assert side.read_bytes() != sidecar
    assert line(2).encode() in side.read_bytes()  # the raced render is in the history
    joined = files.read(Target.MEMORY)
    assert joined is not None and b"typed by hand" in joined  # read as the person's edit
    assert not list(path.parent.glob(".*.tmp"))
