"""ADR 0042: a large Markdown replica's render lags the journal by at most an interval.

Real SQLite store and real Markdown files through the public API, with the threshold and the
interval injected through `open_memory(render_lag=...)` (a manual clock: no sleeping).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.markdown import store as store_module
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.journal.pipeline import RenderLag

from tests.support.consistency import (
    check_store,
    db_path,
    document_bytes,
    markdown_path,
    read_journal,
    sha,
    write_config,
)


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _open(root: Path, lag: RenderLag | None = None) -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, cwd=root, project="alpha", environ={"HOME": str(root)}, render_lag=lag
    )


def _ledger(root: Path, target: Target = Target.MEMORY) -> tuple[int, tuple[int, str] | None]:
    storage = SqliteStorage(db_path(root))
    try:
        docs, ledger = read_journal(storage)
        return docs[target].version, ledger[target]
    finally:
        storage.close()


def _file(root: Path) -> bytes:
    """MEMORY.md as the store reads it, joined with its sidecar (ADR 0077): the ledger
    records the sha of that document."""
    return document_bytes(root, Target.MEMORY)


def _lagging(root: Path) -> tuple[Memory, ManualClock]:
    write_config(root)
    clock = ManualClock()
    memory = _open(root, RenderLag(min_bytes=1, interval_s=2.0, clock=clock))
    first = memory.add("first entry about the build cache")
    assert first.status == "added"
    # open rendered the (empty) files a moment ago: the add lags behind that render
    assert memory.pending_renders == ("memory",)
    assert b"build cache" not in _file(root)
    assert memory.flush() == ()
    assert memory.pending_renders == ()
    assert b"build cache" in _file(root)
    return memory, clock


def test_a_small_file_is_rendered_by_every_write(tmp_path: Path) -> None:
    write_config(tmp_path)
    with _open(tmp_path) as memory:  # the default threshold: 1 MiB
        for i in range(3):
            assert memory.add(f"small note number {i} about tea").status == "added"
            assert memory.pending_renders == ()
            assert f"small note number {i}".encode() in _file(tmp_path)
    check_store(tmp_path)


def test_a_large_file_lags_until_the_interval_then_renders(tmp_path: Path) -> None:
    memory, clock = _lagging(tmp_path)
    rendered = _file(tmp_path)
    assert memory.add("second entry about the linker flags").status == "added"
    assert memory.pending_renders == ("memory",)
    assert _file(tmp_path) == rendered  # not read, not rewritten
    head, ledger = _ledger(tmp_path)
    assert ledger is not None and ledger[0] < head and ledger[1] == sha(rendered)
    # search reads SQLite: the pending entry is found
    assert any("linker" in h.text for h in memory.search("linker").hits)
    clock.now += 2.0
    assert memory.add("third entry about the test runner").status == "added"
    assert memory.pending_renders == ()
    assert b"linker flags" in _file(tmp_path) and b"test runner" in _file(tmp_path)
    memory.close()
    check_store(tmp_path)


def test_flush_and_close_render_what_is_pending(tmp_path: Path) -> None:
    memory, _ = _lagging(tmp_path)
    memory.add("pending one about the release notes")
    assert memory.pending_renders == ("memory",)
    assert memory.flush() == ()
    assert memory.pending_renders == ()
    check_store(tmp_path)
    memory.add("pending two about the changelog")
    assert memory.pending_renders == ("memory",)
    memory.close()
    assert b"pending two" in _file(tmp_path)
    check_store(tmp_path)


def test_a_read_in_the_writing_process_renders(tmp_path: Path) -> None:
    memory, _ = _lagging(tmp_path)
    memory.add("pending entry about the proxy settings")
    texts = [e.text for e in memory.entries("memory")]
    assert "pending entry about the proxy settings" in texts
    assert memory.pending_renders == ()
    assert b"proxy settings" in _file(tmp_path)
    memory.close()


def test_a_hand_edit_made_while_pending_is_merged_three_way(tmp_path: Path) -> None:
    memory, _ = _lagging(tmp_path)
    memory.add("keep this entry about the deploy script")
    memory.flush()
    # the file now names the version with both entries; the next writes lag behind it
    memory.add("pending entry about the cache warmup")
    memory.add("another pending entry about the nightly job")
    assert memory.pending_renders == ("memory",)
    path = markdown_path(tmp_path, Target.MEMORY)
    text = path.read_text(encoding="utf-8")
    assert "cache warmup" not in text  # the person edits the lagging file
    edited = text.replace("first entry about the build cache", "first entry about the build farm")
    edited += "\n§\nhand written entry about the coffee machine\n"
    path.write_text(edited, encoding="utf-8")
    memory.add("a third pending entry about the lint rules")  # still lags: no import yet
    assert memory.pending_renders == ("memory",)
    assert memory.flush() == ()
    active = [e.text for e in memory.entries("memory")]
    for kept in (
        "first entry about the build farm",
        "keep this entry about the deploy script",
        "pending entry about the cache warmup",
        "another pending entry about the nightly job",
        "a third pending entry about the lint rules",
        "hand written entry about the coffee machine",
    ):
        assert kept in active, (kept, active)
    assert "first entry about the build cache" not in active
    memory.close()
    check_store(tmp_path)


def test_another_process_sees_pending_writes_and_renders_them(tmp_path: Path) -> None:
    memory, _ = _lagging(tmp_path)
    memory.add("pending entry about the staging database")
    assert memory.pending_renders == ("memory",)
    # a second open of the same store (what another process does): it converges the replica
    other = _open(tmp_path)
    try:
        assert any("staging" in h.text for h in other.search("staging database").hits)
        assert "pending entry about the staging database" in [
            e.text for e in other.entries("memory")
        ]
        check_store(tmp_path)
        # the writer keeps lagging after the other's render; its next render is still right
        memory.add("writer entry after the other render")
        assert other.add("other process entry about the queue").status == "added"
        assert b"writer entry after" in _file(tmp_path)
    finally:
        other.close()
    memory.add("writer entry at the end")
    memory.close()
    docs = check_store(tmp_path)
    texts = [e.text for e in docs[Target.MEMORY].active]
    assert texts[-3:] == [
        "writer entry after the other render",
        "other process entry about the queue",
        "writer entry at the end",
    ]


CHILD = r"""
import sys
import pi_hermes_memory
from pi_hermes_memory.journal.pipeline import RenderLag

