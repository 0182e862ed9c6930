"""The skill service: procedural skills as streams on the write pipeline (ADR 0030).

Each action decides in the domain (`domain/skills/decide.py`, `domain/skills/revise.py`) on the
skill's state as of the write transaction (hand edits of its folder imported first), and the
pipeline appends, folds and renders the folder. Usage evidence, visibility and load counts live
in the `SkillTelemetry` tables (not journaled: they are statistics, not documents).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.model import project_name_problem
from pi_hermes_memory.domain.skills.decide import decide_create, new_skill_id
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.promotion import UsageEvidence
from pi_hermes_memory.domain.skills.revise import (
    decide_delete,
    decide_patch,
    decide_remove_file,
    decide_update,
    decide_write_file,
)
from pi_hermes_memory.domain.skills.rules import SkillAction, child_session_problem
from pi_hermes_memory.domain.skills.skill import (
    STREAM_PREFIX,
    SkillDecision,
    SkillState,
    parse_skill_id,
    shadow_message,
    skill_stream,
)
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import InvalidArgument, InvalidSkillId
from pi_hermes_memory.journal.pipeline import Batch, Pipeline, Replicas
from pi_hermes_memory.ports.skills import SkillTelemetry, SkillVisibility
from pi_hermes_memory.ports.store import Clock, Storage
from pi_hermes_memory.skills.documents import SkillDocuments
from pi_hermes_memory.skills.stats import after_discovery

__all__ = ["SkillResult", "SkillService"]


@attrs.frozen(kw_only=True)
class SkillResult:
    success: bool
    status: Status
    message: str
    skill_id: str | None = None
    matches: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    skill: SkillState | None = None
    skills: tuple[SkillState, ...] = ()


class SkillService:
    """Skills of one session: the global ones and its project's."""

    def __init__(
        self,
        *,
        storage: Storage,
        folders: Replicas,
        list_folders: Callable[[str | None], list[str]],
        lock: Callable[[float], Any],
        clock: Clock,
        logger: Any,
        project: str | None,
        telemetry: SkillTelemetry | None = None,
        host_skills_dir: Path | None = None,
        session_id: str | None = None,
        child: bool = False,
        write_guard: Callable[[], None] | None = None,
        governance: Any = None,
    ) -> None:
        #: raises before any write when the store is read-only (ADR 0023)
        self._guard = write_guard or (lambda: None)
        self._config = governance
        self._storage = storage
        self._clock = clock
        self._list_folders = list_folders
        self._link_problem: Callable[[str, str], str | None] = getattr(
            folders, "link_problem", lambda stream, path: None
        )
        self.project = project
        self.telemetry = telemetry
        self._host = host_skills_dir
        self._folders = folders
        self.session_id = session_id
        self.child = child
        self._pipe: Pipeline[SkillState] = Pipeline(
            storage=storage,
            kind=SkillDocuments(replicas=folders, clock=clock),
            lock=lock,
            logger=logger,
        )

    # -- reading ----------------------------------------------------------------------------

    def ids(self) -> list[str]:
        """The ids of the global skills and this project's: in the journal or on disk."""
        prefixes = [f"{STREAM_PREFIX}global:"]
        if self.project is not None:
            prefixes.append(f"{STREAM_PREFIX}project:{self.project}:")
        with self._storage.snapshot() as uow:
            known = {
                s.removeprefix(STREAM_PREFIX) for p in prefixes for s in uow.journal.streams(p)
            }
        known.update(self._list_folders(self.project))
        return sorted(known)

    def skills(self, warnings: list[str] | None = None) -> list[SkillState]:
        """Every live skill of this session (hand edits of their folders imported)."""
        notes = warnings if warnings is not None else []
        streams = [skill_stream(i) for i in self.ids()]
        states = self._pipe.read(streams, notes) if streams else {}
        return [s for s in states.values() if s.exists]

    def get(self, skill_id: str) -> SkillState | None:
        stream = self._stream(skill_id)
        state = self._pipe.read([stream], [])[stream]
        return state if state.exists else None

    def location(self, skill_id: str) -> str:
        """Where the skill's SKILL.md is (or would be) on disk; raises `InvalidSkillId`."""
        return self._folders.describe(self._stream(skill_id))

    def hidden(self) -> set[str]:
        if self.telemetry is None or self.project is None:
            return set()
        return {
            i
            for i, v in self.telemetry.visibility(self.project).items()
            if v is SkillVisibility.HIDDEN
        }

    def visible(self) -> list[SkillState]:
        """Global skills minus those hidden for this project, plus the project's."""
        hidden = self.hidden()
        return [s for s in self.skills() if s.skill_id not in hidden]

    def discover(self) -> tuple[list[SkillState], list[str]]:
        """The skills to offer the model, counted as one exposure each per UTC day."""
        offered = self.visible()
        warnings: list[str] = []
        if self.telemetry is not None and self._config is not None:
            warnings = after_discovery(
                self.telemetry,
                [s.skill_id for s in offered],
                self.project,
                self._clock.now(),
                self._config,
            )
        return offered, warnings

    # -- writing ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(
        self, streams: Iterable[str], warnings: list[str], *, strict: bool = True
    ) -> Iterator[Batch[SkillState]]:
        """The write pipeline over several skill streams in ONE transaction (skill governance
        moves, ADR 0031): hand edits imported first, the caller appends through the batch,
        the folders render after COMMIT. Refused up front in a read-only store."""
        self._guard()
        with self._pipe.writing(streams, warnings, strict=strict) as batch:
            yield batch

    def shadowed(self, slug: str) -> str | None:
        """The refusal when the host agent's own skill root has a skill named `slug` (a
        global skill of that name would shadow it), else None."""
        if self._host is not None and (self._host / slug / "SKILL.md").exists():
            return shadow_message(str(self._host / slug / "SKILL.md"))
        return None

    def _stream(self, skill_id: str) -> str:
        scope, project, _slug = parse_skill_id(skill_id)
        if scope is SkillScope.PROJECT and project != self.project:
            raise InvalidSkillId(
                f"{shown(skill_id)} belongs to another project; this session's project is "
                f"{self.project or '(none)'}"
            )
        return skill_stream(skill_id)

    def _refused(self, action: SkillAction, scope: SkillScope | str | None) -> SkillResult | None:
        if not self.child:
            return None
        problem = child_session_problem(action, scope)
        if problem is None:
            return None
        return SkillResult(success=False, status=Status.FORBIDDEN, message=f"Refused: {problem}.")

    def _write(self, stream: str, decide: Callable[[SkillState], SkillDecision]) -> SkillResult:
        self._guard()
        warnings: list[str] = []
        with self._pipe.writing([stream], warnings) as batch:
            decision = decide(batch.states[stream])
            if decision.success:
                batch.append(stream, decision.events)
        state = self._pipe.cached(stream)
        return SkillResult(
            success=decision.success,
            status=decision.status,
            message=decision.message,
            skill_id=decision.skill_id,
            matches=decision.matches,
            warnings=(*decision.notes, *warnings),
            skill=state if state is not None and state.exists else None,
        )

    def create(
        self,
        *,
        scope: str | None,
        name: str,
        description: str,
        content: str | None = None,
        when_to_use: str | None = None,
        procedure_steps: Sequence[str] = (),
        pitfalls: Sequence[str] = (),
        verification_steps: Sequence[str] = (),
    ) -> SkillResult:
        refused = self._refused(SkillAction.CREATE, scope)
        if refused is not None:
            return refused
        planned = new_skill_id(scope=scope, project=self.project, name=name)
        if isinstance(planned, SkillDecision):
            return SkillResult(success=False, status=planned.status, message=planned.message)
        slug = planned.rsplit(":", 1)[1]
        shadow = self.shadowed(slug)
        if shadow is not None:
            return SkillResult(success=False, status=Status.NAME_COLLISION, message=shadow)
        others = [s for s in self.skills() if s.scope is SkillScope.GLOBAL]
        now = self._clock.now()
        return self._write(
            skill_stream(planned),
            lambda state: decide_create(
                state,
                scope=scope,
                project=self.project,
                name=name,
                description=description,
                content=content,
                when_to_use=when_to_use,
                procedure_steps=procedure_steps,
                pitfalls=pitfalls,
                verification_steps=verification_steps,
                at=now,
                global_skills=others,
            ),
        )

    def _scope_of(self, skill_id: str) -> SkillScope:
        return parse_skill_id(skill_id)[0]

    def patch(self, skill_id: str, *, section: str, content: str | Sequence[str]) -> SkillResult:
        refused = self._refused(SkillAction.PATCH, self._scope_of(skill_id))
        if refused is not None:
            return refused
        now = self._clock.now()
        return self._write(
            self._stream(skill_id),
            lambda s: decide_patch(s, section=section, content=content, at=now),
        )

    def update(
        self, skill_id: str, *, description: str | None = None, body: str | None = None
    ) -> SkillResult:
        refused = self._refused(SkillAction.UPDATE, self._scope_of(skill_id))
        if refused is not None:
            return refused
        now = self._clock.now()
        return self._write(
            self._stream(skill_id),
            lambda s: decide_update(s, description=description, body=body, at=now),
        )

    def delete(self, skill_id: str) -> SkillResult:
        refused = self._refused(SkillAction.DELETE, self._scope_of(skill_id))
        if refused is not None:
            return refused
        now = self._clock.now()
        return self._write(self._stream(skill_id), lambda s: decide_delete(s, at=now))

    def write_file(self, skill_id: str, path: str, content: str) -> SkillResult:
        refused = self._refused(SkillAction.WRITE_FILE, self._scope_of(skill_id))
        if refused is not None:
            return refused
        problem = self._link_problem(self._stream(skill_id), path)
        if problem is not None:
            return SkillResult(
                success=False,
                status=Status.INVALID,
                message=f"Refused: {problem}.",
                skill_id=skill_id,
            )
        now = self._clock.now()
        return self._write(
            self._stream(skill_id),
            lambda s: decide_write_file(s, path=path, content=content, at=now),
        )

    def remove_file(self, skill_id: str, path: str) -> SkillResult:
        refused = self._refused(SkillAction.REMOVE_FILE, self._scope_of(skill_id))
        if refused is not None:
            return refused
        now = self._clock.now()
        return self._write(
            self._stream(skill_id), lambda s: decide_remove_file(s, path=path, at=now)
        )

    def use(self, skill_id: str, *, task_domain: str | None = None) -> SkillResult:
        """The whole skill, and one piece of usage evidence (main sessions only)."""
        refused = self._refused(SkillAction.USE, self._scope_of(skill_id))
        if refused is not None:
            return refused
        state = self.get(skill_id)
        if state is None:
            return SkillResult(
                success=False, status=Status.NOT_FOUND, message=f"No skill {skill_id}."
            )
        warnings: tuple[str, ...] = ()
        if self.telemetry is not None:
            self._guard()
            self.telemetry.record_use(
                UsageEvidence(
                    skill_id=skill_id,
                    session_id=self.session_id or "unknown",
                    project=self.project,
                    task_domain=task_domain,
                    at=self._clock.now(),
                    main_session=not self.child,
                )
            )
        else:
            warnings = ("Usage evidence is off (no statistics store); the skill was shown.",)
        return SkillResult(
            success=True,
            status=Status.OK,
            message=f"Using skill {skill_id}.",
            skill_id=skill_id,
            skill=state,
            warnings=warnings,
        )

    def visibility_states(self, project: str | None = None) -> tuple[str | None, dict[str, str]]:
        """(project, skill id -> hidden/shown) of the global skills set for `project`;
        InvalidArgument for a project name that cannot be one."""
        where = project or self.project
        problem = None if where is None else project_name_problem(where)
        if problem is not None:
            raise InvalidArgument(problem)
        if where is None or self.telemetry is None:
            return where, {}
        return where, {i: v.value for i, v in self.telemetry.visibility(where).items()}

    def set_visibility(
        self, action: str, skill_ids: Sequence[str], project: str | None = None
    ) -> SkillResult:
        """hide / show / reset global skills for a project (default: this session's)."""
        refused = self._refused(SkillAction.VISIBILITY, None)
        if refused is not None:
            return refused
        where = project or self.project
        if where is None:
            return SkillResult(
                success=False,
                status=Status.INVALID,
                message="Visibility is per project and this session has none; pass project.",
            )
        problem = project_name_problem(where)
        if problem is not None:
            return SkillResult(success=False, status=Status.INVALID, message=f"{problem}.")
        if self.telemetry is None:
            return SkillResult(
                success=False, status=Status.ERROR, message="The statistics store is off."
            )
        for skill_id in skill_ids:
            if self._scope_of(skill_id) is not SkillScope.GLOBAL:
                return SkillResult(
                    success=False,
                    status=Status.INVALID,
                    message=f"{shown(skill_id)} is not a global skill; only global skills are "
                    "hidden or shown per project.",
                )
        if action in ("hide", "show"):  # reset may forget the choice for a deleted skill
            missing = [i for i in skill_ids if self.get(i) is None]
            if missing:
                return SkillResult(
                    success=False,
                    status=Status.NOT_FOUND,
                    message=f"No global skill {', '.join(map(shown, missing))}; nothing was "
                    "changed (`skills list` names them).",
                )
        self._guard()
        for skill_id in skill_ids:
            if action == "hide":
                self.telemetry.set_visibility(where, skill_id, SkillVisibility.HIDDEN)
            elif action == "show":
                self.telemetry.set_visibility(where, skill_id, SkillVisibility.SHOWN)
            elif action == "reset":
                self.telemetry.reset_visibility(where, skill_id)
            else:
                return SkillResult(
                    success=False,
                    status=Status.INVALID,
                    message="visibility action must be hide, show, reset or list",
                )
        return SkillResult(
            success=True,
            status=Status.OK,
            message=f"{action}: {', '.join(skill_ids)} for project {where}.",
        )
