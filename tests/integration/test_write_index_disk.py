"""ADR 0084: an add decided on the persisted write index equals one decided on the fold.

Two real stores (SQLite file + Markdown files in tmp dirs) receive the same operations with the
same ids and clock. In store A every operation runs in a new service (a new process: no folded
state, so adds take the indexed path); in store B one service holds the folded documents (the
in-memory path). Their answers, Markdown files and journals must be equal, and the persisted
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
from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.memory.service import MemoryService

from tests.support.builders import settings as memory_settings
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
    def __init__(self, root: Path, *, fresh_each_time: bool) -> None:
        self.dir = root / "pi-hermes-memory"
        self.storage = SqliteStorage(self.dir / "sessions.db")
        self.markdown = MarkdownFiles(self.dir, root / "projects-memory")
        self.clock = StepClock()
        self.ids = SequentialIds()
        self.fresh = fresh_each_time
        self.svc = self._service()

    def _service(self) -> MemoryService:
        return MemoryService(
            storage=self.storage,
            markdown=self.markdown,
            fmt=MarkdownFormat(),
            clock=self.clock,
            ids=self.ids,
            settings=memory_settings("app", limit=60),
        )

    def run(self, op: str, target: Target, text: str, force: bool) -> object:
        if op == "reopen":
            self.svc = self._service()
            return None
        if self.fresh:
            self.svc = self._service()
        else:
            self.svc.document(target)  # the folded document at hand: the in-memory path
        at = self.clock.now()
        if op == "add":
            cmd: AddMemory | ReplaceMemory | RemoveMemory = AddMemory(
                target=target, text=text, entry_id=self.ids.new_id(), at=at, force=force
            )
        elif op == "replace":
            cmd = ReplaceMemory(
                target=target, old_text=text.split()[0], text=text, entry_id=self.ids.new_id(), at=at
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
        return {
            str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*.md"))
        }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=ops)
def test_indexed_adds_equal_folded_adds(steps: list[tuple[str, Target, str, bool]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="phm-wi-"))
    try:
        a = _Store(root / "a", fresh_each_time=True)
        b = _Store(root / "b", fresh_each_time=False)
        try:
            for step in steps:
                assert a.run(*step) == b.run(*step), step
            assert a.files() == b.files()
            for target in TARGETS:
                doc = a.svc.document(target)
                assert doc == b.svc.document(target)
                check_write_index(a.storage, doc, [s[2] for s in steps])
                with a.storage.transaction() as uow:
                    assert uow.write_index.version(stream_for(target)) in (None, doc.version)
        finally:
            a.storage.close()
            b.storage.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
