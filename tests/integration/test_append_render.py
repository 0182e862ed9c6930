"""ADR 0088: a render that only appends entries writes what the full render writes, byte for byte.

A real store (SQLite file, Markdown files and sidecars in a tmp dir) receives random operations,
each in a new service (a new process: no folded state, so its adds are decided on the write
index and rendered by appending to the files on disk). After every operation each Markdown file
and its sidecar must be exactly what `split` makes of the full render of the folded journal,
given the sidecar that was on disk before the operation (what `MarkdownFiles.write` would have
written). Removals, replaces and capacity evictions (a 60-character limit) render in full; a
run of lagging adds is appended at the flush in one step.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.shared import split
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.journal import pipeline
from pi_hermes_memory.journal.pipeline import RenderLag
from pi_hermes_memory.memory.service import MemoryService
from structlog.testing import capture_logs

from tests.support.builders import settings as memory_settings
from tests.support.fakes import SequentialIds, StepClock

WORDS = ["build", "cache", "deploy", "tests", "flaky", "redis", "queue", "ravi", "pins", "sdk"]
TARGETS = [Target.MEMORY, Target.USER, Target.PROJECT, Target.FAILURE]
texts = st.lists(st.sampled_from(WORDS), min_size=3, max_size=7).map(" ".join)
ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"), st.sampled_from(TARGETS), st.lists(texts, min_size=1, max_size=1)
        ),
        st.tuples(
            st.just("adds"), st.sampled_from(TARGETS), st.lists(texts, min_size=2, max_size=4)
        ),
        st.tuples(
            st.just("replace"), st.sampled_from(TARGETS), st.lists(texts, min_size=1, max_size=1)
        ),
        st.tuples(
            st.just("remove"), st.sampled_from(TARGETS), st.lists(texts, min_size=1, max_size=1)
        ),
    ),
    min_size=1,
    max_size=20,
)


class _Store:
    def __init__(self, root: Path, *, limit: int = 60) -> None:
        self.dir = root / "pi-hermes-memory"
        self.storage = SqliteStorage(self.dir / "sessions.db")
        self.markdown = MarkdownFiles(self.dir, root / "projects-memory")
        self.clock = StepClock()
        self.ids = SequentialIds()
        self.limit = limit
        self.service().converge()

    def service(self, lag: RenderLag | None = None) -> MemoryService:
        svc = MemoryService(
            storage=self.storage,
            markdown=self.markdown,
            fmt=MarkdownFormat(),
            clock=self.clock,
            ids=self.ids,
            settings=memory_settings("app", limit=self.limit),
            render_lag=lag,
        )
        svc.converge()  # as `open` does: the files are found to be the last render
        return svc

    def run(self, op: str, target: Target, words: list[str]) -> None:
        # a run of adds lags (as in a large file) and is rendered by the flush, in one step
        lag = RenderLag(min_bytes=0, interval_s=1e9) if op == "adds" else None
        svc = self.service(lag)
        for text in words:
            at = self.clock.now()
            if op in ("add", "adds"):
                cmd: AddMemory | ReplaceMemory | RemoveMemory = AddMemory(
                    target=target, text=text, entry_id=self.ids.new_id(), at=at
                )
            elif op == "replace":
                cmd = ReplaceMemory(
                    target=target,
                    old_text=text.split()[0],
                    text=text,
                    entry_id=self.ids.new_id(),
                    at=at,
                )
            else:
                cmd = RemoveMemory(target=target, old_text=text.split()[0], at=at)
            svc.execute(cmd)
        svc.flush()

    def files(self, target: Target) -> tuple[bytes | None, bytes | None]:
        path, side = self.markdown.path_for(target), self.markdown.sidecar_for(target)
        return (
            path.read_bytes() if path.exists() else None,
            side.read_bytes() if side.exists() else None,
        )

    def full_render(self, target: Target, previous_sidecar: bytes | None) -> tuple[bytes, bytes]:
        """What `MarkdownFiles.write` writes for the full render of the folded journal."""
        doc = self.service().document(target)
        with self.storage.snapshot() as uow:
            store = uow.ledger.store_id()
        line = VersionLine(target=target.value, version=doc.version, store=store)
        full = MarkdownFormat().render(doc.active, target, stamp=line).encode("utf-8")
        return split(full, target, previous_sidecar)


def _check(store: _Store, before: dict[Target, bytes | None]) -> None:
    for target in TARGETS:
        assert store.files(target) == store.full_render(target, before[target]), target


def _add(store: _Store, text: str) -> AddMemory:
    return AddMemory(
        target=Target.MEMORY, text=text, entry_id=store.ids.new_id(), at=store.clock.now()
    )


def _add_and_check(store: _Store, svc: MemoryService, text: str) -> list[str]:
    """Add `text` to memory through `svc`, check that every file equals its full render, and
    return the streams the add appended to (its `markdown.appended` log lines)."""
    before = {t: store.files(t)[1] for t in TARGETS}
    with capture_logs() as logs:
        svc.execute(_add(store, text))
    _check(store, before)
    return [e["stream"] for e in logs if e["event"] == "markdown.appended"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=ops, limit=st.sampled_from([60, 100_000]))
def test_appending_renders_equal_full_renders(
    steps: list[tuple[str, Target, list[str]]], limit: int
) -> None:
    root = Path(tempfile.mkdtemp(prefix="phm-append-"))
    store = _Store(root, limit=limit)
    try:
        for step in steps:
            before = {t: store.files(t)[1] for t in TARGETS}
            store.run(*step)
            _check(store, before)
    finally:
        store.storage.close()
        shutil.rmtree(root, ignore_errors=True)


def test_adds_are_appended_and_equal_the_full_render(tmp_path: Path) -> None:
    """The append path runs (its log line) for an add and for a flushed run of adds."""
    store = _Store(tmp_path, limit=100_000)
    store.run("add", Target.MEMORY, ["the first fact about the build"])
    for step in (
        ("add", Target.MEMORY, ["a second fact about redis"]),
        ("adds", Target.MEMORY, ["a third fact on queues", "a fourth on pins", "a fifth sdk"]),
    ):
        before = {t: store.files(t)[1] for t in TARGETS}
        with capture_logs() as logs:
            store.run(*step)
        appended = [e for e in logs if e["event"] == "markdown.appended"]
        assert [e["stream"] for e in appended] == ["memory:memory"], logs
        _check(store, before)
    text = store.markdown.path_for(Target.MEMORY).read_text(encoding="utf-8")
    assert text.count("\n§\n") == 4 and "a fifth sdk" in text


def test_a_service_holding_the_folded_document_appends_its_adds(tmp_path: Path) -> None:
    """After a replace (which folds the document and renders it in full) the same service's
    adds append to the file (ADR 0104): a long-lived process no longer rewrites the whole file
    per add once it has folded, and the bytes equal the full render."""
    store = _Store(tmp_path, limit=100_000)
    store.run("add", Target.MEMORY, ["the first fact about the build"])
    svc = store.service()
    svc.execute(
        ReplaceMemory(
            target=Target.MEMORY,
            old_text="first",
            text="the first fact about the build, corrected",
            entry_id=store.ids.new_id(),
            at=store.clock.now(),
        )
    )
    for text in ("a second fact about redis", "a third fact about queues"):
        assert _add_and_check(store, svc, text) == ["memory:memory"]
    assert [e.text for e in svc.document(Target.MEMORY).active] == [
        "the first fact about the build, corrected",
        "a second fact about redis",
        "a third fact about queues",
    ]


def test_a_folded_process_keeps_the_snapshot_cadence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexed adds store no snapshot (ADR 0084): a process that holds the folded document
    writes through the fold when a snapshot is due, so a long-lived process still leaves one
    every SNAPSHOT_EVERY events, and its other adds append (ADR 0104)."""
    monkeypatch.setattr(pipeline, "SNAPSHOT_EVERY", 5)
    store = _Store(tmp_path, limit=100_000)
    svc = store.service()
    svc.document(Target.MEMORY)  # folded, as a session's memory block does
    words = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor"]
    appended = 0
    for n in range(16):
        text = f"the {words[n % 8]} {words[(n * 3 + 1) % 8]} queue number {n} runs {n * 7}"
        # either way, the bytes of the full render (checked by the helper)
        appended += len(_add_and_check(store, svc, text))
    with store.storage.snapshot() as uow:
        head = uow.journal.version(stream_for(Target.MEMORY))
        stored = uow.journal.snapshot(stream_for(Target.MEMORY))
    assert stored is not None and head - stored[0] < 5, (head, stored and stored[0])
    assert appended >= 16 - 4, appended  # the others appended