root = sys.argv[1]
lag = RenderLag(min_bytes=1, interval_s=3600.0)
m = pi_hermes_memory.open(
    agent_root=root, cwd=root, project="alpha", environ={"HOME": root}, render_lag=lag
)
for i in range(6):
    r = m.add(f"killed writer entry {i} about the pager rota")
    assert r.status == "added", r
    if i == 0:
        assert m.flush() == () and m.pending_renders == ()
    print("ok", i, flush=True)
print("pending", ",".join(m.pending_renders), flush=True)
sys.stdin.readline()  # killed here
"""


def test_a_killed_writer_with_a_pending_render_converges_at_the_next_open(
    tmp_path: Path,
) -> None:
    write_config(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert child.stdout is not None
    lines = []
    try:
        for line in child.stdout:
            lines.append(line.strip())
            if line.startswith("pending"):
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert lines[-1] == "pending memory", lines
    assert child.returncode == -signal.SIGKILL
    on_disk = _file(tmp_path)
    assert b"entry 0 about" in on_disk and b"entry 5 about" not in on_disk
    head, ledger = _ledger(tmp_path)
    assert ledger is not None and ledger[0] < head and ledger[1] == sha(on_disk)
    with _open(tmp_path) as memory:  # the next open renders what the killed writer left
        assert memory.pending_renders == ()
    docs = check_store(tmp_path)
    texts = [e.text for e in docs[Target.MEMORY].active]
    assert texts == [f"killed writer entry {i} about the pager rota" for i in range(6)]


def test_render_lag_never_renders_every_write(tmp_path: Path) -> None:
    write_config(tmp_path)
    with _open(tmp_path, RenderLag.never()) as memory:
        for i in range(3):
            memory.add(f"eager note number {i} about the cache")
            assert memory.pending_renders == ()
            assert f"eager note number {i}".encode() in _file(tmp_path)


def test_a_save_in_the_window_of_a_pending_render_is_put_back_and_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADR 0034 still holds for a render that lagged: the late save wins the file, and the
    same flush then merges it with the pending writes (ADR 0116: imported by the operation
    that stood back, not the next one)."""
    memory, _ = _lagging(tmp_path)
    memory.add("pending entry about the backup window")
    assert memory.pending_renders == ("memory",)
    path = markdown_path(tmp_path, Target.MEMORY)
    saved = path.read_bytes() + "\n§\ntyped by hand about the printer\n".encode()
    real = store_module.atomic_write

    def racing(
        target: Path,
        data: bytes,
        *,
        before_replace: Callable[[], None] | None = None,
        **options: Any,
    ) -> None:
        def check_then_save() -> None:
            if before_replace is not None:
                before_replace()
            if not fired:  # the editor saves in place, once, right after the check
                fired.append(True)
                with path.open("r+b") as f:
                    f.truncate(0)
                    f.write(saved)

        real(target, data, before_replace=check_then_save, **options)

    fired: list[bool] = []
    monkeypatch.setattr(store_module, "atomic_write", racing)
    memory.flush()
    monkeypatch.setattr(store_module, "atomic_write", real)
    assert fired
    # the render stood back for the save, then the flush imported it and rendered both
    assert b"typed by hand about the printer" in path.read_bytes()
    assert b"pending entry about the backup window" in path.read_bytes()
    assert memory.flush() == ()
    assert memory.pending_renders == ()
    texts = [e.text for e in memory.entries("memory")]
    assert "pending entry about the backup window" in texts
    assert "typed by hand about the printer" in texts
    memory.close()
    check_store(tmp_path)


