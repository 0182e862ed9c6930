"""Skill governance (issue 11 §5, ADR 0031): status, curation jobs, explain, promote, demote,
restore, clear and reload — the actions of ``/memory-skill-governance``.

Promote and demote move a skill between two streams in ONE write transaction (`SkillService.
writing`): the destination gets the source's content and support files, the source is deleted,
and the destination's governance record keeps the backup `restore` needs. On the default SQLite
store the governance record commits in that same transaction (the skill tables share its
connection); the folders render after COMMIT and a crash in between converges on the next
operation, like every pipeline write.

Usage evidence stays under the id it was recorded with: after a promote, the uses of
``project:<p>:<slug>`` keep counting for that id (a restore brings them back into play); the
global skill starts with none.

Curation runs the classifier port (`SkillClassifier`) over the project's skills under the
project's one curation lease (`SkillTelemetry.begin_curation`), records each classification in
the governance records and ends the job with a reason code. The rule-based classifier ships
here; the LLM-backed one arrives with the next issue.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import attrs
from pi_hermes_memory.config import SkillGovernanceConfig
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.events import Origin
from pi_hermes_memory.domain.promotion import (
    Classification,
    ConflictStrategy,
    PromotionPolicy,
    ScopeVerdict,
    TaskDomain,
    UsageEvidence,
    classify_skill,
)
from pi_hermes_memory.domain.skill import (
    STREAM_PREFIX,
    InvalidSkillId,
    SkillState,
    parse_skill_id,
    skill_id_for,
    skill_stream,
)
from pi_hermes_memory.domain.skill_events import SkillScope
from pi_hermes_memory.domain.skill_move import SkillContent, copy_events, delete_events
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import HermesMemoryError
from pi_hermes_memory.governance_policy import CuratedWords, MoveBackup, promotion_policy
from pi_hermes_memory.governance_results import (
    CurationResult,
    Explanation,
    GovernanceResult,
    GovernanceStatus,
    ReloadResult,
    SkillGovernanceRow,
)
from pi_hermes_memory.pipeline import Batch
from pi_hermes_memory.ports import Clock, Storage
from pi_hermes_memory.skill_ports import (
    CurationKind,
    CurationRefusal,
    GovernanceRecord,
    JobLease,
    JobState,
    PolicyOverrides,
    RefusalReason,
    SkillTelemetry,
)
from pi_hermes_memory.skill_stats import curation_limits
from pi_hermes_memory.skills import SkillService

__all__ = [
    "CurationTimedOut",
    "RuleBasedClassifier",
    "SkillClassifier",
    "SkillGovernance",
    "SubmissionResult",
]

#: governance record states written here (the storage keeps any word)
PROMOTED, DEMOTED, RESTORED, CANDIDATE = "promoted", "demoted", "restored", "candidate"
#: reason codes of finished curation jobs
OK_CODE, NO_SKILLS, TIMEOUT, CLASSIFIER_ERROR = "ok", "no-skills", "timeout", "classifier-error"
_REASON_CHARS = 1000


class CurationTimedOut(HermesMemoryError, TimeoutError):
    """A classifier ran past ``curationTimeoutMs``."""


class SkillClassifier(Protocol):
    """Classifies skills for curation: task domain and scope verdict, with reasons.

    Returns one `Classification` per skill it could judge (skills it leaves out are not
    recorded). Raises `CurationTimedOut` when it cannot finish within `timeout` seconds; any
    other exception fails the job (reason ``classifier-error``)."""

    def classify(
        self,
        skills: Sequence[SkillState],
        policy: PromotionPolicy,
        project: str | None,
        *,
        timeout: float,
        project_names: frozenset[str] = frozenset(),
    ) -> list[Classification]: ...


class RuleBasedClassifier:
    """The deterministic classifier: the domain's global-safe rules (`classify_skill`)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic

    def classify(
        self,
        skills: Sequence[SkillState],
        policy: PromotionPolicy,
        project: str | None,
        *,
        timeout: float,
        project_names: frozenset[str] = frozenset(),
    ) -> list[Classification]:
        start = self._monotonic()
        names = project_names | ({project} if project else frozenset())
        out: list[Classification] = []
        for skill in skills:
            if self._monotonic() - start > timeout:
                raise CurationTimedOut(
                    f"classified {len(out)} of {len(skills)} skills in {timeout:g} s"
                )
            out.append(classify_skill(skill, policy, project_names=names))
        return out


