"""Curation jobs (ADR 0031): the classifier port run under the project's one curation lease,
classifications recorded in the governance records, and what a curation child submits through
`skill_governance_curate` (its classifications and the project's curated policy words)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.promotion import (
    Classification,
    PromotionPolicy,
    ScopeVerdict,
    TaskDomain,
    UsageEvidence,
)
from pi_hermes_memory.domain.skills.skill import SkillState
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CurationTimedOut, HermesMemoryError
from pi_hermes_memory.ports.skills import (
    CurationKind,
    CurationRefusal,
    GovernanceRecord,
    JobLease,
    JobState,
    PolicyOverrides,
    RefusalReason,
)
from pi_hermes_memory.skills.governance.base import (
    CANDIDATE,
    CLASSIFIER_ERROR,
    NO_SKILLS,
    OK_CODE,
    TIMEOUT,
    GovernanceBase,
    clip_reason,
)
from pi_hermes_memory.skills.governance.policy import CuratedWords, effective_policy
from pi_hermes_memory.skills.governance.results import CurationResult
from pi_hermes_memory.skills.stats import curation_limits

__all__ = ["GovernanceCuration", "SubmissionResult"]


@attrs.frozen(kw_only=True)
class SubmissionResult:
    """What `record_submission` stored: the skills recorded, the items refused (skill id,
    why) and the project's curated words now."""

    recorded: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]
    words: CuratedWords
    warnings: tuple[str, ...] = ()


class GovernanceCuration(GovernanceBase):
    """Manual and automatic curation runs, and curation children's submissions."""

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
                # a classifier may name itself in the records ("llm"); the port does not require it
                source = getattr(self.classifier, "source", "rules")
                classified = self._record(
                    found, mine, usages, global_slugs, names, policy, warnings, str(source)
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
                    reason=clip_reason(reason),
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
        policy = effective_policy(self._config, words)
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
