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

from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.skill import SkillState, parse_skill_id, skill_stream
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CurationTimedOut, InvalidSkillId
from pi_hermes_memory.skills.classifier import RuleBasedClassifier, SkillClassifier
from pi_hermes_memory.skills.governance.curation import GovernanceCuration, SubmissionResult
from pi_hermes_memory.skills.governance.moves import GovernanceMoves
from pi_hermes_memory.skills.governance.results import (
    Explanation,
    GovernanceResult,
    GovernanceStatus,
    ReloadResult,
    SkillGovernanceRow,
)

__all__ = [
    "CurationTimedOut",
    "RuleBasedClassifier",
    "SkillClassifier",
    "SkillGovernance",
    "SubmissionResult",
]


class SkillGovernance(GovernanceMoves, GovernanceCuration):
    """The governance actions of one session (its project): status, explain, curate,
    maybe_auto_curate, promote, demote, restore, clear, reload, record_submission."""

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
                message=f"{shown(skill_id)} belongs to another project; this session's project is "
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

    def clear(self, skill_id: str) -> GovernanceResult:
        """Forget the governance record of `skill_id` (its restore backup too)."""
        action = "clear"
        refused = self._admitted(action, skill_id)
        if refused is not None:
            return refused
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
