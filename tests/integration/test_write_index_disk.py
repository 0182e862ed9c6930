"""ADR 0084: an add decided on the persisted write index equals one decided on the fold.

Three real stores (SQLite file + Markdown files in tmp dirs) receive the same operations with the
same ids and clock. In store A every operation runs in a new service (a new process: no folded
state, so adds take the indexed path); in store B one service holds the folded documents (the
in-memory path); in store C one service runs everything without reading the documents first
(its adds are indexed and render the rows it keeps between them). Their answers, Markdown
files and journals must be equal, and the persisted
index must answer the write rules as the fold's `ScopeIndex` does.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.memory.service import MemoryService

from tests.support.builders import settings as memory_settings
from tests.support.consistency import db_path, markdown_path, open_memory, write_config
from tests.support.fakes import SequentialIds, StepClock
from tests.support.write_index import check_write_index

WORDS = ["build", "cache", "deploy", "tests", "flaky", "redis", "queue", "ravi", "pins", "sdk"]
TARGETS = [Target.MEMORY, Target.USER, Target.PROJECT, Target.FAILURE]
texts = st.lists(st.sampled_from(WORDS), min_size=3, max_size=7).map(" ".join)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(TARGETS), texts, st.booleans()),
        st.tuples(st.just("replace"), st.sampled_from(TARGETS), texts, st.booleans()),
        st.tuples(st.just("remove"), st.sampled_from(TARGETS), texts, st.booleans()),
        st.tuples(st.just("reopen"), st.just(Target.MEMORY), st.just(""), st.just(False)),
    ),
    min_size=1,
    max_size=25,
)


class _Store:
    def __init__(self, root: Path, *, fresh_each_time: bool, folded: bool = True) -> None:
        self.dir = root / "pi-hermes-memory"
        self.storage = SqliteStorage(self.dir / "sessions.db")
        self.markdown = MarkdownFiles(self.dir, root / "projects-memory")
        self.clock = StepClock()
        self.ids = SequentialIds()
        self.fresh = fresh_each_time
        self.folded = folded
        # as `open` does: render the new store's empty files, then (a new process) find the
        # store converged without reading any document
        self._service().converge()
        self.svc = self._opened()

    def _service(self) -> MemoryService:
        return MemoryService(
            storage=self.storage,
            markdown=self.markdown,
            fmt=MarkdownFormat(),
            clock=self.clock,
            ids=self.ids,
            settings=memory_settings("app", limit=60),
        )

    def _opened(self) -> MemoryService:
        svc = self._service()
        svc.converge()
        return svc

    def run(self, op: str, target: Target, text: str, force: bool) -> object:
        if op == "reopen":
            self.svc = self._opened()
            return None
        if self.fresh:
            self.svc = self._opened()
        elif self.folded:
            self.svc.document(target)  # the folded document at hand: the in-memory path
        at = self.clock.now()
        if op == "add":
            cmd: AddMemory | ReplaceMemory | RemoveMemory = AddMemory(
                target=target, text=text, entry_id=self.ids.new_id(), at=at, force=force
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
        result = self.svc.execute(cmd)
        return (
            result.status,
            result.entry_id,
            result.version_id,
            result.version,
            result.message,
            tuple((c.entry_id, c.score) for c in result.candidates),
        )

    def files(self) -> dict[str, bytes]:
        root = self.dir.parent
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=ops)
def test_indexed_adds_equal_folded_adds(steps: list[tuple[str, Target, str, bool]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="phm-wi-"))
    try:
        a = _Store(root / "a", fresh_each_time=True)
        b = _Store(root / "b", fresh_each_time=False)
        # one service, no folded read: its adds are indexed until a replace or remove folds
        c = _Store(root / "c", fresh_each_time=False, folded=False)
        try:
            for step in steps:
                expected = b.run(*step)
                assert a.run(*step) == expected, step
                assert c.run(*step) == expected, step
            assert a.files() == b.files() == c.files()
            for target in TARGETS:
                doc = a.svc.document(target)
                assert doc == b.svc.document(target)
                check_write_index(a.storage, doc, [s[2] for s in steps])
                with a.storage.transaction() as uow:
                    assert uow.write_index.version(stream_for(target)) in (None, doc.version)
        finally:
            for store in (a, b, c):
                store.storage.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _index_version(root: Path, stream: str) -> tuple[int | None, int]:
    storage = SqliteStorage(db_path(root))
    try:
        with storage.transaction() as uow:
            return uow.write_index.version(stream), uow.journal.version(stream)
    finally:
        storage.close()


def test_a_stale_index_is_never_trusted_and_is_rebuilt(tmp_path: Path) -> None:
    """An index behind the journal (a write by an older library, a restore) is not used: the add
    is decided on the fold, and the index is rebuilt from it for the next process."""
    write_config(tmp_path)
    with open_memory(tmp_path, "app") as memory:
        assert memory.add("the deploy script pins redis to version seven").status == "added"
        assert memory.add("flaky tests retry three times on the queue").status == "added"
    stream = stream_for(Target.MEMORY)
    assert _index_version(tmp_path, stream) == (2, 2)
    # an older library's write: the journal moves on, the index does not know it; and the
    # index's rows lose one (so trusting it would add a duplicate)
    storage = SqliteStorage(db_path(tmp_path))
    try:
        conn = storage.connection
        with conn:
            conn.execute("UPDATE write_index SET version = 1 WHERE stream = ?", (stream,))
            conn.execute("DELETE FROM write_rows WHERE stream = ? AND slot = 0", (stream,))
    finally:
        storage.close()
    with open_memory(tmp_path, "app") as memory:
        again = memory.add("the deploy script pins redis to version seven")
        assert again.status == "noop"  # the fold knows the row the index lost
        assert memory.add("the build cache lives in a bucket").status == "added"
    assert _index_version(tmp_path, stream) == (3, 3)
    storage = SqliteStorage(db_path(tmp_path))
    try:
        with storage.transaction() as uow:
            doc = fold(MemoryDocument.empty(Target.MEMORY), uow.journal.read(stream))
        check_write_index(storage, doc, ["the deploy script pins redis to version 7"])
    finally:
        storage.close()


def test_a_hand_edit_made_after_open_is_imported_before_an_indexed_add(tmp_path: Path) -> None:
    """The indexed add runs only on a file that is exactly the last render: a person's save
    after the store was opened is imported first (the folded path), then rendered with the add."""
    write_config(tmp_path)
    with open_memory(tmp_path, "app") as memory:
        memory.add("the deploy script pins redis to version seven")
    with open_memory(tmp_path, "app") as memory:
        path = markdown_path(tmp_path, Target.MEMORY)
        path.write_bytes(
            path.read_bytes() + "§\nwritten by hand about the staging queue\n".encode()
        )
        assert memory.add("the build cache lives in a bucket").status == "added"
        texts = [e.text for e in memory.entries("memory")]
    assert texts == [
        "the deploy script pins redis to version seven",
        "written by hand about the staging queue",
        "the build cache lives in a bucket",
    ]
    data = markdown_path(tmp_path, Target.MEMORY).read_bytes()
    assert b"staging queue" in data and b"build cache" in data