@attrs.frozen(kw_only=True)
class SubmissionResult:
    """What `record_submission` stored: the skills recorded, the items refused (skill id,
    why) and the project's curated words now."""

    recorded: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]
    words: CuratedWords
    warnings: tuple[str, ...] = ()


def _clip(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


class SkillGovernance:
    """The governance actions of one session (its project)."""

    def __init__(
        self,
        *,
        skills: SkillService,
        telemetry: SkillTelemetry | None,
        config: SkillGovernanceConfig,
        storage: Storage,
        clock: Clock,
        logger: Any,
        classifier: SkillClassifier | None = None,
        write_guard: Callable[[], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._skills = skills
        self._telemetry = telemetry
        self._config = config
        self._storage = storage
        self._clock = clock
        self._log = logger
        self._monotonic = monotonic
        self.classifier: SkillClassifier = classifier or RuleBasedClassifier(monotonic)
        self._guard = write_guard or (lambda: None)

    @property
    def project(self) -> str | None:
        return self._skills.project

    @property
    def child(self) -> bool:
        return self._skills.child

    # -- policy --------------------------------------------------------------------------------

    def curated(self) -> CuratedWords:
        """This project's curated policy words (none without a project or statistics)."""
        if self._telemetry is None or self.project is None:
            return CuratedWords()
        stored = self._telemetry.policy_overrides(self.project)
        if stored is None:
            return CuratedWords()
        try:
            return CuratedWords.from_data(stored.data)
        except (ValueError, KeyError, TypeError) as exc:
            self._log.warning("skills.governance.overrides_unreadable", error=str(exc))
            return CuratedWords()

    def policy(self) -> PromotionPolicy:
        """The static configuration plus this project's curated words."""
        return promotion_policy(self._config, self.curated())

    def _usages(self, skill_id: str | None = None) -> list[UsageEvidence]:
        if self._telemetry is None:
            return []
        return list(self._telemetry.usages(skill_id))

    def _project_names(self, usages: Iterable[UsageEvidence]) -> frozenset[str]:
        """Every project name this store knows: the session's, those of project skill
        streams, and those of recorded uses (the global-safe rule G1 looks for them)."""
        names = {u.project for u in usages if u.project}
        if self.project:
            names.add(self.project)
        with self._storage.snapshot() as uow:
            for stream in uow.journal.streams(f"{STREAM_PREFIX}project:"):
                try:
                    _, project, _ = parse_skill_id(stream.removeprefix(STREAM_PREFIX))
                except InvalidSkillId:
                    continue
                if project:
                    names.add(project)
        return frozenset(names)

    # -- reading -------------------------------------------------------------------------------

    def status(self) -> GovernanceStatus:
        """Each project skill: recorded state and candidacy; the Curation Jobs section."""
        warnings: list[str] = []
        live = self._skills.skills(warnings)
        usages = self._usages()
        names = self._project_names(usages)
        policy = self.policy()
        global_slugs = frozenset(s.slug for s in live if s.scope is SkillScope.GLOBAL)
        records = {}
        if self._telemetry is not None:
            records = {r.skill_id: r for r in self._telemetry.governance_records()}
        rows = []
        mine = [s for s in live if s.scope is SkillScope.PROJECT and s.project == self.project]
        for skill in mine:
            verdict = policy.evaluate(skill, usages, global_slugs, names)
            record = records.get(skill.skill_id)
            rows.append(
                SkillGovernanceRow(
                    skill_id=skill.skill_id,
                    scope=skill.scope.value,
                    state=record.state if record else "none",
                    candidate=verdict.candidate,
                    task_domain=verdict.task_domain or verdict.classification.task_domain,
                    failed=verdict.reasons,
                    record=record,
                )
            )
        shown_ids = {s.skill_id for s in mine}
        live_ids = {s.skill_id for s in live}
        for skill_id, record in records.items():
            if skill_id in shown_ids or not self._ours(skill_id):
                continue
            scope, _, _ = parse_skill_id(skill_id)
            rows.append(
                SkillGovernanceRow(
                    skill_id=skill_id,
                    scope=scope.value,
                    state=record.state,
                    candidate=False,
                    task_domain=record.task_domain,
                    failed=(),
                    record=record,
                    exists=skill_id in live_ids,
                )
            )
        rows.sort(key=lambda r: r.skill_id)
        curation = None
        if self._telemetry is not None and self.project is not None:
            curation = self._telemetry.curation_status(self.project)
        else:
            warnings.append("Curation needs a current project and the statistics store.")
        curated = self.curated()
        return GovernanceStatus(
            success=True,
            status=Status.OK,
            message=f"{len(mine)} project skill(s); "
            f"{sum(r.candidate for r in rows)} promotion candidate(s).",
            project=self.project,
            skills=tuple(rows),
            curation=curation,
            task_domains=tuple(d.id for d in policy.domains),
            scope_policy_words=curated.scope_policy_words,
            warnings=tuple(warnings),
        )

    def _ours(self, skill_id: str) -> bool:
        """A global skill, or one of this session's project."""
        try:
            scope, project, _ = parse_skill_id(skill_id)
        except InvalidSkillId:
            return False
        return scope is SkillScope.GLOBAL or project == self.project

    def explain(self, skill_id: str) -> Explanation:
        """Every promotion criterion of `skill_id` with its numbers."""
        try:
            scope, project, _ = parse_skill_id(skill_id)
        except InvalidSkillId as exc:
            return Explanation(
                success=False, status=Status.INVALID, message=str(exc), skill_id=skill_id
            )
        if scope is SkillScope.PROJECT and project != self.project:
            return Explanation(
                success=False,
                status=Status.INVALID,
                message=f"{skill_id} belongs to another project; this session's project is "
                f"{self.project or '(none)'}.",
                skill_id=skill_id,
            )
        warnings: list[str] = []
        live = self._skills.skills(warnings)
        state = next((s for s in live if s.skill_id == skill_id), None)
        state = state or SkillState.empty(skill_stream(skill_id))
        usages = self._usages(skill_id)
        names = self._project_names(usages)
        global_slugs = frozenset(s.slug for s in live if s.scope is SkillScope.GLOBAL)
        verdict = self.policy().evaluate(state, usages, global_slugs, names)
        lines = list(verdict.explain_lines())
        lines.append(
            f"classification: {verdict.classification.scope_verdict.value}, task domain "
            f"{verdict.classification.task_domain or '(none inferred)'}"
        )
        record = self._telemetry.governance(skill_id) if self._telemetry else None
        if record is not None:
            moved = (
                f", last move {record.promoted_from} -> {record.promoted_to}"
                if record.promoted_from
                else ""
            )
            lines.append(
                f"governance record: {record.state} at {record.updated_at.isoformat()}{moved}"
                + (f" ({record.reason})" if record.reason else "")
            )
        if self._telemetry is None:
            lines.append("usage evidence is off (no statistics store)")
        return Explanation(
            success=True,
            status=Status.OK,
            message=lines[0],
            skill_id=skill_id,
            candidate=verdict.candidate,
            task_domain=verdict.task_domain,
            lines=tuple(lines),
            record=record,
            warnings=tuple(warnings),
        )

    # -- moves ---------------------------------------------------------------------------------

    def _refused(self, action: str, skill_id: str | None) -> GovernanceResult | None:
        if self.child:
            return GovernanceResult(
                success=False,
                status=Status.FORBIDDEN,
                message=f"Refused: a child session cannot {action} skills; a person or the "
                "main session decides on governance.",
                action=action,
                skill_id=skill_id,
            )
        if self._telemetry is None:
            return GovernanceResult(
                success=False,
                status=Status.ERROR,
                message=f"{action} needs the statistics store (governance records); it is "
                "off for this store.",
                action=action,
                skill_id=skill_id,
            )
        return None

    def _parsed(
        self, action: str, skill_id: str, scope: SkillScope
    ) -> tuple[str, GovernanceResult | None]:
        """The slug of `skill_id` if it is a `scope` skill usable here, else a refusal."""
        try:
            kind, project, slug = parse_skill_id(skill_id)
        except InvalidSkillId as exc:
            return "", self._result(action, skill_id, Status.INVALID, str(exc))
        if kind is not scope:
            which = (
                "a project skill (project:<project>:<slug>)"
                if scope is SkillScope.PROJECT
                else ("a global skill (global:<slug>)")
            )
            return "", self._result(action, skill_id, Status.INVALID, f"{action} takes {which}.")
        if self.project is None:
            return "", self._result(
                action, skill_id, Status.INVALID, f"{action} needs a current project."
            )
        if scope is SkillScope.PROJECT and project != self.project:
            return "", self._result(
                action,
                skill_id,
                Status.INVALID,
                f"{skill_id} belongs to another project; this session's project is {self.project}.",
            )
        return slug, None

    @staticmethod
    def _result(
        action: str,
        skill_id: str | None,
        status: Status,
        message: str,
        *,
        moved_to: str | None = None,
        criteria: Sequence[str] = (),
        warnings: Sequence[str] = (),
    ) -> GovernanceResult:
        return GovernanceResult(
            success=status
            in (Status.PROMOTED, Status.DEMOTED, Status.RESTORED, Status.OK, Status.NOOP),
            status=status,
            message=message,
            action=action,
            skill_id=skill_id,
            moved_to=moved_to,
            criteria=tuple(criteria),
            warnings=tuple(warnings),
        )

    def promote(self, skill_id: str, *, force: bool = False) -> GovernanceResult:
        """Make project skill `skill_id` the global skill of its slug.

        Refused unless it is a promotion candidate (`explain`); `force` (a person's decision)
        skips the evidence and global-safe criteria. ``promotionEnabled: false`` refuses every
        promote; ``promotionConflictStrategy`` decides when a global skill has the slug
        (block: refused; overwrite: replaced, its content kept in the backup)."""
        action = "promote"
        refused = self._refused(action, skill_id)
        if refused is not None:
            return refused
        if not self._config.promotion_enabled:
            return self._result(
                action,
                skill_id,
                Status.FORBIDDEN,
                "Promotion is off (skillGovernance.promotionEnabled is false).",
            )
        slug, refused = self._parsed(action, skill_id, SkillScope.PROJECT)
        if refused is not None:
            return refused
        shadow = self._skills.shadowed(slug)
        if shadow is not None:
            return self._result(action, skill_id, Status.NAME_COLLISION, shadow)
        dest = skill_id_for(SkillScope.GLOBAL, None, slug)
        usages = self._usages(skill_id)
        names = self._project_names(usages)
        policy = self.policy()

        def decide(batch: Batch[SkillState], src: SkillState, dst: SkillState) -> GovernanceResult:
            globals_ = frozenset({slug}) if dst.exists else frozenset[str]()
            verdict = policy.evaluate(src, usages, globals_, names)
            if dst.exists and policy.conflict_strategy is ConflictStrategy.BLOCK:
                return self._result(
                    action,
                    skill_id,
                    Status.CONFLICT,
                    f"Global skill {dest} already exists and promotionConflictStrategy is "
                    "block: nothing was moved. Rename or delete one of them, or set the "
                    "strategy to overwrite.",
                    criteria=verdict.explain_lines(),
                )
            if not verdict.candidate and not force:
                failed = ", ".join(verdict.reasons)
                return self._result(
                    action,
                    skill_id,
                    Status.BLOCKED,
                    f"{skill_id} is not a promotion candidate ({failed}); nothing was moved. "
                    "See explain; a person may promote it anyway with force.",
                    criteria=verdict.explain_lines(),
                )
            domain = verdict.task_domain or verdict.classification.task_domain
            how = "forced by a person" if force and not verdict.candidate else "candidate"
            return self._move(batch, action, src, dst, domain, how)

        return self._moving(action, skill_id, dest, decide)

    def demote(self, skill_id: str) -> GovernanceResult:
        """Move global skill `skill_id` into the current project (same slug). A project skill
        of that slug: refused (block) or replaced (overwrite), as for promote."""
        action = "demote"
        refused = self._refused(action, skill_id)
        if refused is not None:
            return refused
        slug, refused = self._parsed(action, skill_id, SkillScope.GLOBAL)
        if refused is not None:
            return refused
        dest = skill_id_for(SkillScope.PROJECT, self.project, slug)
        strategy = ConflictStrategy(self._config.promotion_conflict_strategy.value)

        def decide(batch: Batch[SkillState], src: SkillState, dst: SkillState) -> GovernanceResult:
            if dst.exists and strategy is ConflictStrategy.BLOCK:
                return self._result(
                    action,
                    skill_id,
                    Status.CONFLICT,
                    f"Project skill {dest} already exists and promotionConflictStrategy is "
                    "block: nothing was moved.",
                )
            return self._move(batch, action, src, dst, None, "demoted by a person")

        return self._moving(action, skill_id, dest, decide)

    def _moving(
        self,
        action: str,
        skill_id: str,
        dest: str,
        decide: Callable[[Batch[SkillState], SkillState, SkillState], GovernanceResult],
    ) -> GovernanceResult:
        """Open one write over the source and destination streams and let `decide` move."""
        warnings: list[str] = []
        source_stream, dest_stream = skill_stream(skill_id), skill_stream(dest)
        with self._skills.writing([source_stream, dest_stream], warnings) as batch:
            src, dst = batch.states[source_stream], batch.states[dest_stream]
            if not src.exists:
                result = self._result(action, skill_id, Status.NOT_FOUND, f"No skill {skill_id}.")
            else:
                result = decide(batch, src, dst)
        if result.success:
            self._log.info("skills.governance.moved", action=action, source=skill_id, dest=dest)
        return attrs.evolve(result, warnings=(*result.warnings, *warnings))

    def _move(
        self,
        batch: Batch[SkillState],
        action: str,
        src: SkillState,
        dst: SkillState,
        domain: str | None,
        how: str,
    ) -> GovernanceResult:
        """Inside the write: copy `src` onto `dst`, delete `src`, record both ids."""
        assert self._telemetry is not None  # _refused checked it
        now = self._clock.now()
        content = SkillContent.of(src)
        replaced = SkillContent.of(dst) if dst.exists else None
        after = batch.append(
            dst.stream, copy_events(dst, content, at=now, origin=Origin.GOVERNANCE)
        )
        batch.append(src.stream, delete_events(src, at=now, origin=Origin.GOVERNANCE))
        backup = MoveBackup(
            action=action,
            source=src.skill_id,
            dest=dst.skill_id,
            dest_version=after.version,
            content=content,
            replaced=replaced,
        )
        state = PROMOTED if action == "promote" else DEMOTED
        overwrote = f"; replaced the previous {dst.skill_id}" if replaced else ""
        self._telemetry.set_governance(
            GovernanceRecord(
                skill_id=dst.skill_id,
                state=state,
                updated_at=now,
                task_domain=domain,
                reason=_clip(f"{action}d from {src.skill_id} ({how}){overwrote}"),
                promoted_from=src.skill_id,
                promoted_to=dst.skill_id,
                backup=backup.encode(),
            )
        )
        self._telemetry.set_governance(
            GovernanceRecord(
                skill_id=src.skill_id,
                state=state,
                updated_at=now,
                task_domain=domain,
                reason=_clip(f"{action}d to {dst.skill_id} ({how})"),
                promoted_from=src.skill_id,
                promoted_to=dst.skill_id,
            )
        )
        status = Status.PROMOTED if action == "promote" else Status.DEMOTED
        return self._result(
            action,
            src.skill_id,
            status,
            f"{src.skill_id} is now {dst.skill_id} ({len(content.files)} support file(s))"
            f"{overwrote}. Run reload (or start a new session) so discovery sees it; restore "
            "undoes it.",
            moved_to=dst.skill_id,
        )

    def _move_record(self, skill_id: str) -> GovernanceRecord | None:
        """The record holding the backup of the last move of `skill_id` (either end)."""
        assert self._telemetry is not None
        record = self._telemetry.governance(skill_id)
        if record is None:
            return None
        if record.backup is not None:
            return record
        if record.promoted_to and record.promoted_to != skill_id:
            other = self._telemetry.governance(record.promoted_to)
            if other is not None and other.backup and other.promoted_from == skill_id:
                return other
        return None

    def restore(self, skill_id: str, *, force: bool = False) -> GovernanceResult:
        """Undo the last promote or demote of `skill_id` (its source or destination id): the
        source is created again with the content it had, the destination gets back what it
        replaced (or is deleted). Refused when the destination changed since the move or the
        source exists again, unless `force` (those changes are then discarded)."""
        action = "restore"
        refused = self._refused(action, skill_id)
        if refused is not None:
            return refused
        try:
            parse_skill_id(skill_id)
        except InvalidSkillId as exc:
            return self._result(action, skill_id, Status.INVALID, str(exc))
        record = self._move_record(skill_id)
        if record is None or record.backup is None:
            return self._result(
                action,
                skill_id,
                Status.NOT_FOUND,
                f"{skill_id} has no promote or demote to undo (none recorded, already "
                "restored, or cleared).",
            )
        try:
            backup = MoveBackup.decode(record.backup)
        except ValueError as exc:
            return self._result(
                action,
                skill_id,
                Status.ERROR,
                f"The restore backup of {skill_id} is unusable: {exc}",
            )
        for end in (backup.source, backup.dest):
            if not self._ours(end):
                return self._result(
                    action,
                    skill_id,
                    Status.INVALID,
                    f"The move touched {end}, a skill of another project; restore it from "
                    "that project.",
                )
        warnings: list[str] = []
        now = self._clock.now()
        src_stream, dst_stream = skill_stream(backup.source), skill_stream(backup.dest)
        with self._skills.writing([src_stream, dst_stream], warnings) as batch:
            src, dst = batch.states[src_stream], batch.states[dst_stream]
            problem = None
            if dst.version != backup.dest_version:
                problem = (
                    f"{backup.dest} changed since the {backup.action} (now stream version "
                    f"{dst.version}, {backup.dest_version} after the move)"
                )
            elif src.exists:
                problem = f"{backup.source} exists again"
            if problem is not None and not force:
                result = self._result(
                    action,
                    skill_id,
                    Status.CONFLICT,
                    f"{problem}; nothing was restored. restore with force discards those changes.",
                )
            else:
                batch.append(
                    src.stream, copy_events(src, backup.content, at=now, origin=Origin.GOVERNANCE)
                )
                if backup.replaced is not None:
                    events = copy_events(dst, backup.replaced, at=now, origin=Origin.GOVERNANCE)
                else:
                    events = delete_events(dst, at=now, origin=Origin.GOVERNANCE)
                batch.append(dst.stream, events)
                what = f"undid the {backup.action} of {backup.source} to {backup.dest}"
                assert self._telemetry is not None
                for end in (backup.source, backup.dest):
                    self._telemetry.set_governance(
                        GovernanceRecord(
                            skill_id=end,
                            state=RESTORED,
                            updated_at=now,
                            reason=_clip(what + (" (forced)" if problem else "")),
                            promoted_from=backup.source,
                            promoted_to=backup.dest,
                        )
                    )
                back = f"; {backup.dest} has its previous content again" if backup.replaced else ""
                result = self._result(
                    action,
                    skill_id,
                    Status.RESTORED,
                    f"Restored {backup.source}: {what}{back}. Run reload so discovery sees it.",
                    moved_to=backup.source,
                )
        return attrs.evolve(result, warnings=(*result.warnings, *warnings))

    def clear(self, skill_id: str) -> GovernanceResult:
        """Forget the governance record of `skill_id` (its restore backup too)."""
        action = "clear"
        refused = self._refused(action, skill_id)
        if refused is not None:
            return refused
        try:
            parse_skill_id(skill_id)
        except InvalidSkillId as exc:
            return self._result(action, skill_id, Status.INVALID, str(exc))
        self._guard()
        assert self._telemetry is not None
        if self._telemetry.clear_governance(skill_id):
            return self._result(
                action, skill_id, Status.OK, f"Forgot the governance record of {skill_id}."
            )
        return self._result(action, skill_id, Status.NOOP, f"{skill_id} had no governance record.")

    def reload(self) -> ReloadResult:
        """Re-read every skill folder (importing hand edits) and say what discovery offers
        now. Hosts call it after hide/show/promote/demote/restore so discovery refreshes."""
        warnings: list[str] = []
        streams = [skill_stream(i) for i in self._skills.ids()]
        imported = 0
        if streams:
            with self._skills.writing(streams, warnings, strict=False) as batch:
                imported = sum(batch.imported.values())
                total = sum(1 for s in batch.states.values() if s.exists)
        else:
            total = 0
        visible = tuple(s.skill_id for s in self._skills.visible())
        return ReloadResult(
            success=True,
            status=Status.OK,
            message=f"Reloaded {total} skill(s) ({imported} change(s) imported from their "
            f"folders); {len(visible)} visible to this session.",
            visible=visible,
            total=total,
            imported=imported,
            warnings=tuple(warnings),
        )

    # -- curation ------------------------------------------------------------------------------

    def curate(self) -> CurationResult:
        """A manual curation run: refused (busy) while the project's lease is held."""
        return self._curate(CurationKind.MANUAL)

    def maybe_auto_curate(self) -> CurationResult:
        """An automatic run when the lease and its cooldowns allow (hosts call this, e.g.
        after a session ends); a refusal is a skip, counted per reason."""
        kind = CurationKind.AUTO
        reason = None
        if self.child:
            reason = "child-session"
        elif self.project is None:
            reason = "no-project"
        elif self._telemetry is None:
            reason = "no-statistics"
        else:
            try:
                self._guard()
            except HermesMemoryError:
                reason = "read-only"
        if reason is not None:
            return CurationResult(
                success=False,
                status=Status.SKIPPED,
                message=f"Automatic curation skipped ({reason}).",
                kind=kind.value,
                refusal=reason,
            )
        return self._curate(kind)

    def _curate(self, kind: CurationKind) -> CurationResult:
        if self.child:
            return CurationResult(
                success=False,
                status=Status.FORBIDDEN,
                message="A child session submits classifications through "
                "skill_governance_curate; it does not start curation jobs.",
                kind=kind.value,
            )
        if self.project is None or self._telemetry is None:
            return CurationResult(
                success=False,
                status=Status.INVALID,
                message="Curation is per project and needs the statistics store: this session "
                + ("has no project." if self.project is None else "has no statistics store."),
                kind=kind.value,
            )
        self._guard()
        now = self._clock.now()
        lease = self._telemetry.begin_curation(
            self.project, kind, now, curation_limits(self._config)
        )
        if isinstance(lease, CurationRefusal):
            return self._refusal(lease)
        return self._run_job(lease)

    def _refusal(self, refusal: CurationRefusal) -> CurationResult:
        if refusal.reason is RefusalReason.BUSY:
            message = (
                f"A curation job of project {refusal.project} is running or queued; try again "
                "later."
            )
            status = Status.BUSY
        elif refusal.reason is RefusalReason.FAILURE_CAP:
            message = (
                "Automatic curation stopped after "
                f"{self._config.curation_max_consecutive_failures} failures in a row "
                "(skillGovernance.curationMaxConsecutiveFailures); a manual curate that "
                "succeeds resets it."
            )
            status = Status.SKIPPED
        else:
            until = refusal.until.isoformat() if refusal.until else "later"
            message = f"Automatic curation waits out its {refusal.reason.value} until {until}."
            status = Status.SKIPPED
        return CurationResult(
            success=False,
            status=status,
            message=message,
            kind=refusal.kind.value,
            refusal=refusal.reason.value,
            until=refusal.until,
            cleared_stale=refusal.cleared_stale,
        )

    def _run_job(self, lease: JobLease) -> CurationResult:
        assert self._telemetry is not None and self.project is not None
        telemetry, project = self._telemetry, self.project
        timeout = self._config.curation_timeout_ms / 1000
        warnings: list[str] = []
        classified = 0
        try:
            live = self._skills.skills(warnings)
            mine = [s for s in live if s.scope is SkillScope.PROJECT and s.project == project]
            if not mine:
                code = NO_SKILLS
            else:
                usages = self._usages()
                names = self._project_names(usages)
                policy = self.policy()
                start = self._monotonic()
                found = self.classifier.classify(
                    mine, policy, project, timeout=timeout, project_names=names
                )
                if self._monotonic() - start > timeout:
                    raise CurationTimedOut(f"the classifier took longer than {timeout:g} s")
                global_slugs = frozenset(s.slug for s in live if s.scope is SkillScope.GLOBAL)
                classified = self._record(
                    found, mine, usages, global_slugs, names, policy, warnings
                )
                code = OK_CODE
        except CurationTimedOut as exc:
            telemetry.finish_curation(lease.job_id, JobState.TIMED_OUT, TIMEOUT, self._clock.now())
            return self._job_result(
                lease, JobState.TIMED_OUT, TIMEOUT, f"timed out: {exc}", 0, warnings
            )
        except Exception as exc:  # any classifier failure ends the job; the lease is released
            self._log.error("skills.curation.failed", job=lease.job_id, exc_info=True)
            telemetry.finish_curation(
                lease.job_id, JobState.FAILED, CLASSIFIER_ERROR, self._clock.now()
            )
            detail = shown(str(exc) or type(exc).__name__, 200)
            return self._job_result(
                lease, JobState.FAILED, CLASSIFIER_ERROR, f"failed: {detail}", 0, warnings
            )
        telemetry.finish_curation(lease.job_id, JobState.SUCCEEDED, code, self._clock.now())
        return self._job_result(
            lease,
            JobState.SUCCEEDED,
            code,
            f"classified {classified} skill(s)",
            classified,
            warnings,
        )

    def _job_result(
        self,
        lease: JobLease,
        state: JobState,
        code: str,
        what: str,
        classified: int,
        warnings: list[str],
    ) -> CurationResult:
        ok = state is JobState.SUCCEEDED
        stale = f" ({lease.cleared_stale} stale job(s) closed first)" if lease.cleared_stale else ""
        return CurationResult(
            success=ok,
            status=Status.OK if ok else Status.FAILED,
            message=f"Curation job {lease.job_id} ({lease.kind.value}) {what}{stale}.",
            kind=lease.kind.value,
            job_id=lease.job_id,
            state=state.value,
            reason_code=code,
            classified=classified,
            cleared_stale=lease.cleared_stale,
            warnings=tuple(warnings),
        )

    def _record(
        self,
        found: Sequence[Classification],
        skills: Sequence[SkillState],
        usages: Sequence[UsageEvidence],
        global_slugs: frozenset[str],
        names: frozenset[str],
        policy: PromotionPolicy,
        warnings: list[str],
        source: str = "rules",
    ) -> int:
        """Store each classification in its skill's governance record (keeping the move and
        backup fields of an earlier promote/demote); returns how many were stored."""
        assert self._telemetry is not None
        by_id = {s.skill_id: s for s in skills}
        now = self._clock.now()
        stored = 0
        for item in found:
            skill = by_id.get(item.skill_id)
            if skill is None:
                warnings.append(
                    f"ignored a classification of {shown(item.skill_id)}: not a "
                    "project skill of this session"
                )
                continue
            verdict = policy.evaluate(skill, usages, global_slugs, names)
            safe = item.scope_verdict is ScopeVerdict.GLOBAL_SAFE
            state = CANDIDATE if verdict.candidate and safe else item.scope_verdict.value
            old = self._telemetry.governance(skill.skill_id)
            reason = f"{source}: " + "; ".join(item.reasons)
            if not verdict.candidate:
                reason += f" [not a candidate: {', '.join(verdict.reasons)}]"
            self._telemetry.set_governance(
                GovernanceRecord(
                    skill_id=skill.skill_id,
                    state=state,
                    updated_at=now,
                    task_domain=item.task_domain,
                    reason=_clip(reason),
                    promoted_from=old.promoted_from if old else None,
                    promoted_to=old.promoted_to if old else None,
                    backup=old.backup if old else None,
                )
            )
            stored += 1
        return stored

    def record_submission(
        self,
        classifications: Sequence[Classification],
        task_domains: Sequence[TaskDomain] | None = None,
        scope_policy_words: Sequence[str] | None = None,
    ) -> SubmissionResult:
        """Store what a curation child submitted (`skill_governance_curate`): its curated
        task domains and scope-policy words for this project first, then its classifications
        of this project's skills (a task domain must be one the policy then knows)."""
        if self._telemetry is None or self.project is None:
            raise HermesMemoryError(
                "curation results need a current project and the statistics store"
            )
        self._guard()
        words = self.curated()
        if task_domains is not None or scope_policy_words is not None:
            words = words.merged(task_domains, scope_policy_words)
            self._telemetry.set_policy_overrides(
                PolicyOverrides(
                    project=self.project, data=words.to_data(), updated_at=self._clock.now()
                )
            )
        warnings: list[str] = []
        live = self._skills.skills(warnings)
        mine = [s for s in live if s.scope is SkillScope.PROJECT and s.project == self.project]
        known = {s.skill_id for s in mine}
        policy = promotion_policy(self._config, words)
        domains = {d.id for d in policy.domains}
        accepted: list[Classification] = []
        refused: list[tuple[str, str]] = []
        for item in classifications:
            if item.skill_id not in known:
                refused.append(
                    (
                        item.skill_id,
                        "not a skill of this project (only project skills of the "
                        "current project are classified)",
                    )
                )
            elif item.task_domain is not None and item.task_domain not in domains:
                refused.append(
                    (
                        item.skill_id,
                        f"unknown task domain {shown(item.task_domain)}; known: "
                        f"{', '.join(sorted(domains))}",
                    )
                )
            else:
                accepted.append(item)
        usages = self._usages()
        names = self._project_names(usages)
        global_slugs = frozenset(s.slug for s in live if s.scope is SkillScope.GLOBAL)
        self._record(accepted, mine, usages, global_slugs, names, policy, warnings, "curated")
        return SubmissionResult(
            recorded=tuple(c.skill_id for c in accepted),
            refused=tuple(refused),
            words=words,
            warnings=tuple(warnings),
        )
