"""Editors racing agents on real files: a state machine over ADR 0115's invariants.

Agents (several `pi_hermes_memory.open` objects on one agent root, each with its own pipeline
state, as separate processes have) add unique facts and read, while an editor holding a buffer
of MEMORY.md (loaded from the file at some moment; after a save, its own save) types lines and
saves in place (truncate, then write). The editor is stopped at the instants that matter,
deterministically:

- a save interrupted after a random number of bytes while an agent adds: the rest is written
  at the reader's first wait (the moment a real editor's write resumes);
- a save landing in the rescue window of the next render (after its last check, before its
  rename), the editor reloading the file right after the rename (its buffer is then that
  render, which the rescue replaces by the save).

The store module's clock is a shim: `time_ns` is frozen, so a file that is not our render
always takes the quiet wait (never real timing), and `sleep` returns at once (after resuming
an interrupted save). Invariants: every acknowledged add active, every line typed (and not
deleted by the person) active, nothing active that nobody wrote (no cut text), checked on the
journal after each step and with a fresh `open` at teardown, then `check_store`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pi_hermes_memory.adapters.markdown import store as store_module
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold
from pi_hermes_memory.domain.memory.model import Target

from tests.support.consistency import (
    check_store,
    journal_events,
    markdown_path,
    open_memory,
    write_config,
)

AGENTS = 2
SEP = "\n§\n".encode()


def _entries(data: bytes) -> tuple[str, ...]:
    """The entry texts of a MEMORY.md, sorted (metadata comments left out)."""
    blocks = data.decode().strip("\n").split("\n§\n")
    return tuple(sorted(re.sub(r" <!--.*-->$", "", b.strip()) for b in blocks if b.strip()))


def _after_sidecar(path: Path) -> None:
    """A save in place is later than the sidecar of the render it overwrites: within one
    timestamp tick it may not look so (then the store takes its bytes for that render, ADR
    0116's limit); bump its mtime by a microsecond then, so the outcome does not depend on
    the tick."""
    side = os.stat(path.with_name(f".{path.name}.meta")).st_mtime_ns
    st = os.stat(path)
    if st.st_mtime_ns <= side:
        os.utime(path, ns=(st.st_atime_ns, side + 1000))


class StoreClock:
    """The store module's `time`: frozen (every file looks just saved) and sleeping no time;
    a sleep first resumes the editor's interrupted save, if one is pending."""

    def __init__(self) -> None:
        self.resume: Callable[[], None] | None = None

    def time_ns(self) -> int:
        return 0

    def sleep(self, seconds: float) -> None:
        resume, self.resume = self.resume, None
        if resume is not None:
            resume()


class EditorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="editor-machine-"))
        self.patch = pytest.MonkeyPatch()
        self.clock = StoreClock()
        self.patch.setattr(store_module, "time", self.clock)
        write_config(self.root)
        self.path = markdown_path(self.root, Target.MEMORY)
        self.agents: list[Memory] = [open_memory(self.root, "alpha") for _ in range(AGENTS)]
        self.acked: set[str] = set()  # adds answered "added"
        self.written: set[str] = set()  # every text an agent or the person wrote
        self.typed: list[str] = []  # lines the person saved
        self.deleted: set[str] = set()  # typed lines the person removed again
        self.facts = 0
        self.renders: set[tuple[str, ...]] = set()  # the entries of every render seen
        self._add(0)  # the file exists before the editor loads it
        self.buffer = self.path.read_bytes()

    # -- the agents ---------------------------------------------------------------------------

    def _add(self, agent: int) -> None:
        text = f"agent {agent} wrote fact number {self.facts} marker a{agent}x{self.facts}"
        self.facts += 1
        self.written.add(text)
        if self.agents[agent].add(text, force=True).status == "added":
            self.acked.add(text)

    @rule(agent=st.integers(0, AGENTS - 1))
    def agent_adds(self, agent: int) -> None:
        self._add(agent)

    @rule(agent=st.integers(0, AGENTS - 1), listing=st.booleans())
    def agent_reads(self, agent: int, listing: bool) -> None:
        if listing:
            self.agents[agent].entries("memory")
        else:
            self.agents[agent].search("fact number")

    # -- the editor ---------------------------------------------------------------------------

    def _line(self) -> str:
        line = f"typed by hand number {len(self.typed)} marker h{len(self.typed)}"
        self.written.add(line)
        return line

    def _with(self, line: str) -> bytes:
        return self.buffer.rstrip(b"\n") + SEP + f"{line}\n".encode()

    def _distinct(self, before: os.stat_result) -> None:
        """An in-place save keeps the inode; one within the filesystem's timestamp tick with
        the same size would leave the stamp as it was, and no stat could see the save (a
        limit of `MarkdownFiles.stamp`, not what this machine explores): bump the mtime by a
        microsecond then, so the outcome does not depend on the tick."""
        after = os.stat(self.path)
        if (after.st_mtime_ns, after.st_size, after.st_ino) == (
            before.st_mtime_ns,
            before.st_size,
            before.st_ino,
        ):
            os.utime(self.path, ns=(after.st_atime_ns, after.st_mtime_ns + 1000))

    def _save_in_place(self, data: bytes) -> None:
        before = os.stat(self.path)
        with self.path.open("r+b") as f:
            f.truncate(0)
            f.write(data)
        self._distinct(before)

    @rule()
    def editor_loads(self) -> None:
        self.buffer = self.path.read_bytes()

    @rule()
    def editor_saves(self) -> None:
        line = self._line()
        data = self._with(line)
        self._save_in_place(data)
        self.typed.append(line)
        self.buffer = data

    @rule(data=st.data(), agent=st.integers(0, AGENTS - 1))
    def editor_save_interrupted_while_agent_adds(self, data: st.DataObject, agent: int) -> None:
        line = self._line()
        save = self._with(line)
        cut = data.draw(st.integers(0, len(save)), label="cut")
        before = os.stat(self.path)
        f = self.path.open("r+b")
        f.truncate(0)
        f.write(save[:cut])
        f.flush()
        _after_sidecar(self.path)

        def resume() -> None:
            f.write(save[cut:])
            f.close()
            self._distinct(before)

        self.clock.resume = resume
        self.typed.append(line)
        self.buffer = save
        try:
            self._add(agent)
        finally:
            if self.clock.resume is not None:  # the add never waited: the save ends now
                self.clock.resume = None
                resume()

    @rule(agent=st.integers(0, AGENTS - 1))
    def editor_saves_in_the_rescue_window(self, agent: int) -> None:
        """The person saves right after the next render's last check; their editor reloads
        the file right after the rename (ADR 0115 case 1)."""
        line = self._line()
        state: dict[str, Any] = {}
        real_replace, real_atomic = store_module.replace_temp, store_module.atomic_write

        def mine(target: Path) -> bool:
            return target.name == self.path.name and "saved" not in state

        def person_saves(check: Callable[[], None] | None) -> Callable[[], None]:
            def check_then_save() -> None:
                if check is not None:
                    check()
                if "saved" not in state:
                    state["saved"] = self._with(line)
                    self._save_in_place(state["saved"])

            return check_then_save

        def replace(tmp: Path, target: Path, *, before_replace: Any = None, **kw: Any) -> None:
            ours = mine(target)
            hook = person_saves(before_replace) if ours else before_replace
            real_replace(tmp, target, before_replace=hook, **kw)
            if ours and "saved" in state:
                state["loaded"] = self.path.read_bytes()

        def atomic(target: Path, data: bytes, *, before_replace: Any = None, **kw: Any) -> None:
            ours = mine(target)
            hook = person_saves(before_replace) if ours else before_replace
            real_atomic(target, data, before_replace=hook, **kw)
            if ours and "saved" in state:
                state["loaded"] = self.path.read_bytes()

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(store_module, "replace_temp", replace)
            patch.setattr(store_module, "atomic_write", atomic)
            self._add(agent)
        if "loaded" in state:  # our render, reloaded right after its rename
            self.renders.add(_entries(state["loaded"]))
        if "saved" in state:
            self.typed.append(line)
            self.buffer = state.get("loaded", state["saved"])

    def _observe(self, data: bytes) -> None:
        """Remember the entries of `data` when it is our render (the sidecar's digest)."""
        head = self.path.with_name(f".{self.path.name}.meta").read_bytes().split(b"\n", 1)[0]
        if f"sha256={hashlib.sha256(data).hexdigest()}".encode() in head:
            self.renders.add(_entries(data))

    @precondition(lambda self: any(t not in self.deleted for t in self.typed))
    @rule(data=st.data())
    def editor_deletes_a_typed_line(self, data: st.DataObject) -> None:
        """The person deletes a line of theirs. A save that is then some render of ours entry
        for entry is skipped: ADR 0077 reads such a file as the person deleting the entries
        the newest render added (the same bytes as a stale buffer saved unchanged), by design."""
        blocks = self.buffer.rstrip(b"\n").split(SEP)
        own = [
            i
            for i, b in enumerate(blocks)
            if b.decode() in self.typed and b.decode() not in self.deleted
        ]
        if not own:
            return
        i = data.draw(st.sampled_from(own), label="deleted")
        save = SEP.join(blocks[:i] + blocks[i + 1 :]) + b"\n"
        if _entries(save) in self.renders:
            return
        self.deleted.add(blocks[i].decode())
        self._save_in_place(save)
        self.buffer = save

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def journal_keeps_every_acknowledged_add(self) -> None:
        self._observe(self.path.read_bytes())
        events = journal_events(self.root, Target.MEMORY)
        doc = fold(MemoryDocument.empty(Target.MEMORY), events)
        active = {e.text for e in doc.active}
        lost = self.acked - active
        assert not lost, f"acknowledged adds not active in the journal: {sorted(lost)}"
        extra = active - self.written
        assert not extra, f"active entries nobody wrote: {sorted(extra)}"

    def teardown(self) -> None:
        try:
            for agent in self.agents:
                agent.close()
            with open_memory(self.root, "alpha") as m:
                active = {e.text for e in m.entries("memory")}
            lost = self.acked - active
            assert not lost, f"acknowledged adds lost: {sorted(lost)}"
            kept = set(self.typed) - self.deleted
            missing = kept - active
            assert not missing, f"typed lines lost: {sorted(missing)}"
            extra = active - self.written
            assert not extra, f"active entries nobody wrote: {sorted(extra)}"
            check_store(self.root)
        finally:
            self.patch.undo()
            shutil.rmtree(self.root, ignore_errors=True)


