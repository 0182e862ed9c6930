"""A file that is not our render is read only once it has been left alone (ADR 0115).

An editor that saves in place truncates, then writes. Preempted in between (or between two
pages of its write), it leaves a stable empty file or a stable prefix, which the stamp check of
ADR 0022 cannot tell from a finished save. These tests stop the "editor" exactly there: its
save is finished by the first wait of the read (the moment a real editor's write resumes), so
the outcome does not depend on the machine's timing.
"""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.markdown import store as store_module
from pi_hermes_memory.adapters.markdown.format import render_version_line
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import Target

from tests.support.consistency import check_store, markdown_path, open_memory, write_config

ENTRY = "{} <!-- created=2026-01-01, last=2026-01-01 -->"


def _render(texts: list[str]) -> bytes:
    line = render_version_line(VersionLine(target="memory", version=len(texts), store="abc"))
    return (line + "\n" + "\n§\n".join(ENTRY.format(t) for t in texts) + "\n").encode()


class Editor:
    """A save in place stopped after `cut` bytes; the read's first wait lets it finish."""

    def __init__(self, path: Path, save: bytes, cut: int) -> None:
        self.path, self.save, self.cut = path, save, cut
        self.waits: list[float] = []
        self.file = path.open("r+b")
        self.file.truncate(0)
        self.file.write(save[:cut])
        self.file.flush()

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        if not self.file.closed:  # the editor's write resumes while the reader waits
            self.file.write(self.save[self.cut :])
            self.file.close()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        clock = types.SimpleNamespace(time_ns=time.time_ns, sleep=self.sleep)
        monkeypatch.setattr(store_module, "time", clock)


@pytest.mark.parametrize("cut", [0, 1, 60, -40, -1], ids=["empty", "1", "60", "-40", "-1"])
def test_a_save_caught_unfinished_is_read_once_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    files = MarkdownFiles(tmp_path / "mem", tmp_path / "projects")
    texts = [f"agent fact number {i}" for i in range(6)]
    files.write(Target.MEMORY, _render(texts))
    path = files.path_for(Target.MEMORY)
    save = path.read_bytes() + "§\ntyped by hand\n".encode()
    editor = Editor(path, save, cut % len(save))
    editor.install(monkeypatch)
    joined = files.read(Target.MEMORY)
    assert editor.waits and editor.file.closed  # it waited, and read the finished save
    assert joined is not None
    for text in [*texts, "typed by hand"]:
        assert text.encode() in joined


def test_our_render_is_read_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = MarkdownFiles(tmp_path / "mem", tmp_path / "projects")
    files.write(Target.MEMORY, _render(["a fresh render of ours"]))

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"our own fresh render waited {seconds} s")

    clock = types.SimpleNamespace(time_ns=time.time_ns, sleep=no_sleep)
    monkeypatch.setattr(store_module, "time", clock)
    joined = files.read(Target.MEMORY)
    assert joined is not None and b"a fresh render of ours" in joined


def test_a_hand_edit_left_alone_is_read_without_waiting(tmp_path: Path) -> None:
    files = MarkdownFiles(tmp_path / "mem", tmp_path / "projects", quiet_s=0.05)
    files.write(Target.MEMORY, _render(["rendered entry"]))
    path = files.path_for(Target.MEMORY)
    path.write_bytes(path.read_bytes() + "§\ntyped and left alone\n".encode())
    time.sleep(0.1)  # older than quiet_s: the person is done
    waits: list[float] = []
    real_sleep = store_module.time.sleep
    try:
        store_module.time.sleep = lambda s: (waits.append(s), real_sleep(s))  # type: ignore[assignment]
        joined = files.read(Target.MEMORY)
    finally:
        store_module.time.sleep = real_sleep  # type: ignore[assignment]
    assert joined is not None and b"typed and left alone" in joined
    assert not waits


def test_an_add_during_a_save_in_progress_loses_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the public API: the editor's save stops at a block boundary (the prefix is
    then an older render entry for entry, which reads as deleting the newest entries) while
    an agent adds; the add imports the finished save instead."""
    write_config(tmp_path)
    path = markdown_path(tmp_path, Target.MEMORY)
    with open_memory(tmp_path, "alpha") as m:
        for i in range(4):
            assert m.add(f"agent fact number {i} before the save", force=True).success
        rendered = path.read_bytes()
        save = rendered + "§\ntyped by hand during the add\n".encode()
        boundary = rendered.index(b"\n\xc2\xa7\n", len(rendered) // 2) + 1  # after a block
        editor = Editor(path, save, boundary)
        editor.install(monkeypatch)
        assert m.add("agent fact written during the save", force=True).success
        monkeypatch.undo()
        assert editor.waits and editor.file.closed
    with open_memory(tmp_path, "alpha") as m:
        active = {e.text for e in m.entries("memory")}
    for i in range(4):
        assert f"agent fact number {i} before the save" in active
    assert "agent fact written during the save" in active
    assert "typed by hand during the add" in active
    check_store(tmp_path)


@pytest.mark.skipif(sys.platform != "linux", reason="file leases tell a writer apart on Linux")
def test_a_fresh_save_whose_writer_closed_is_read_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linux tells whether a process holds the file open for writing: a save that is over
    (the writer closed the file) is read without the quiet period, however fresh."""
    files = MarkdownFiles(tmp_path / "mem", tmp_path / "projects")
    files.write(Target.MEMORY, _render(["rendered entry"]))
    path = files.path_for(Target.MEMORY)
    assert store_module._held_for_writing(path) is False
    with path.open("r+b") as writer:
        assert store_module._held_for_writing(path) is True
        writer.seek(0, 2)
        writer.write("§\ntyped just now\n".encode())
    assert store_module._held_for_writing(path) is False

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"a finished save waited {seconds} s")

    monkeypatch.setattr(
        store_module, "time", types.SimpleNamespace(time_ns=time.time_ns, sleep=no_sleep)
    )
    joined = files.read(Target.MEMORY)
    assert joined is not None and b"typed just now" in joined
