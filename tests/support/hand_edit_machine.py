"""A state machine that races tool writes against a person saving stale editor buffers.

The person opens MEMORY.md in an editor, the agent keeps writing, and the person saves their
buffer (with deletions, revisions and additions) over whatever the file holds by then, maybe
several times from the same buffer. The plain model says what must be active afterwards:

- every entry the agent added and nobody removed (the tool, or a person who saw it) is active;
- every deletion, revision and addition the person made is applied, with one conservative
  exception (ADR 0022): a buffer saved again without reloading is merged against the version
  it was loaded from, so a block it added or revised in an earlier save is new text to the
  merge: deleting it later deletes nothing, revising it later adds the new text beside it.

Subclasses provide the adapters (in memory, or SQLite + real files): `make_service()`.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.store import MarkdownStore

from tests.support.fakes import StepClock

WORDS = ("deploy", "lint", "cache", "vpn", "schema", "queue", "docs", "build", "tabs", "port")


class HandEditMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = StepClock()
        self.counter = itertools.count(1)
        self.svc, self.md = self.make_service()
        self.model: set[str] = set()  # the texts that must be active
        # (version line, blocks, whether each block is as the loaded version rendered it)
        self.buffer: tuple[str | None, list[str], list[bool]] | None = None

    def make_service(self) -> tuple[MemoryService, MarkdownStore]:
        raise NotImplementedError

    def text(self, word: str) -> str:
        return f"{word} note {next(self.counter):05d}."

    def teardown(self) -> None:
        self.svc.entries()  # the last save is imported before the store closes

    # -- the agent --------------------------------------------------------------------------

    @rule(word=st.sampled_from(WORDS))
    def tool_add(self, word: str) -> None:
        text = self.text(word)
        result = self.svc.execute(
            AddMemory(
                target=Target.MEMORY,
                text=text,
                entry_id=f"t{next(self.counter)}",
                at=self.clock.now(),
                force=True,
            )
        )
        assert result.status == "added", result.message
        self.model.add(text)

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def tool_remove(self, data: Any) -> None:
        text = data.draw(st.sampled_from(sorted(self.model)))
        result = self.svc.execute(
            RemoveMemory(target=Target.MEMORY, old_text=text, at=self.clock.now())
        )
        assert result.status == "removed", result.message
        self.model.discard(text)

    # -- the person -------------------------------------------------------------------------

    @rule()
    def open_editor(self) -> None:
        data = self.md.read(Target.MEMORY)
        if data is None:
            self.svc.entries(Target.MEMORY)
            data = self.md.read(Target.MEMORY) or b""
        first, _, body = data.decode().partition("\n")
        if first.startswith("<!-- pi-hermes-memory:"):
            line: str | None = first
        else:
            line, body = None, data.decode()
        blocks = [b for b in body.strip().split("\n§\n") if b.strip()]
        self.buffer = (line, blocks, [True] * len(blocks))

    @precondition(lambda self: self.buffer is not None)
    @rule(data=st.data(), new_words=st.lists(st.sampled_from(WORDS), max_size=2))
    def save_buffer(self, data: Any, new_words: list[str]) -> None:
        assert self.buffer is not None
        line, blocks, loaded = self.buffer
        keep = [data.draw(st.booleans(), label=f"keep {i}") for i in range(len(blocks))]
        saved: list[str] = []
        as_loaded: list[bool] = []
        for block, kept, in_base in zip(blocks, keep, loaded, strict=True):
            text = _text_of(block)
            if not kept:
                if in_base:
                    self.model.discard(text)  # deleted by the person
                continue
            if data.draw(st.integers(0, 5), label="revise?") == 0:
                revised = self.text(text.split()[0])
                block = block.replace(text, revised, 1)
                if in_base:
                    self.model.discard(text)
                self.model.add(revised)
                in_base = False
            saved.append(block)
            as_loaded.append(in_base)
        for word in new_words:
            added = self.text(word)
            saved.append(added)
            as_loaded.append(False)
            self.model.add(added)
        head = "" if line is None else line + "\n"
        self.md.write(Target.MEMORY, (head + "\n§\n".join(saved) + "\n").encode())
        self.buffer = (line, saved, as_loaded)  # the editor keeps its buffer and version line

    @rule()
    def close_editor(self) -> None:
        self.buffer = None

    # -- what must hold ---------------------------------------------------------------------

    @invariant()
    def every_acknowledged_and_every_hand_change_is_there(self) -> None:
        active = sorted(e.text for e in self.svc.entries(Target.MEMORY))
        assert active == sorted(self.model)


def _text_of(block: str) -> str:
    """The entry text of a rendered block (before its metadata comment)."""
    return block.rsplit("<!--", 1)[0].strip()
