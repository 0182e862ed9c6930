"""Deterministic crash injection on the write path (ADR 0002's crash table), no processes.

A failure is injected at one point of an add, after COMMIT. The change is durable in the journal,
so the call reports success with an explicit warning that the Markdown file will be rewritten
(ADR 0011), and then the store must converge:
journal replay == Markdown == SQLite rows, the entry that reached the journal is present exactly
once, nothing is duplicated, and later adds work (in the same instance and after a fresh open).

Points: (a) `MarkdownFiles.write` (after COMMIT, before the file is replaced); (b) the ledger
update after the file was replaced; (c) `os.replace` inside `atomic_write`; (d) `os.fsync` EIO,
on the temp file (before the rename) and on the directory (after it).
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteLedger
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.events import MemoryAdded, Origin
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import StorageFailed

from tests.support.consistency import (
    check_store,
    journal_events,
    markdown_path,
    open_memory,
    temp_files,
    write_config,
)

PROJECT = "alpha"
COMMITTED = "the deploy script needs the staging flag before the migration step"
EXISTING = ("builds run on the ci runner named hopper", "the api listens on port 8443")


class Injected(OSError):
    """The fault we inject; an OSError so the adapters treat it like a real one."""


def _open(root: Path) -> Memory:
    return open_memory(root, PROJECT)


def _texts(docs: dict[Target, MemoryDocument], target: Target) -> list[str]:
    return [e.text for e in docs[target].active]


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    write_config(tmp_path, {"memoryCharLimit": 100_000})
    with _open(tmp_path) as m:
        for text in EXISTING:
            assert m.add(text).status == "added"
    yield tmp_path


# --- fault injectors: each arms one failure and returns a probe of how often it fired ----------


class Fault:
    def __init__(self) -> None:
        self.fired = 0
        self.calls = 0


def fault_markdown_write(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """(a) after COMMIT, before the Markdown file is replaced: by a full render (`write`) or
    by one that appends the new entries (`append`, ADR 0088)."""
    fault = Fault()
    real, real_append = MarkdownFiles.write, MarkdownFiles.append

    def write(self: MarkdownFiles, target: Target, data: bytes, **kw: object) -> None:
        fault.calls += 1
        if not fault.fired:
            fault.fired += 1
            raise StorageFailed("injected: could not write", path=self.path_for(target))
        real(self, target, data, **kw)

    def append(
        self: MarkdownFiles, target: Target, tail: bytes, rendered: str, **kw: object
    ) -> tuple[str, int, object | None] | None:
        fault.calls += 1
        if not fault.fired:
            fault.fired += 1
            raise StorageFailed("injected: could not write", path=self.path_for(target))
        return real_append(self, target, tail, rendered, **kw)

    monkeypatch.setattr(MarkdownFiles, "write", write)
    monkeypatch.setattr(MarkdownFiles, "append", append)
    return fault


def fault_ledger_after_render(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """(b) the file was replaced; the ledger update (the second transaction of the render,
    `Pipeline._record`) fails."""
    fault = Fault()
    real = SqliteLedger.record

    def record(self: SqliteLedger, stream: str, replica: str, version: int, sha256: str) -> None:
        fault.calls += 1
        if not fault.fired and sys._getframe(1).f_code.co_name == "_record":
            fault.fired += 1
            raise Injected(errno.EIO, "injected: ledger update failed")
        real(self, stream, replica, version, sha256)

    monkeypatch.setattr(SqliteLedger, "record", record)
    return fault


def fault_os_replace(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """(c) the rename of the synced temp file over the target."""
    fault = Fault()
    real = os.replace

    def replace(src: object, dst: object, *a: object, **kw: object) -> None:
        fault.calls += 1
        if not fault.fired and str(dst).endswith(".md"):
            fault.fired += 1
            raise Injected(errno.EIO, "injected: rename failed")
        real(src, dst, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    return fault


def _fault_fsync(monkeypatch: pytest.MonkeyPatch, nth: int) -> Fault:
    fault = Fault()
    real = os.fsync

    def fsync(fd: int) -> None:
        if _event_log(fd):  # the event log's own append (ADR 0023), not the Markdown write
            real(fd)
            return
        fault.calls += 1
        if not fault.fired and fault.calls == nth:
            fault.fired += 1
            raise Injected(errno.EIO, "injected: Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return fault


def _event_log(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").endswith(".journal.jsonl")
    except OSError:
        return False


def fault_fsync_file(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """(d1) EIO from fsync of the temp file: before the rename."""
    return _fault_fsync(monkeypatch, 1)


def fault_fsync_directory(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """(d2) EIO from fsync of the directory: after the renames, so the new bytes are visible.
    The third: the file's and the sidecar's temp files are synced first (ADR 0085: one sync of
    the folder, after the sidecar's rename)."""
    return _fault_fsync(monkeypatch, 3)


Injector = Callable[[pytest.MonkeyPatch], Fault]
POINTS: dict[str, tuple[Injector, bool]] = {
    # name: (injector, whether the new bytes reached MEMORY.md before the failure)
    "a-markdown-write": (fault_markdown_write, False),
    "b-ledger-after-render": (fault_ledger_after_render, True),
    "c-os-replace": (fault_os_replace, False),
    "d1-fsync-file-eio": (fault_fsync_file, False),
    "d2-fsync-dir-eio": (fault_fsync_directory, True),
}


def _warned(warnings: object) -> bool:
    """The result says the journal holds the change and the file lags behind."""
    text = json.dumps(warnings)
    return "could not be rewritten" in text or "recording the Markdown render failed" in text


def _crash_add(root: Path, monkeypatch: pytest.MonkeyPatch, point: str, via: str) -> Fault:
    """Run one add with the fault armed; check it failed loudly and what the disk holds."""
    injector, file_written = POINTS[point]
    before = markdown_path(root, Target.MEMORY).read_bytes()
    with _open(root) as m:
        fault = injector(monkeypatch)
        if via == "api":
            outcome = m.add(COMMITTED)
            assert outcome.success and outcome.status == "added", outcome
            assert _warned(outcome.warnings), outcome
        else:
            result = m.call_tool(
                "memory", {"action": "add", "target": "memory", "content": COMMITTED}
            )
            assert result["success"] is True and result["status"] == "added", result
            assert _warned(result["warnings"]), result
        monkeypatch.undo()
    assert fault.fired == 1
    after = markdown_path(root, Target.MEMORY).read_bytes()
    if file_written:
        assert COMMITTED.encode() in after
    else:
        assert after == before  # old bytes, untouched
    if point.startswith("d1"):
        assert fault.calls == 1  # an fsync error is never retried
    if point in ("c-os-replace", "d1-fsync-file-eio"):
        assert temp_files(root) == []  # the temp file was discarded
    # the journal already holds the add: it committed before the render
    events = journal_events(root, Target.MEMORY)
    assert [e.text for e in events if isinstance(e, MemoryAdded)].count(COMMITTED) == 1
    return fault


@pytest.mark.parametrize("via", ["api", "tool"])
@pytest.mark.parametrize("point", list(POINTS))
def test_crash_then_fresh_open_converges(
    root: Path, monkeypatch: pytest.MonkeyPatch, point: str, via: str
) -> None:
    _crash_add(root, monkeypatch, point, via)

    with _open(root) as m:  # a fresh process: open converges (renders the head / records it)
        docs = check_store(root)
        assert _texts(docs, Target.MEMORY) == [*EXISTING, COMMITTED]
        assert [v.text for v in m.entries(Target.MEMORY)] == [*EXISTING, COMMITTED]
        # an agent retrying the "failed" add gets a noop, not a duplicate
        assert m.add(COMMITTED).status == "noop"
        assert m.add("the release notes live in docs/releases", target="user").status == "added"
        assert m.add("after the crash another memory fact").status == "added"
    docs = check_store(root)
    assert _texts(docs, Target.MEMORY) == [
        *EXISTING,
        COMMITTED,
        "after the crash another memory fact",
    ]
    assert _texts(docs, Target.USER) == ["the release notes live in docs/releases"]


@pytest.mark.parametrize("point", list(POINTS))
def test_crash_then_same_instance_keeps_working(
    root: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    injector, _ = POINTS[point]
    with _open(root) as m:
        fault = injector(monkeypatch)
        assert _warned(m.add(COMMITTED).warnings)
        monkeypatch.undo()
        assert fault.fired == 1
        # the same instance (its cached state included) carries on without a reopen
        assert m.add("after the crash another memory fact").status == "added"
        assert [v.text for v in m.entries(Target.MEMORY)] == [
            *EXISTING,
            COMMITTED,
            "after the crash another memory fact",
        ]
    docs = check_store(root)
    assert _texts(docs, Target.MEMORY) == [
        *EXISTING,
        COMMITTED,
        "after the crash another memory fact",
    ]


def test_crash_then_hand_edit_keeps_both(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(a), then a person appends an entry to MEMORY.md before anything reopens the store."""
    _crash_add(root, monkeypatch, "a-markdown-write", "api")
    path = markdown_path(root, Target.MEMORY)
    path.write_bytes(path.read_bytes() + "§\na fact typed by hand in the editor\n".encode())

    with _open(root) as m:
        texts = [v.text for v in m.entries(Target.MEMORY)]
        assert m.add("after the crash another memory fact").status == "added"
    assert sorted(texts) == sorted([*EXISTING, COMMITTED, "a fact typed by hand in the editor"])
    docs = check_store(root)
    final = _texts(docs, Target.MEMORY)
    for text in (*EXISTING, COMMITTED, "a fact typed by hand in the editor"):
        assert final.count(text) == 1, text
    assert len(final) == 5
    events = journal_events(root, Target.MEMORY)
    imported = [e for e in events if getattr(e, "origin", None) is Origin.MARKDOWN]
    assert [e.text for e in imported] == ["a fact typed by hand in the editor"]  # type: ignore[attr-defined]


def test_crash_then_hand_removal_keeps_committed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(a), then a person deletes an older entry by hand: the deletion and the commit both hold."""
    _crash_add(root, monkeypatch, "a-markdown-write", "api")
    path = markdown_path(root, Target.MEMORY)
    kept = [b for b in path.read_text(encoding="utf-8").split("\n§\n") if EXISTING[0] not in b]
    path.write_text("\n§\n".join(kept), encoding="utf-8")

    with _open(root) as m:
        texts = [v.text for v in m.entries(Target.MEMORY)]
    assert texts == [EXISTING[1], COMMITTED]
    assert _texts(check_store(root), Target.MEMORY) == [EXISTING[1], COMMITTED]


def test_crash_on_project_target_converges(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(a) on the shared projects file: the project attribution survives the crash."""
    with _open(root) as m:
        fault_markdown_write(monkeypatch)
        outcome = m.add("the alpha service deploys with blue green", target="project")
        assert outcome.success and _warned(outcome.warnings)
        monkeypatch.undo()
    with _open(root) as m:
        views = m.entries(Target.PROJECT)
    assert [(v.text, v.project) for v in views] == [
        ("the alpha service deploys with blue green", PROJECT)
    ]
    docs = check_store(root)
    assert [(e.text, e.project) for e in docs[Target.PROJECT].active] == [
        ("the alpha service deploys with blue green", PROJECT)
    ]


def test_repeated_crashes_at_every_point_never_duplicate(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One crash of each kind in a row, each followed by a reopen, with the retries agents do."""
    expected = list(EXISTING)
    for n, (point, (injector, _)) in enumerate(POINTS.items()):
        text = f"crash series fact number {n} about {point}"
        with _open(root) as m:
            injector(monkeypatch)
            outcome = m.add(text)
            assert outcome.status == "added" and _warned(outcome.warnings)
            monkeypatch.undo()
        expected.append(text)
        with _open(root) as m:
            assert m.add(text).status == "noop"  # an agent repeating the add gets a noop
        assert _texts(check_store(root), Target.MEMORY) == expected


@pytest.mark.parametrize("point", ["b-ledger-after-render", "d2-fsync-dir-eio"])
def test_crash_after_render_then_hand_edit_keeps_both(
    root: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """The new bytes reached MEMORY.md but the ledger still names the old render; then a person
    appends an entry. The file now differs from both, so it is imported as a hand edit against
    the old render: the committed entry must not come back a second time."""
    _crash_add(root, monkeypatch, point, "api")
    path = markdown_path(root, Target.MEMORY)
    path.write_bytes(path.read_bytes() + "§\na fact typed by hand in the editor\n".encode())

    with _open(root) as m:
        texts = [v.text for v in m.entries(Target.MEMORY)]
    assert texts == [*EXISTING, COMMITTED, "a fact typed by hand in the editor"]
    assert _texts(check_store(root), Target.MEMORY) == texts