def test_deleting_a_line_from_ones_own_save_keeps_the_agents_add(tmp_path: Path) -> None:
    """Found by the machine (ADR 0116): the person saves a line, an agent's add imports it and
    renders the file with its own entry; the person, whose editor holds their save, deletes the
    line again. The file is then the first render entry for entry, which ADR 0077 reads as the
    person deleting the newest render's last entries: the agent's acknowledged add was removed."""
    write_config(tmp_path)
    path = markdown_path(tmp_path, Target.MEMORY)
    with open_memory(tmp_path, "alpha") as m:
        assert m.add("agent fact before the edit", force=True).status == "added"
        rendered = path.read_bytes()
        path.write_bytes(rendered.rstrip(b"\n") + SEP + b"typed by hand\n")  # in place
        assert m.add("agent fact after the save", force=True).status == "added"
        assert b"agent fact after the save" in path.read_bytes()
        path.write_bytes(rendered)  # their buffer (their save) without the line they typed
        active = {e.text for e in m.entries("memory")}
    assert "agent fact after the save" in active
    assert "agent fact before the edit" in active
    with open_memory(tmp_path, "alpha") as m:
        assert {e.text for e in m.entries("memory")} == active
    check_store(tmp_path)


def test_a_save_cut_where_our_render_ends_is_read_once_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the machine (ADR 0116): the person's buffer is our render plus a line; their
    save in place is caught after writing exactly the render's bytes. The file then had our
    render's digest, so the read took it as ours without the quiet wait, the agent's render
    replaced it, and the rest of the save went to the orphaned inode."""
    write_config(tmp_path)
    path = markdown_path(tmp_path, Target.MEMORY)
    clock = StoreClock()
    monkeypatch.setattr(store_module, "time", clock)
    with open_memory(tmp_path, "alpha") as m:
        for i in range(3):
            assert m.add(f"agent fact number {i} before the save", force=True).success
        rendered = path.read_bytes()
        save = rendered.rstrip(b"\n") + SEP + b"typed by hand after the render\n"
        assert save[: len(rendered)] == rendered
        f = path.open("r+b")
        f.truncate(0)
        f.write(rendered)  # the save, stopped where the render ends
        f.flush()
        _after_sidecar(path)

        def resume() -> None:
            f.write(save[len(rendered) :])
            f.close()

        clock.resume = resume
        assert m.add("agent fact written during the save", force=True).success
        assert f.closed, "the add did not wait for the save to finish"
    monkeypatch.undo()
    with open_memory(tmp_path, "alpha") as m:
        active = {e.text for e in m.entries("memory")}
    assert "typed by hand after the render" in active
    assert "agent fact written during the save" in active
    assert {f"agent fact number {i} before the save" for i in range(3)} <= active
    check_store(tmp_path)


def test_a_save_put_back_by_the_rescue_is_imported_before_the_editor_saves_again() -> None:
    """Found by the machine (ADR 0116): the person saves in the rescue window of a render and
    their editor reloads the render; the rescue puts the save back, to be imported by the
    next operation. Their next save (the render plus a line) came first and overwrote it: the
    line of the first save was lost. The operation that stood back now imports it."""
    machine = EditorMachine()
    try:
        machine.editor_saves_in_the_rescue_window(agent=0)
        assert machine.typed and machine.typed[0].encode() not in machine.buffer  # reloaded
        machine.editor_saves()
        machine.journal_keeps_every_acknowledged_add()
    finally:
        machine.teardown()  # asserts both typed lines and every add active, then check_store


EditorMachine.TestCase.settings = settings(
    EditorMachine.TestCase.settings,
    stateful_step_count=25,
    max_examples=int(os.environ.get("EDITOR_MACHINE_EXAMPLES", "20")),
    deadline=None,
)
TestEditorMachine = EditorMachine.TestCase
