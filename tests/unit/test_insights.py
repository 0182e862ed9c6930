"""Overviews for insights and switch-project."""

from __future__ import annotations

from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.commands import AddMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.memory.insights import insights, project_overview

from tests.support.builders import service, settings
from tests.support.fakes import StepClock

CLOCK = StepClock()


def _add(svc, text: str, target: Target, n: list[int] = [0]) -> None:  # noqa: B006
    n[0] += 1
    assert svc.execute(
        AddMemory(target=target, text=text, entry_id=f"i{n[0]}", at=CLOCK.now())
    ).success


def test_insights_counts_visible_rows_and_own_usage() -> None:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    other = service(storage, md, project="other")
    _add(other, "other project convention here", Target.PROJECT)
    svc = service(storage, md, project="web")
    _add(svc, "web uses vite", Target.PROJECT)
    _add(svc, "global fact one", Target.MEMORY)
    svc.execute(
        ReplaceMemory(
            target=Target.MEMORY,
            old_text="one",
            text="global fact two",
            entry_id="r1",
            at=CLOCK.now(),
        )
    )
    docs = {t: svc.document(t) for t in Target}
    result = insights(docs, settings("web").scope, dict.fromkeys(Target, 1000))
    by = {t.target: t for t in result.targets}
    assert (by["project"].active, by["project"].chars_used) == (1, len("web uses vite"))
    assert (by["memory"].active, by["memory"].superseded) == (1, 1)
    assert by["memory"].latest == ("global fact two",)
    assert by["user"].active == 0 and by["user"].limit_setting == "userCharLimit"


def test_project_overview_counts_real_attribution() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md, project="web")
    _add(svc, "web fact", Target.PROJECT)
    _add(svc, "web failure", Target.FAILURE)
    md.files[Target.PROJECT] += "§\nlegacy line without attribution\n".encode()
    overview = project_overview(svc.document(Target.PROJECT), svc.document(Target.FAILURE), "web")
    assert [(p.project, p.project_entries, p.failures) for p in overview.projects] == [
        ("web", 1, 1)
    ]
    assert overview.unattributed_project_entries == 1
    assert overview.unattributed_failures == 0
