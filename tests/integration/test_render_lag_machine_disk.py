"""The disk state machine with render lag (ADR 0042): small threshold, manual interval clock.

Two services (two projects) share one SQLite file and one Markdown directory, as two processes
do. Files of at least `MIN_BYTES` lag the journal while a service writes within `INTERVAL_S`
of its last render. Between steps the file is never read through the write path (that would
render it): the invariant reads the journal, the SQLite rows and the file's bytes directly.
It checks that the model agrees with the journal and the rows, that every file is exactly the
render of the journal version its first line names (never a mix, never torn), and that a file
behind the journal is so because a live service has it pending. `flush` (what close runs)
and `kill_and_open` (a killed process, then the next open's convergence) must leave every file
equal to the render of the journal head.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.model import Target, normalize_text
from pi_hermes_memory.journal.pipeline import RenderLag, sha256
from pi_hermes_memory.memory.service import MemoryService

from tests.integration.test_state_machine_disk import DiskMachine
from tests.support.machine import PROJECTS, TARGETS, texts

MIN_BYTES = 150
INTERVAL_S = 2.0


class LagClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class LagMachine(DiskMachine):
    #: a service died with its pending renders since every file was last the journal head
    killed = False

    def _open_services(self) -> None:
        from tests.support.builders import settings as scope_settings

        if not hasattr(self, "lag_clock"):
            self.lag_clock = LagClock()
        lag = RenderLag(min_bytes=MIN_BYTES, interval_s=INTERVAL_S, clock=self.lag_clock)
        self.services = {
            p: MemoryService(
                storage=self.storage,
                markdown=self.crashing,
                fmt=MarkdownFormat(),
                clock=self.clock,
                ids=self.ids,
                settings=scope_settings(p),
                render_lag=lag,
            )
            for p in PROJECTS
        }

    @rule(seconds=st.sampled_from([0.5, 1.0, INTERVAL_S]))
    def tick(self, seconds: float) -> None:
        self.lag_clock.now += seconds

    @rule(project=st.sampled_from(PROJECTS))
    def flush(self, project: str) -> None:
        """What `Memory.close` runs: every file this service left pending is rendered."""
        svc = self.services[project]
        assert svc.flush() == []
        assert svc.pending_renders == ()

    @rule(data=st.data(), text=texts)
    def hand_append_while_pending(self, data: st.DataObject, text: str) -> None:
        """A person appends to a file whose render is pending; close (flush) merges it: the
        edit is three-way against the version the file names, the pending writes are kept."""
        owners = [
            (p, t)
            for p, svc in self.services.items()
            for t in svc.pending_renders
            if t in (Target.MEMORY, Target.USER)
        ]
        if not owners:
            return
        project, target = data.draw(st.sampled_from(owners))
        before = self.markdown.read(target) or b""
        line = f"hand {text}"
        self.markdown.write(target, before + f"\n§\n{line}\n".encode())
        bucket = self.model.setdefault((target, None), [])
        key = normalize_text(line)
        svc = self.services[project]
        warnings = svc.flush()
        assert svc.pending_renders == ()
        if key in bucket:  # the person repeated an active entry: imported once, and said so
            assert warnings == [
                f"{target.value}: an entry in the file repeats an active entry of the same "
                "scope; it is kept once"
            ]
        else:
            assert warnings == []
            bucket.append(key)

    @rule()
    def flush_all_then_files_are_heads(self) -> None:
        for project in PROJECTS:
            self.flush(project)
        if not self.killed:  # else only the next open renders what the dead one owed
            self._files_are_heads()

    @rule()
    def kill_and_open(self) -> None:
        """Every service dies with its pending renders; the next open converges the files."""
        self.crash_and_reopen()
        self.services[PROJECTS[0]].converge()
        self._files_are_heads()

    def _heads(self) -> dict[object, tuple[MemoryDocument, tuple[int, str] | None, str]]:
        with self.storage.transaction() as uow:
            return {
                t: (
                    fold(MemoryDocument.empty(t), uow.journal.read(stream_for(t))),
                    uow.ledger.rendered(stream_for(t), self.markdown.replica(t)),
                    uow.ledger.store_id(),
                )
                for t in TARGETS
            }

    def _files_are_heads(self) -> None:
        fmt = MarkdownFormat()
        for target, (doc, ledger, _) in self._heads().items():
            data = self.markdown.read(target)
            if data is None:  # never written to: nothing to render
                assert doc.version == 0
                continue
            parsed = fmt.parse(data.decode(), target)
            assert [normalize_text(p.text) for p in parsed.entries] == [e.key for e in doc.active]
            assert parsed.version_line is not None
            assert parsed.version_line.version == doc.version
            assert ledger == (doc.version, sha256(data))
        self.killed = False

    @invariant()
    def store_agrees_with_model(self) -> None:
        fmt = MarkdownFormat()
        pending = {t for svc in self.services.values() for t in svc.pending_renders}
        for target, (doc, ledger, _) in self._heads().items():
            by_scope: dict[str | None, list[str]] = {}
            for e in doc.active:
                by_scope.setdefault(e.project, []).append(e.key)
            for (t, project), keys in self.model.items():
                if t is target:
                    assert sorted(by_scope.get(project, [])) == sorted(keys)
            self.check_projection(doc)
            data = self.markdown.read(target)
            if data is None:
                continue
            parsed = fmt.parse(data.decode(), target)
            line = parsed.version_line
            assert line is not None
            with self.storage.transaction() as uow:
                past = fold(
                    MemoryDocument.empty(target),
                    uow.journal.read(stream_for(target), upto=line.version),
                )
            # the file is exactly the render of the version it names
            assert [normalize_text(p.text) for p in parsed.entries] == [e.key for e in past.active]
            if line.version < doc.version and ledger == (line.version, sha256(data)):
                # behind the journal: a live service owes the render (none after a kill,
                # when the next open renders it: `kill_and_open`)
                assert target in pending or self.killed

    @rule()
    def crash_and_reopen(self) -> None:
        """Drop every in-process cache and pending render (a killed process), reopen."""
        super().crash_and_reopen()
        self.killed = True


LagMachine.TestCase.settings = settings(
    LagMachine.TestCase.settings, stateful_step_count=40, max_examples=60
)
TestLagMachine = LagMachine.TestCase
