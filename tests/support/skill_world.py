"""Sessions of the skill and governance services over one store: in memory (unit tests) or on
real folders and SQLite (integration tests). Each `session(...)` is a fresh service pair, as a
new process would have."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
from pi_hermes_memory.config.settings import SkillGovernanceConfig, SkillScopesConfig
from pi_hermes_memory.domain.skills.promotion import Classification
from pi_hermes_memory.skills.governance.service import SkillClassifier, SkillGovernance
from pi_hermes_memory.skills.service import SkillService

T0 = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)

DEPLOY_BODY = (
    "## When to Use\nBefore a release goes out.\n\n"
    "## Procedure\n1. Build the docker image.\n2. Deploy and watch the rollout.\n\n"
    "## Pitfalls\n- No notable pitfalls recorded yet.\n\n"
    "## Verification\n1. The health check answers."
)


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now_value = now

    def now(self) -> datetime:
        return self.now_value

    def advance(self, **delta: float) -> None:
        self.now_value += timedelta(**delta)


class Log:
    """A logger that keeps the events (tests assert on names)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __getattr__(self, level: str) -> Callable[..., None]:
        def log(event: str, **_: Any) -> None:
            self.events.append((level, event))

        return log


def config(**changes: Any) -> SkillGovernanceConfig:
    base = SkillGovernanceConfig(scopes=SkillScopesConfig(global_skills_dir=Path("/unused")))
    return attrs.evolve(base, **changes)


@attrs.define
class World:
    """One store: journal storage, skill folders, statistics tables, a lock and a clock."""

    storage: Any
    folders: Any
    telemetry: Any
    lock: Callable[[float], Any]
    clock: Clock = attrs.field(factory=Clock)
    settings: SkillGovernanceConfig = attrs.field(factory=config)
    host_skills_dir: Path | None = None

    def session(
        self,
        project: str | None = "web",
        *,
        session_id: str = "s1",
        child: bool = False,
        classifier: SkillClassifier | None = None,
        monotonic: Callable[[], float] | None = None,
        write_guard: Callable[[], None] | None = None,
        telemetry: Any = "default",
    ) -> tuple[SkillService, SkillGovernance]:
        stats = self.telemetry if telemetry == "default" else telemetry
        log = Log()
        skills = SkillService(
            storage=self.storage,
            folders=self.folders,
            list_folders=self.folders.slugs,
            lock=self.lock,
            clock=self.clock,
            logger=log,
            project=project,
            telemetry=stats,
            host_skills_dir=self.host_skills_dir,
            session_id=session_id,
            child=child,
            write_guard=write_guard,
            governance=self.settings,
        )
        extra: dict[str, Any] = {} if monotonic is None else {"monotonic": monotonic}
        governance = SkillGovernance(
            skills=skills,
            telemetry=stats,
            config=self.settings,
            storage=self.storage,
            clock=self.clock,
            logger=log,
            classifier=classifier,
            write_guard=write_guard,
            **extra,
        )
        return skills, governance

    def create(
        self, name: str = "deploy", scope: str = "project", body: str = DEPLOY_BODY, **kw: Any
    ) -> str:
        skills, _ = self.session()
        made = skills.create(
            scope=scope,
            name=name,
            description=kw.pop("description", "Ship a release"),
            content=body,
        )
        assert made.success, made.message
        assert made.skill_id is not None
        return made.skill_id

    def use(
        self,
        skill_id: str,
        times: int,
        *,
        domain: str | None = "deployment",
        sessions: int = 2,
        first: int = 0,
    ) -> None:
        """`times` main-session uses spread over `sessions` sessions (s<first>, ...)."""
        for i in range(times):
            skills, _ = self.session(session_id=f"s{first + i % sessions}")
            assert skills.use(skill_id, task_domain=domain).success


class Failing:
    """A classifier that raises."""

    def classify(self, *args: Any, **kwargs: Any) -> list[Classification]:
        raise RuntimeError("the model went away")


class Slow:
    """A classifier whose (fake) clock runs past any timeout while it works."""

    def __init__(self, clock: list[float]) -> None:
        self._clock = clock

    def classify(
        self, skills: Any, policy: Any, project: Any, *, timeout: float, **_: Any
    ) -> list[Classification]:
        self._clock[0] += timeout + 1
        return []
