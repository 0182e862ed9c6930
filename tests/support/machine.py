"""A Hypothesis state machine over the memory service, reusable for any adapter pair.

The plain model is a dict {(target, project): [normalized texts of active entries]} updated from
the *reported* outcomes; the invariants check that the store agrees with it, that no scope
holds two active entries with the same normalized text, that supersede chains are acyclic with
one head, that replaying the journal equals the state, that the SQLite/in-memory projection
equals the entries, and that the Markdown files parse back to the active entries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pi_hermes_memory.domain.memory.chain import check_chains
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MoveDirection,
    MoveMemory,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.model import Target, normalize_text
from pi_hermes_memory.domain.memory.move import decide_move
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.store import UNCHECKED, MarkdownStore, Storage
from pi_hermes_memory.results import WriteResult

from tests.support.fakes import SequentialIds, StepClock

WORDS = ["build", "test", "deploy", "cache", "port", "项目", "构建", "テスト", "빌드", "docs"]
TARGETS = [Target.MEMORY, Target.USER, Target.PROJECT, Target.FAILURE]
PROJECTS = ["alpha", "beta"]

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


class SimulatedCrash(BaseException):
    """The process dies here: nothing after this point runs (not an OSError the code handles)."""


class CrashingMarkdown:
    """Delegates to a real MarkdownStore; `crash_on_write = n` kills the n-th write from now."""

    def __init__(self, inner: MarkdownStore) -> None:
        self.inner = inner
        self.crash_on_write: int | None = None

    def write(self, target: Target, data: bytes, *, expected: object = UNCHECKED) -> None:
        if self.crash_on_write is not None:
            self.crash_on_write -= 1
            if self.crash_on_write == 0:
                self.crash_on_write = None
                raise SimulatedCrash
        self.inner.write(target, data, expected=expected)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class MemoryMachine(RuleBasedStateMachine):
    """Subclasses set `make_adapters` (returns fresh storage, markdown) and `reopen_storage`."""

    make_adapters: Callable[[], tuple[Storage, MarkdownStore]]

    def __init__(self) -> None:
        super().__init__()
        self.storage, self.markdown = self.make_adapters()
        self.crashing = CrashingMarkdown(self.markdown)
        self.clock = StepClock()
        self.ids = SequentialIds()
        self.services: dict[str, MemoryService] = {}
        self.model: dict[tuple[Target, str | None], list[str]] = {}
        self._open_services()

    def _open_services(self) -> None:
        from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat

        from tests.support.builders import settings

        self.services = {
            p: MemoryService(
                storage=self.storage,
                markdown=self.crashing,
                fmt=MarkdownFormat(),
                clock=self.clock,
                ids=self.ids,
                settings=settings(p),
            )
            for p in PROJECTS
        }

    def reopen(self) -> None:
        """Hook for adapters that can be closed and reopened from disk."""

    @staticmethod
    def _scope_project(target: Target, project: str) -> str | None:
        return project if target in (Target.PROJECT, Target.FAILURE) else None

    def _bucket(self, target: Target, project: str) -> list[str]:
        return self.model.setdefault((target, self._scope_project(target, project)), [])

    def teardown(self) -> None:
        self.storage.close()

    @rule(
        where=st.sampled_from(TARGETS),
        project=st.sampled_from(PROJECTS),
        text=texts,
        force=st.booleans(),
    )
    def add(self, where: Target, project: str, text: str, force: bool) -> None:
        target = where
        svc = self.services[project]
        result = svc.execute(
            AddMemory(
                target=target,
                text=text,
                entry_id=self.ids.new_id(),
                at=self.clock.now(),
                force=force,
            )
        )
        bucket = self._bucket(target, project)
        key = normalize_text(text)
        if result.status == "added":
            assert key not in bucket
            bucket.append(key)
        elif result.status == "noop":
            assert key in bucket
        else:
            assert result.status == "near_duplicate", result
            assert not force and target is not Target.FAILURE

    def _visible_keys(self, target: Target, project: str) -> list[str]:
        return list(self._bucket(target, project))

    @precondition(lambda self: any(self.model.values()))
    @rule(data=st.data(), project=st.sampled_from(PROJECTS), text=texts)
    def replace(self, data: Any, project: str, text: str) -> None:
        target = data.draw(
            st.sampled_from([t for t in TARGETS if self._bucket(t, project)] or [Target.MEMORY])
        )
        bucket = self._bucket(target, project)
        if not bucket:
            return
        old = data.draw(st.sampled_from(bucket))
        result = self.services[project].execute(
            ReplaceMemory(
                target=target,
                old_text=old,
                text=text,
                entry_id=self.ids.new_id(),
                at=self.clock.now(),
            )
        )
        key = normalize_text(text)
        matches = [k for k in bucket if old in k]
        if result.status == "ambiguous":
            assert len(set(matches)) > 1
            return
        assert result.success, result
        if result.status == "noop":
            assert key == old or key in bucket
            return
        victim = matches[0]
        if result.status == "merged":
            assert key in bucket
            bucket.remove(victim)
        else:
            assert result.status == "replaced"
            bucket[bucket.index(victim)] = key

    @precondition(lambda self: any(self.model.values()))
    @rule(data=st.data(), project=st.sampled_from(PROJECTS))
    def remove(self, data: Any, project: str) -> None:
        candidates = [t for t in TARGETS if self._bucket(t, project)]
        if not candidates:
            return
        target = data.draw(st.sampled_from(candidates))
        bucket = self._bucket(target, project)
        old = data.draw(st.sampled_from(bucket))
        result = self.services[project].execute(
            RemoveMemory(target=target, old_text=old, at=self.clock.now())
        )
        matches = [k for k in bucket if old in k]
        if result.status == "ambiguous":
            assert len(set(matches)) > 1
            return
        assert result.status == "removed", result
        bucket.remove(matches[0])

    @precondition(lambda self: any(self.model.values()))
    @rule(
        data=st.data(),
        project=st.sampled_from(PROJECTS),
        promote=st.booleans(),
        force=st.booleans(),
        crash=st.booleans(),
    )
    def move(self, data: Any, project: str, promote: bool, force: bool, crash: bool) -> None:
        """promote (project -> global memory) or demote (global memory -> project).

        With `crash`, the process dies between writing the destination file and the source
        file; the journal already holds the move, so reopening must converge to one copy.
        """
        source = self._bucket(Target.PROJECT if promote else Target.MEMORY, project)
        destination = self._bucket(Target.MEMORY if promote else Target.PROJECT, project)
        if not source:
            return
        old = data.draw(st.sampled_from(source))
        total_before = sum(len(v) for v in self.model.values())
        command = MoveMemory(
            direction=MoveDirection.PROMOTE if promote else MoveDirection.DEMOTE,
            old_text=old,
            at=self.clock.now(),
            force=force,
        )
        if crash:
            self.crashing.crash_on_write = 2  # after the destination file, before the source
            try:
                result = self.services[project].move(command)
            except SimulatedCrash:
                # renders run after COMMIT, so whatever the move decided is durable: reopen and
                # read it back
                self.crash_and_reopen()
                service = self.services[project]
                reopened = service.document(command.source)
                owner = project if promote else None
                if old in [e.key for e in reopened.active if e.project == owner]:
                    # nothing moved: only a refusal may leave it there (the renders it still
                    # owed, a lagging replica or a first render, ran into the crash). The
                    # documents are the ones it decided on, so the domain refuses again.
                    again = decide_move(
                        reopened,
                        service.document(command.destination),
                        command,
                        service.settings.policy(command.destination),
                    )
                    assert not again.decision.success and not again.source_events, again
                    status, success = again.decision.status, False
                else:
                    moved = command.direction.value + "d"
                    status, success = ("merged" if old in destination else moved), True
                result = WriteResult(success=success, status=status, message="")
            finally:
                self.crashing.crash_on_write = None
        else:
            result = self.services[project].move(command)
        matches = [k for k in source if old in k]
        if result.status == "ambiguous":
            assert len(set(matches)) > 1
            return
        if result.status == "near_duplicate":
            assert not force
            return
        victim = matches[0]
        if result.status == "merged":
            assert victim in destination
            source.remove(victim)  # one copy left, in the destination layer
            return
        assert result.status == ("promoted" if promote else "demoted"), result
        source.remove(victim)
        destination.append(victim)
        assert sum(len(v) for v in self.model.values()) == total_before  # a move loses nothing

    @rule()
    def crash_and_reopen(self) -> None:
        """Drop every in-process cache (as a killed process would) and reopen."""
        self.reopen()
        self._open_services()

    @rule(where=st.sampled_from([Target.MEMORY, Target.USER]), text=texts)
    def hand_append(self, where: Target, text: str) -> None:
        """A person appends an entry to MEMORY.md/USER.md in an editor."""
        target = where
        data = self.markdown.read(target) or b""
        line = f"hand {text}"
        self.markdown.write(target, data + f"\n§\n{line}\n".encode())
        bucket = self.model.setdefault((target, None), [])
        key = normalize_text(line)
        self.services[PROJECTS[0]].entries(target)  # the next operation imports it
        if key not in bucket:
            bucket.append(key)

    @invariant()
    def store_agrees_with_model(self) -> None:
        svc = self.services[PROJECTS[0]]
        for target in TARGETS:
            doc = svc.document(target)
            check_chains(doc)
            by_scope: dict[str | None, list[str]] = {}
            for e in doc.active:
                by_scope.setdefault(e.project, []).append(e.key)
            for project, keys in by_scope.items():
                assert len(keys) == len(set(keys)), (
                    f"duplicate active entries in {target}/{project}"
                )
                assert sorted(keys) == sorted(self.model.get((target, project), []))
            for (t, project), keys in self.model.items():
                if t is target:
                    assert sorted(by_scope.get(project, [])) == sorted(keys)
            with self.storage.transaction() as uow:
                replayed = fold(MemoryDocument.empty(target), uow.journal.read(stream_for(target)))
            assert replayed == doc
            parsed = svc._fmt.parse((self.markdown.read(target) or b"").decode(), target)
            assert [normalize_text(p.text) for p in parsed.entries] == [e.key for e in doc.active]
            self.check_projection(doc)

    def check_projection(self, doc: MemoryDocument) -> None:
        """Subclasses compare their read model with the document."""