def test_a_search_in_the_writer_imports_a_save_made_while_pending(tmp_path: Path) -> None:
    memory, _ = _lagging(tmp_path)
    memory.add("pending entry about the vpn client")
    path = markdown_path(tmp_path, Target.MEMORY)
    path.write_bytes(path.read_bytes() + "\n§\ntyped by hand about the kettle\n".encode())
    memory.add("another pending entry about the vpn server")  # lags: the save is not read
    assert memory.pending_renders == ("memory",)
    hits = memory.search("kettle").hits
    assert [h.text for h in hits] == ["typed by hand about the kettle"]
    assert memory.pending_renders == ()  # the import rendered the file
    assert b"vpn server" in path.read_bytes() and b"kettle" in path.read_bytes()
    memory.close()
    check_store(tmp_path)


LAGGING_WRITER = r"""
import json, sys
import pi_hermes_memory
from pi_hermes_memory.journal.pipeline import RenderLag

root, writer, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lag = RenderLag(min_bytes=1, interval_s=0.5)
m = pi_hermes_memory.open(
    agent_root=root, cwd=root, project="alpha", environ={"HOME": root}, render_lag=lag
)
print("ready", flush=True)
sys.stdin.readline()
out = []
for i in range(count):
    text = f"lagging writer {writer} fact {i} tag w{writer}n{i}"
    target = ["memory", "user"][(writer + i) % 2]
    r = m.add(text, target=target)
    out.append([text, target, r.status])
pending = m.pending_renders
m.close()
print(json.dumps({"results": out, "pending_before_close": list(pending)}), flush=True)
"""


def test_concurrent_lagging_writers_lose_nothing(tmp_path: Path) -> None:
    """Four processes write with a tiny threshold and a 500 ms interval (renders lag, and every
    writer's file is also rendered by the others); after their closes journal == files == rows
    and every acknowledged fact is there exactly once."""
    write_config(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LAGGING_WRITER, str(tmp_path), str(w), "60"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    outputs = []
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, _ = p.communicate(timeout=300)
            outputs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert all(p.returncode == 0 for p in procs)
    assert any(o["pending_before_close"] for o in outputs)  # the renders did lag
    docs = check_store(tmp_path)
    for output in outputs:
        for text, target, status in output["results"]:
            assert status == "added"
            texts = [e.text for e in docs[Target(target)].active]
            assert texts.count(text) == 1, text
