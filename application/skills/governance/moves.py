"""Promote, demote and restore (ADR 0031): a skill moves between two streams in ONE write
transaction, and the destination's governance record keeps what `restore` needs.

On the default SQLite store the governance records commit in that same transaction (the skill
tables share its connection; a nested transaction is a savepoint); the folders render after
COMMIT and a crash in between converges on the next operation, like every pipeline write.
Usage evidence stays under the id it was recorded with: after a promote, the uses of
``project:<p>:<slug>`` keep counting for that id; the global skill starts with none.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from pi_hermes_memory.domain.memory.events import Origin
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.move import SkillContent, copy_events, delete_events
from pi_hermes_memory.domain.skills.promotion import ConflictStrategy
from pi_hermes_memory.domain.skills.skill import (
    SkillState,
    skill_id_for,
    skill_stream,
)
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.journal.pipeline import Batch
from pi_hermes_memory.ports.skills import GovernanceRecord
from pi_hermes_memory.skills.governance.base import (
    DEMOTED,
    PROMOTED,
    RESTORED,
    GovernanceBase,
    clip_reason,
)
from pi_hermes_memory.skills.governance.policy import MoveBackup
from pi_hermes_memory.skills.governance.results import GovernanceResult

__all__ = ["GovernanceMoves"]


class GovernanceMoves(GovernanceBase):
    """Promote, demote and restore."""

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
                reason=clip_reason(f"{action}d from {src.skill_id} ({how}){overwrote}"),
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
                reason=clip_reason(f"{action}d to {dst.skill_id} ({how})"),
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
        refused = self._admitted(action, skill_id)
        if refused is not None:
            return refused
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
                            reason=clip_reason(what + (" (forced)" if problem else "")),
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