def test_the_snapshot_cadence_reads_no_snapshot_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`snapshot_due` and `_keep_snapshots` learn a stored snapshot's version alone, never its
    data (megabytes at 100k entries, ADR 0106); the cadence is kept."""
    from pi_hermes_memory.adapters.sqlite.storage import SqliteJournal

    monkeypatch.setattr(pipeline, "SNAPSHOT_EVERY", 5)
    store = _Store(tmp_path, limit=100_000)
    svc = store.service()
    svc.document(Target.MEMORY)  # folded (its snapshot, when one is stored, read here)

    def add(n: int) -> None:
        text = f"the queue number {n} runs every {n * 7} minutes on host {n * 13}"
        at = store.clock.now()
        svc.execute(AddMemory(target=Target.MEMORY, text=text, entry_id=store.ids.new_id(), at=at))

    for n in range(6):
        add(n)
    stream = stream_for(Target.MEMORY)
    with store.storage.snapshot() as uow:
        first = uow.journal.snapshot_version(stream)
    assert first is not None

    def no_data(self: SqliteJournal, stream: str) -> tuple[int, str] | None:
        raise AssertionError(f"the snapshot data of {stream} was read")

    monkeypatch.setattr(SqliteJournal, "snapshot", no_data)
    svc._pipe._snapshotted.clear()  # as a state folded without a snapshot at hand
    for n in range(6, 18):
        add(n)
    monkeypatch.undo()
    with store.storage.snapshot() as uow:
        head = uow.journal.version(stream)
        stored = uow.journal.snapshot(stream)
    assert stored is not None and stored[0] > first and head - stored[0] < 5


def test_a_file_changed_since_its_render_is_never_appended_to(tmp_path: Path) -> None:
    """A hand edit (the Markdown file no longer the ledger's render) is imported and the
    file rendered in full, never appended to: the person's change is kept."""
    store = _Store(tmp_path, limit=100_000)
    store.run("add", Target.MEMORY, ["the first fact about the build"])
    path = store.markdown.path_for(Target.MEMORY)
    # the edit lands after the service verified the file (its open): the add meets it
    svc = store.service()
    path.write_bytes(path.read_bytes() + "§\nwritten by hand about the staging queue\n".encode())
    with capture_logs() as logs:
        svc.execute(_add(store, "a second fact about redis"))
    assert not [e for e in logs if e["event"] == "markdown.appended"]
    text = path.read_text(encoding="utf-8")
    assert "written by hand about the staging queue" in text and "a second fact" in text
    doc = store.service().document(Target.MEMORY)
    assert [e.text for e in doc.active] == [
        "the first fact about the build",
        "written by hand about the staging queue",
        "a second fact about redis",
    ]


@pytest.mark.parametrize("damage", ["none", "sidecar", "file"])
def test_files_not_matching_the_ledger_are_never_extended(tmp_path: Path, damage: str) -> None:
    """`MarkdownFiles.append` checks the old bytes as it copies them: a sidecar whose render is
    not the ledger's, or a file that is not the sidecar's, is never extended (None: nothing
    written, no temp file left), and the write path then renders in full. Undamaged files
    (the control) are extended."""
    store = _Store(tmp_path, limit=100_000)
    store.run("add", Target.MEMORY, ["the first fact about the build"])
    files = store.markdown
    path, side = files.path_for(Target.MEMORY), files.sidecar_for(Target.MEMORY)
    with store.storage.snapshot() as uow:
        recorded = uow.ledger.rendered(stream_for(Target.MEMORY), files.replica(Target.MEMORY))
    assert recorded is not None and recorded[0] == 1
    if damage == "sidecar":
        side.write_bytes(side.read_bytes().replace(b"the first fact", b"the firsT fact"))
    elif damage == "file":
        path.write_bytes(path.read_bytes().replace(b"the first fact", b"the firsT fact"))
    before = (path.read_bytes(), side.read_bytes())
    line = before[1].split(b"\n", 3)[2].replace(b" v1,", b" v2,")
    tail = line + b"\nsome new fact <!-- created=2026-01-02, last=2026-01-02 -->\n"
    done = files.append(Target.MEMORY, tail, recorded[1])
    assert not list(path.parent.glob(".*.tmp"))
    if damage == "none":
        assert done is not None
        assert path.read_bytes() == before[0] + (
            "§\nsome new fact <!-- created=2026-01-02, last=2026-01-02 -->\n".encode()
        )
        assert side.read_bytes().endswith(
            b"\n\xc2\xa7\nsome new fact <!-- created=2026-01-02, last=2026-01-02 -->\n"
        )
        return
    assert done is None
    assert (path.read_bytes(), side.read_bytes()) == before
