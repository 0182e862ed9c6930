"""Purge interleaved with adds, replaces, removes, hand edits and stale editor saves
(ADR 0026), on the in-memory adapters with a tiny snapshot interval. Invariants after every
step: replaying the journal equals the service's state and a second service's (another
process whose cache predates the purge), the rows equal the fold, and no purged text is left
in any event, row, snapshot or file — unless a stale buffer typed it back in, as a new entry."""

from __future__ import annotations

from typing import Any

import pi_hermes_memory.journal.pipeline as pipeline_module
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.purge import text_owner
from pi_hermes_memory.journal.codec import encode
from pi_hermes_memory.memory.mirror import plan_mirror

from tests.support.builders import service
from tests.support.fakes import StepClock

TARGETS = (Target.MEMORY, Target.USER)
WORDS = ("amber", "basin", "cedar", "delta", "ember", "fjord", "glade", "harbor")


class PurgeMachine(RuleBasedStateMachine):
    """Subclasses for other adapters override `make_adapters`, `file`, `put_file`, `row_ids`
    and `leftover_blobs`."""

    def __init__(self) -> None:
        super().__init__()
        self._every = pipeline_module.SNAPSHOT_EVERY
        pipeline_module.SNAPSHOT_EVERY = 3
        self.clock = StepClock()
        self.storage, self.md = self.make_adapters()
        self.svc = service(self.storage, self.md, clock=self.clock)
        self.other = service(self.storage, self.md, clock=self.clock)
        self.n = 0
        self.gone: set[str] = set()  # purged texts that must be nowhere
        self.saved: dict[Target, bytes] = {}  # an editor buffer loaded earlier

    def teardown(self) -> None:
        pipeline_module.SNAPSHOT_EVERY = self._every

    # -- adapter access (in memory here) -----------------------------------------------------

    def make_adapters(self) -> tuple[Any, Any]:
        return InMemoryStorage(), InMemoryMarkdown()

    def file(self, target: Target) -> bytes:
        return bytes(self.md.files.get(target, b""))

    def put_file(self, target: Target, data: bytes) -> None:
        self.md.files[target] = data

    def row_ids(self) -> set[str]:
        return set(self.storage.rows)

    def leftover_blobs(self) -> list[str]:
        """Where else the store keeps text (rows, files) as strings to search."""
        return [str(row) for row in self.storage.rows.values()] + [
            data.decode() for data in self.md.files.values()
        ]

    def _text(self, word: str) -> str:
        self.n += 1
        return f"{word} fact number {self.n} marker q{self.n}z"

    def _active(self, target: Target) -> list[str]:
        return [e.text for e in self.svc.entries(target)]

    @rule(where=st.sampled_from(TARGETS), word=st.sampled_from(WORDS))
    def add(self, where: Target, word: str) -> None:
        text = self._text(word)
        result = self.svc.execute(
            AddMemory(
                target=where, text=text, entry_id=f"a{self.n}", at=self.clock.now(), force=True
            )
        )
        assert result.success, result.message

    @rule(where=st.sampled_from(TARGETS), data=st.data(), word=st.sampled_from(WORDS))
    def replace(self, where: Target, data: Any, word: str) -> None:
        active = self._active(where)
        if not active:
            return
        old = data.draw(st.sampled_from(active))
        text = self._text(word)
        result = self.svc.execute(
            ReplaceMemory(
                target=where, old_text=old, text=text, entry_id=f"r{self.n}", at=self.clock.now()
            )
        )
        assert result.success, result.message

    @rule(where=st.sampled_from(TARGETS), data=st.data())
    def remove(self, where: Target, data: Any) -> None:
        active = self._active(where)
        if active:
            old = data.draw(st.sampled_from(active))
            assert self.svc.execute(
                RemoveMemory(target=where, old_text=old, at=self.clock.now())
            ).success

    @rule(where=st.sampled_from(TARGETS), word=st.sampled_from(WORDS))
    def hand_append(self, where: Target, word: str) -> None:
        self.svc.entries(where)
        current = self.file(where).decode()
        self.put_file(where, (current.rstrip("\n") + f"\n§\n{self._text(word)}\n").encode())

    @rule(where=st.sampled_from(TARGETS))
    def load_buffer(self, where: Target) -> None:
        self.svc.entries(where)
        self.saved[where] = self.file(where)

    @precondition(lambda self: bool(self.saved))
    @rule(data=st.data())
    def save_stale_buffer(self, data: Any) -> None:
        target = data.draw(st.sampled_from(sorted(self.saved, key=lambda t: t.value)))
        self.put_file(target, self.saved.pop(target))
        views = self.svc.entries(target, include_history=True)
        # a stale buffer may type purged text back in: then it is a new entry, and allowed
        self.gone -= {v.text for v in views}

    @rule(where=st.sampled_from(TARGETS), data=st.data(), by_id=st.booleans())
    def purge(self, where: Target, data: Any, by_id: bool) -> None:
        views = self.svc.entries(where, include_history=True)
        removed = [r.entry for r in self.svc.removed(where)]
        pool = [(v.id, v.text) for v in views] + [(e.id, e.text) for e in removed]
        if not pool:
            return
        entry_id, text = data.draw(st.sampled_from(pool))
        query = entry_id if by_id else text.rsplit(" ", 1)[1]  # the unique marker word
        with self.storage.transaction() as uow:
            texts = [
                (text_owner(e), getattr(e, "text", ""))
                for t in Target
                for e in uow.journal.read(stream_for(t))
            ]
        result = self.svc.purge(where, query)
        assert result.status == "purged", result.message
        assert entry_id in result.entry_ids and result.versions == len(result.entry_ids)
        self.gone |= {text for owner, text in texts if owner in result.entry_ids and text}
        restored = self.svc.restore(where, entry_id)
        assert restored.status == "not_found" and "purged" in restored.message

    @invariant()
    def replay_equals_state_and_rows(self) -> None:
        mine = {t: self.svc.document(t) for t in TARGETS}  # imports pending hand edits first
        docs = {}
        with self.storage.transaction() as uow:
            for target in Target:
                events = uow.journal.read(stream_for(target))
                docs[target] = fold(MemoryDocument.empty(target), events)
        for target in TARGETS:
            assert mine[target] == docs[target]
            assert self.other.document(target) == docs[target]
        plan = plan_mirror(list(docs.values()))
        assert self.row_ids() == set(plan.rows)
        assert not any(set(d.purged) & {e.id for e in d.all_entries()} for d in docs.values())

    @invariant()
    def no_purged_text_anywhere(self) -> None:
        if not self.gone:
            return
        with self.storage.transaction() as uow:
            blobs = [encode(e)[1] for t in Target for e in uow.journal.read(stream_for(t))]
            blobs += [s[1] for t in Target if (s := uow.journal.snapshot(stream_for(t)))]
        blobs += self.leftover_blobs()
        for text in self.gone:
            assert not any(text in blob for blob in blobs), text


TestPurgeMachine = PurgeMachine.TestCase
TestPurgeMachine.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
