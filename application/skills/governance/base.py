"""What every skill governance action shares (ADR 0031): the session, the policy in effect,
usage evidence and known project names, argument checks and results."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pi_hermes_memory.config.settings import SkillGovernanceConfig
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.promotion import PromotionPolicy, UsageEvidence
from pi_hermes_memory.domain.skills.skill import STREAM_PREFIX, parse_skill_id
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import InvalidSkillId
from pi_hermes_memory.ports.skills import SkillTelemetry
from pi_hermes_memory.ports.store import Clock, Storage
from pi_hermes_memory.skills.classifier import RuleBasedClassifier, SkillClassifier
from pi_hermes_memory.skills.governance.policy import CuratedWords, effective_policy
from pi_hermes_memory.skills.governance.results import GovernanceResult
from pi_hermes_memory.skills.service import SkillService

__all__ = ["GovernanceBase", "clip_reason"]

#: governance record states written here (the storage keeps any word)
PROMOTED, DEMOTED, RESTORED, CANDIDATE = "promoted", "demoted", "restored", "candidate"
#: reason codes of finished curation jobs
OK_CODE, NO_SKILLS, TIMEOUT, CLASSIFIER_ERROR = "ok", "no-skills", "timeout", "classifier-error"
_REASON_CHARS = 1000


def clip_reason(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


class GovernanceBase:
    """The session state of the governance services; `SkillGovernance` is the facade."""

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
        return effective_policy(self._config, self.curated())

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

    def _ours(self, skill_id: str) -> bool:
        """A global skill, or one of this session's project."""
        try:
            scope, project, _ = parse_skill_id(skill_id)
        except InvalidSkillId:
            return False
        return scope is SkillScope.GLOBAL or project == self.project

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

    def _admitted(self, action: str, skill_id: str) -> GovernanceResult | None:
        """The refusal of `action` on `skill_id` before any scope rule (`_refused`, or an id
        that does not parse); None when it may go ahead."""
        refused = self._refused(action, skill_id)
        if refused is not None:
            return refused
        try:
            parse_skill_id(skill_id)
        except InvalidSkillId as exc:
            return self._result(action, skill_id, Status.INVALID, str(exc))
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
                f"{shown(skill_id)} belongs to another project; this session's project is "
                f"{self.project}.",
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
