"""A state machine over the skill service on real folders (ADR 0030, style rule 23).

The agent creates, patches, updates and deletes skills and their support files, hides and
shows global ones; a person edits SKILL.md and support files by hand (description, body, CRLF,
extra frontmatter keys, a removed version line), deletes a folder, writes a new folder (with a
`version:` of their own), or saves text the content scanner refuses; the process dies between
two file writes of a render (after the commit) and a new service opens the same journal and
folders. The model is a plain dict of what each live skill must hold.

Invariants, after every step (and so after every reopen):

- the live skills are exactly the model's, with the model's description, body, display name,
  extra frontmatter, support files and revision; the journal, folded afresh, says the same
  (nothing committed is lost, nothing refused is applied);
- every live skill has exactly one SKILL.md, whose `version:` is its revision and never goes
  down while the skill lives; a deleted skill has no SKILL.md (a skill deleted and created
  again starts a new life: a tool create is version 1 again, a hand-written folder keeps the
  version it says);
- the folder packs to exactly what the journal renders (files and journal agree), except a
  folder the scanner refused, which holds the person's bytes untouched;
- discovery offers the live skills minus the hidden global ones.

A hand edit is imported by the service's next touch of the skill; its revision goes up by one
when the SKILL.md content differs from what the journal held (however many saves came before).

Subclasses give the storage: `open_storage()` -> (storage, telemetry), `reopen_storage()`.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pi_hermes_memory.adapters.markdown.atomic import FileLock
from pi_hermes_memory.config.settings import SkillGovernanceConfig, SkillScopesConfig
from pi_hermes_memory.domain.skills.body import build_body, clean_body, patch_text, replace_section
from pi_hermes_memory.domain.skills.skill import SkillState, skill_stream
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.ports.skills import SkillTelemetry
from pi_hermes_memory.ports.store import Storage
from pi_hermes_memory.skills.documents import SkillDocuments
from pi_hermes_memory.skills.service import SkillResult, SkillService

from tests.support.fakes import StepClock
from tests.support.skill_model import (
    CRASHES,
    DONE,
    PATHS,
    PROJECT,
    SCOPES,
    SECRET,
    SECTIONS,
    TEXT_WORDS,
    VERSION_LINE,
    WORDS,
    Blocked,
    CrashingFolders,
    Expected,
    Quiet,
    SimulatedCrash,
    skill_id,
)
from tests.support.skill_person import PersonRules


class SkillMachine(PersonRules, RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="skill-machine-"))
        self.clock = StepClock()
        self.counter = itertools.count(1)
        self.folders = CrashingFolders(
            global_root=self.root / "skills", project_root=self.root / "projects"
        )
        self.governance = SkillGovernanceConfig(
            scopes=SkillScopesConfig(global_skills_dir=self.root / "skills")
        )
        self.storage, self.telemetry = self.open_storage()
        self.svc = self.make_service()
        self.live: dict[str, Expected] = {}
        self.hidden: set[str] = set()
        self.blocked: dict[str, Blocked] = {}
        self.versions: dict[str, int] = {}  # the last version seen on disk in this life
        self.known: set[str] = set()
        self.crashes = 0

    # -- adapters -----------------------------------------------------------------------

    def open_storage(self) -> tuple[Storage, SkillTelemetry]:
        raise NotImplementedError

    def reopen_storage(self) -> tuple[Storage, SkillTelemetry]:
        """The same journal and statistics, as a new process opens them."""
        raise NotImplementedError

    def close_storage(self) -> None:
        pass

    def make_service(self) -> SkillService:
        return SkillService(
            storage=self.storage,
            folders=self.folders,
            list_folders=self.folders.slugs,
            lock=lambda timeout: FileLock(self.root / ".lock", timeout=timeout),
            clock=self.clock,
            logger=Quiet(),
            project=PROJECT,
            telemetry=self.telemetry,
            governance=self.governance,
        )

    def reopen(self) -> None:
        self.storage, self.telemetry = self.reopen_storage()
        self.svc = self.make_service()

    def teardown(self) -> None:
        try:
            self.close_storage()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------------

    def text(self, kind: str) -> str:
        n = next(self.counter)
        return f"{kind} {TEXT_WORDS[n % len(TEXT_WORDS)]} note {n:05d}"

    def folder(self, sid: str) -> Path:
        return self.folders.folder(skill_stream(sid))

    def skill_md(self, sid: str) -> Path:
        return self.folder(sid) / "SKILL.md"

    def sync(self, ids: Sequence[str] | None = None) -> None:
        """The service touched these skills: their hand edits are imported."""
        for sid in list(self.live) if ids is None else ids:
            expected = self.live.get(sid)
            if expected is not None and expected.content() != expected.synced:
                expected.revision += 1
                expected.settle()

    def writable(self) -> list[str]:
        return sorted(s for s in self.live if s not in self.blocked)

    def check(self, result: SkillResult, status: Status) -> None:
        assert result.status is status, (status, result.status, result.message)

    def expect(
        self,
        sid: str,
        call: Callable[[], SkillResult],
        status: Status,
        apply: Callable[[], None] = lambda: None,
        *,
        crash: bool = False,
    ) -> None:
        """Run `call`, predicted to answer `status`; `apply` the model change on success.
        With `crash`, the render may die between two file writes: the change was committed
        first, so it counts as done, and a new process opens the store."""
        crashed = False
        try:
            result = call()
        except SimulatedCrash:
            crashed = True
        finally:
            self.folders.disarm()
        if crashed:
            assert crash and status in DONE, status  # only a change renders files
        else:
            self.check(result, status)
        if status in DONE:
            apply()
        if crashed:
            self.crashes += 1
            self.reopen()

    # -- the agent ----------------------------------------------------------------------

    def do_create(self, data: Any, scope: str, word: str, *, crash: bool = False) -> None:
        sid = skill_id(scope, word)
        display = data.draw(st.booleans(), label="display name")
        name = word.capitalize() if display else word
        description = self.text("describes")
        kwargs: dict[str, Any]
        if data.draw(st.booleans(), label="structured"):
            steps = [self.text("step") for _ in range(data.draw(st.integers(1, 3)))]
            pitfalls = [self.text("pitfall")] if data.draw(st.booleans()) else []
            kwargs = {"when_to_use": self.text("when"), "procedure_steps": steps}
            kwargs["pitfalls"] = pitfalls
            body = build_body(kwargs["when_to_use"], steps, pitfalls)
        else:
            content = f"# {name}\n\n{self.text('content')}\n"
            kwargs = {"content": content}
            body = clean_body(content)
        self.sync()  # create reads every skill first
        self.known.add(sid)

        def made() -> None:
            self.live[sid] = Expected(
                description=description,
                body=body,
                display_name=name if display else None,
            ).settle()
            self.versions.pop(sid, None)  # a new life

        self.expect(
            sid,
            lambda: self.svc.create(scope=scope, name=name, description=description, **kwargs),
            Status.DUPLICATE if sid in self.live else Status.CREATED,
            made,
            crash=crash,
        )

    def do_patch(self, data: Any, sid: str, *, crash: bool = False) -> None:
        section = data.draw(st.sampled_from(SECTIONS), label="section")
        content: str | list[str] = (
            [self.text("item"), self.text("item")]
            if data.draw(st.booleans(), label="as list")
            else self.text("patched")
        )
        self.sync([sid])
        expected = self.live[sid]
        text, problem = patch_text(section, content)
        assert text is not None, problem
        body = replace_section(expected.body, section, text)

        def patched() -> None:
            expected.body = body
            expected.revision += 1
            expected.settle()

        self.expect(
            sid,
            lambda: self.svc.patch(sid, section=section, content=content),
            Status.PATCHED,
            patched,
            crash=crash,
        )

    def do_update(self, data: Any, sid: str, *, crash: bool = False) -> None:
        which = data.draw(st.sampled_from(["description", "body", "both"]), label="update")
        description = self.text("updated") if which != "body" else None
        body = f"## Steps\n\n{self.text('rewritten')}" if which != "description" else None
        self.sync([sid])
        expected = self.live[sid]

        def updated() -> None:
            expected.description = description or expected.description
            expected.body = body or expected.body
            expected.revision += 1
            expected.settle()

        self.expect(
            sid,
            lambda: self.svc.update(sid, description=description, body=body),
            Status.UPDATED,
            updated,
            crash=crash,
        )

    def do_delete(self, sid: str, *, crash: bool = False) -> None:
        self.sync([sid])

        def deleted() -> None:
            del self.live[sid]
            self.versions.pop(sid, None)

        self.expect(sid, lambda: self.svc.delete(sid), Status.DELETED, deleted, crash=crash)

    def do_write_file(self, data: Any, sid: str, *, crash: bool = False) -> None:
        path = data.draw(st.sampled_from(PATHS), label="path")
        content = self.text("file") + "\n"
        self.sync([sid])
        expected = self.live[sid]
        self.expect(
            sid,
            lambda: self.svc.write_file(sid, path, content),
            Status.FILE_WRITTEN,
            lambda: expected.files.__setitem__(path, content),
            crash=crash,
        )

    def do_remove_file(self, data: Any, sid: str, *, crash: bool = False) -> None:
        self.sync([sid])
        expected = self.live[sid]
        if not expected.files:
            return self.do_write_file(data, sid, crash=crash)
        path = data.draw(st.sampled_from(sorted(expected.files)), label="remove")
        self.expect(
            sid,
            lambda: self.svc.remove_file(sid, path),
            Status.FILE_REMOVED,
            lambda: expected.files.pop(path),
            crash=crash,
        )
        return None

    def do(self, action: str, data: Any, sid: str, *, crash: bool = False) -> None:
        ops: dict[str, Callable[..., None]] = {
            "patch": lambda: self.do_patch(data, sid, crash=crash),
            "update": lambda: self.do_update(data, sid, crash=crash),
            "delete": lambda: self.do_delete(sid, crash=crash),
            "write_file": lambda: self.do_write_file(data, sid, crash=crash),
            "remove_file": lambda: self.do_remove_file(data, sid, crash=crash),
        }
        return ops[action]()

    def crash_after(self, steps: int | None) -> bool:
        """Arm a crash of the next render after `steps` file writes (None: no crash)."""
        if steps is not None:
            self.folders.arm(steps)
        return steps is not None

    @rule(
        data=st.data(),
        scope=st.sampled_from(SCOPES),
        word=st.sampled_from(WORDS),
        crash=CRASHES,
    )
    def create(self, data: Any, scope: str, word: str, crash: int | None) -> None:
        if skill_id(scope, word) in self.blocked:
            return None
        return self.do_create(data, scope, word, crash=self.crash_after(crash))

    @precondition(lambda self: self.writable())
    @rule(
        data=st.data(),
        actions=st.lists(
            st.sampled_from(["patch", "update", "delete", "write_file", "remove_file"]),
            min_size=1,
            max_size=3,
        ),
        crash=CRASHES,
    )
    def change(self, data: Any, actions: list[str], crash: int | None) -> None:
        """Tool writes; with `crash`, the process dies during the render after the last
        commit (after that many file writes) and a new process opens the store."""
        for n, action in enumerate(actions, start=1):
            if not self.writable():
                return
            sid = data.draw(st.sampled_from(self.writable()), label="skill")
            self.do(action, data, sid, crash=self.crash_after(crash if n == len(actions) else None))

    def change_a_missing_skill(self, data: Any) -> None:
        free = [
            skill_id(scope, word)
            for scope in SCOPES
            for word in WORDS
            if skill_id(scope, word) not in self.live and skill_id(scope, word) not in self.blocked
        ]
        if not free:
            return
        sid = data.draw(st.sampled_from(free), label="missing skill")
        action = data.draw(
            st.sampled_from(["patch", "update", "delete", "write_file", "remove_file"])
        )
        calls: dict[str, Callable[[], SkillResult]] = {
            "patch": lambda: self.svc.patch(sid, section="Pitfalls", content="x"),
            "update": lambda: self.svc.update(sid, description="x"),
            "delete": lambda: self.svc.delete(sid),
            "write_file": lambda: self.svc.write_file(sid, "references/x.md", "x"),
            "remove_file": lambda: self.svc.remove_file(sid, "references/x.md"),
        }
        self.check(calls[action](), Status.NOT_FOUND)

    @precondition(lambda self: self.writable())
    @rule(
        data=st.data(),
        action=st.sampled_from(
            ["create", "patch", "update", "write_file", "escape", "empty", "missing"]
        ),
    )
    def refused(self, data: Any, action: str) -> None:
        """A write the scanner or the rules refuse, or one to a skill that does not live,
        changes nothing."""
        if action == "missing":
            return self.change_a_missing_skill(data)
        sid = data.draw(st.sampled_from(self.writable()), label="skill")
        self.sync([sid])
        leak = f"use the token {SECRET} to deploy"
        if action == "create":
            free = [w for w in WORDS if skill_id("global", w) not in self.live]
            if not free or skill_id("global", free[0]) in self.blocked:
                return
            result = self.svc.create(scope="global", name=free[0], description=leak, content="x")
            self.check(result, Status.BLOCKED)
            self.sync()
        elif action == "patch":
            self.check(self.svc.patch(sid, section="Notes", content=leak), Status.BLOCKED)
        elif action == "update":
            self.check(self.svc.update(sid, body=leak), Status.BLOCKED)
        elif action == "write_file":
            self.check(self.svc.write_file(sid, "references/leak.md", leak), Status.BLOCKED)
        elif action == "escape":
            self.check(self.svc.write_file(sid, "../escape.md", "x"), Status.INVALID)
            assert not (self.folder(sid).parent / "escape.md").exists()
        else:
            self.check(self.svc.update(sid, description="  ", body=""), Status.INVALID)
        self.no_secret_outside_refused_folders()

    def no_secret_outside_refused_folders(self) -> None:
        person = {self.skill_md(sid) for sid in self.blocked}
        for root in (self.folders.global_root, self.folders.project_root):
            for path in root.rglob("*"):
                if path.is_file() and path not in person:
                    assert SECRET.encode() not in path.read_bytes(), path

    @rule(data=st.data(), action=st.sampled_from(["hide", "show", "reopen"]))
    def visibility_or_reopen(self, data: Any, action: str) -> None:
        """Hide or show a global skill for the project, or open the store anew."""
        if action == "reopen":
            return self.reopen()
        sid = skill_id("global", data.draw(st.sampled_from(WORDS), label="word"))
        if sid not in self.live:  # hide/show of a skill that does not exist (ADR 0078)
            self.check(self.svc.set_visibility(action, [sid]), Status.NOT_FOUND)
            return None
        self.check(self.svc.set_visibility(action, [sid]), Status.OK)
        (self.hidden.add if action == "hide" else self.hidden.discard)(sid)
        return None

    # -- invariants ---------------------------------------------------------------------

    @invariant()
    def files_journal_and_model_agree(self) -> None:
        warnings: list[str] = []
        states = {s.skill_id: s for s in self.svc.skills(warnings)}
        self.sync()
        assert set(states) == set(self.live), (sorted(states), sorted(self.live), warnings)
        kind = SkillDocuments(replicas=self.folders, clock=self.clock)
        with self.storage.snapshot() as uow:
            folded = {
                sid: kind.fold(
                    SkillState.empty(skill_stream(sid)), uow.journal.read(skill_stream(sid))
                )
                for sid in self.known
            }
        for sid in sorted(self.known):
            state, expected = folded[sid], self.live.get(sid)
            if expected is None:
                assert not state.exists, sid
            else:
                assert state == states[sid], sid
                assert (
                    state.description,
                    state.body,
                    state.display_name,
                    state.extra_frontmatter,
                ) == expected.content(), sid
                assert dict(state.files) == expected.files, sid
                assert state.revision == expected.revision, (sid, state.revision, expected)
            on_disk = self.skill_md(sid)
            if sid in self.blocked:
                assert on_disk.read_bytes() == self.blocked[sid].person, sid
                continue
            packed = self.folders.read(skill_stream(sid))
            assert packed == kind.render(state, "store"), sid
            if expected is None:
                assert not on_disk.exists(), sid
                continue
            assert on_disk.is_file(), sid
            versions = VERSION_LINE.findall(on_disk.read_bytes())
            assert len(versions) == 1, sid
            version = int(versions[0])
            assert version == expected.revision, sid
            assert version >= self.versions.get(sid, 0), (sid, version, self.versions.get(sid))
            self.versions[sid] = version
            support = {
                p.relative_to(self.folder(sid)).as_posix(): p.read_text(encoding="utf-8")
                for p in self.folder(sid).rglob("*")
                if p.is_file() and p.name != "SKILL.md"
            }
            assert support == expected.files, sid
            assert list(self.folder(sid).rglob("SKILL.md")) == [on_disk], sid

    @invariant()
    def nothing_refused_is_stored(self) -> None:
        self.no_secret_outside_refused_folders()
        with self.storage.snapshot() as uow:
            for sid in self.known:
                for event in uow.journal.read(skill_stream(sid)):
                    assert SECRET not in repr(event), event

    @invariant()
    def discovery_offers_the_visible_skills(self) -> None:
        offered, _warnings = self.svc.discover()
        assert {s.skill_id for s in offered} == set(self.live) - self.hidden
