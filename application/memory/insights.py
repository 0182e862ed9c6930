"""Read-only overviews: /memory-insights and /memory-switch-project of the seed."""

from __future__ import annotations

from collections import Counter

import attrs
from pi_hermes_memory.domain.memory.capacity import LIMIT_SETTING, usage
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope


@attrs.frozen(kw_only=True)
class TargetInsight:
    target: str
    active: int
    superseded: int
    chars_used: int
    char_limit: int
    limit_setting: str
    latest: tuple[str, ...]  # the most recently created texts, newest first (max 3)


@attrs.frozen(kw_only=True)
class Insights:
    project: str | None
    sharing: bool
    targets: tuple[TargetInsight, ...]


@attrs.frozen(kw_only=True)
class ProjectCount:
    project: str
    project_entries: int
    failures: int


@attrs.frozen(kw_only=True)
class ProjectOverview:
    """Entries per real project attribution; the current project still comes from cwd/config."""

    current: str | None
    projects: tuple[ProjectCount, ...]
    unattributed_project_entries: int
    unattributed_failures: int


def insights(
    docs: dict[Target, MemoryDocument], scope: SessionScope, limits: dict[Target, int]
) -> Insights:
    """What this session sees of each target, with the capacity its own rows use."""
    rows = []
    for target in (Target.MEMORY, Target.USER, Target.FAILURE, Target.PROJECT):
        doc = docs[target]
        visible = [e for e in doc.active if scope.visible(e)]
        own = [e for e in doc.active if scope.own(e) and scope.visible(e)]
        newest = sorted(visible, key=lambda e: e.created, reverse=True)[:3]
        rows.append(
            TargetInsight(
                target=target.value,
                active=len(visible),
                superseded=sum(1 for e in doc.history if scope.visible(e)),
                chars_used=usage(own),
                char_limit=limits[target],
                limit_setting=LIMIT_SETTING[target],
                latest=tuple(e.text for e in newest),
            )
        )
    return Insights(project=scope.project, sharing=scope.sharing, targets=tuple(rows))


def project_overview(
    projects: MemoryDocument, failures: MemoryDocument, current: str | None
) -> ProjectOverview:
    entries = Counter(e.project for e in projects.active)
    failed = Counter(e.project for e in failures.active)
    named: set[str] = {p for p in (*entries, *failed) if p is not None}
    if current is not None:
        named.add(current)
    names = sorted(named)
    return ProjectOverview(
        current=current,
        projects=tuple(
            ProjectCount(project=n, project_entries=entries[n], failures=failed[n]) for n in names
        ),
        unattributed_project_entries=entries[None],
        unattributed_failures=failed[None],
    )
