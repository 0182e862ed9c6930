"""Skill benchmarks on a real store: discovery, `skill view` and create at N skills.

    python -m tests.bench.skills [--skills N] [--samples S] [--creates C]

(`make bench` runs it at 1,000 skills as part of `tests/bench/run.py`.)

The store is a SQLite journal (`SqliteStorage`), the statistics tables (`SqliteSkillTables`)
and real skill folders in a temporary directory, wired as `open_memory` wires them. N skills
(half global, half of the project `bench`; one in five with a 2 KiB support file; bodies of
about 1 KiB in the four structured sections) are appended as `skill.created.v1` events directly
(going through `create` would take O(N^2): each create reads every skill first); the first read
renders their folders. 5% of the global skills are hidden for the project.

What is measured, on the settled store (every folder is what the ledger recorded):

- discovery: `SkillService.discover()`, the skills offered to the model plus one load count
  each in `skill_load_daily` and the cleanup check: a lock-free snapshot read that catches
  every stream up and reads and hashes every skill folder. The first call on a new service
  (cold: every stream caught up from the journal) is reported apart.
- `skill view`: `SkillService.get(id)` of a random skill: the same settled read for one stream.
- create: `SkillService.create` of a new global skill (content body) at N skills: it reads
  every skill first (the similar-name check against the global ones), then writes one stream
  and renders one folder under the store lock.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
from pi_hermes_memory.adapters.markdown.atomic import FileLock
from pi_hermes_memory.adapters.sqlite.skill_tables import SqliteSkillTables
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.config.settings import SkillGovernanceConfig, SkillScopesConfig
from pi_hermes_memory.domain.memory.events import Origin
from pi_hermes_memory.domain.skills.body import build_body
from pi_hermes_memory.domain.skills.events import SkillCreated, SkillFileWritten, SkillScope
from pi_hermes_memory.domain.skills.skill import skill_stream
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.skills.service import SkillService

from tests.bench.run import TextGenerator, _table, _workdir, percentile

PROJECT = "bench"
HIDDEN_SHARE = 0.05
SUPPORT_SHARE = 0.2
_AT = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


class _Clock:
    def now(self) -> datetime:
        return _AT


class _Quiet:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


@attrs.frozen(kw_only=True)
class Latency:
    samples: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float

    @classmethod
    def of(cls, values_ms: Sequence[float]) -> Latency:
        return cls(
            samples=len(values_ms),
            p50_ms=percentile(values_ms, 50),
            p95_ms=percentile(values_ms, 95),
            mean_ms=statistics.fmean(values_ms),
            max_ms=max(values_ms),
        )


@attrs.frozen(kw_only=True)
class SkillTimings:
    skills: int  # skills in the store before the timed calls
    offered: int  # skills discovery offers (the project's + the global ones not hidden)
    files: int  # files on disk (SKILL.md + support files)
    discover: Latency
    discover_cold_ms: float  # the first discovery of a new service
    view: Latency
    create: Latency
    create_statuses: dict[str, int]
    prefill_s: float  # appending the events
    render_s: float  # the first read: renders every folder (not a target)


def _service(root: Path, storage: SqliteStorage) -> SkillService:
    folders = SkillFolders(global_root=root / "skills", project_root=root / "projects")
    return SkillService(
        storage=storage,
        folders=folders,
        list_folders=folders.slugs,
        lock=lambda timeout: FileLock(root / ".lock", timeout=timeout),
        clock=_Clock(),
        logger=_Quiet(),
        project=PROJECT,
        telemetry=SqliteSkillTables(storage),
        governance=SkillGovernanceConfig(
            scopes=SkillScopesConfig(global_skills_dir=root / "skills")
        ),
        session_id="bench",
    )


def _skill_id(n: int) -> str:
    slug = f"skill-{n:05d}"
    return f"global:{slug}" if n % 2 == 0 else f"project:{PROJECT}:{slug}"


def prefill(storage: SqliteStorage, skills: int, seed: int = 5) -> float:
    """Append `skills` skills (and their support files) as events; seconds."""
    texts = TextGenerator(seed, distinct=False)
    rng = random.Random(seed)
    started = time.perf_counter()
    with storage.transaction() as uow:
        for n in range(skills):
            sid = _skill_id(n)
            scope, _, rest = sid.partition(":")
            stream = skill_stream(sid)
            events: list[Any] = [
                SkillCreated(
                    stream=stream,
                    version=1,
                    at=_AT,
                    skill_id=sid,
                    scope=SkillScope(scope),
                    project=PROJECT if scope == "project" else None,
                    slug=rest.rpartition(":")[2],
                    display_name=None,
                    description=next(texts),
                    body=build_body(
                        next(texts),
                        [next(texts) for _ in range(4)],
                        [next(texts) for _ in range(2)],
                        [next(texts) for _ in range(2)],
                    ),
                    extra_frontmatter="",
                    origin=Origin.TOOL,
                )
            ]
            if rng.random() < SUPPORT_SHARE:
                notes = "\n".join(next(texts) for _ in range(24))
                events.append(
                    SkillFileWritten(
                        stream=stream, version=2, at=_AT, path="references/notes.md", content=notes
                    )
                )
            uow.journal.append(stream, 0, events)
            uow.projection.apply(events)
    return time.perf_counter() - started


def _timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return (time.perf_counter() - started) * 1000, result


def bench_skills(
    skills: int,
    samples: int,
    creates: int,
    *,
    seed: int = 5,
    root: Path | None = None,
) -> SkillTimings:
    """Time discovery and `skill view` on `samples` calls, and `creates` creates, at `skills`."""
    if min(samples, creates) < 1:
        raise ValueError("samples and creates must be >= 1")
    rng = random.Random(seed)
    with _workdir(root) as work:
        storage = SqliteStorage(work / "sessions.db", event_log=None)
        try:
            prefill_s = prefill(storage, skills, seed)
            svc = _service(work, storage)
            globals_ = [_skill_id(n) for n in range(0, skills, 2)]
            hidden = rng.sample(globals_, int(len(globals_) * HIDDEN_SHARE))
            if hidden:
                assert svc.set_visibility("hide", hidden).success
            render_ms, live = _timed(svc.skills)
            assert len(live) == skills
            files = sum(
                1 for top in ("skills", "projects") for p in (work / top).rglob("*") if p.is_file()
            )
            cold_ms, (offered, _) = _timed(_service(work, storage).discover)
            assert len(offered) == skills - len(hidden)
            discover = [_timed(svc.discover)[0] for _ in range(samples)]
            ids = [_skill_id(rng.randrange(skills)) for _ in range(samples)]
            view = []
            for sid in ids:
                elapsed, skill = _timed(lambda sid=sid: svc.get(sid))
                assert skill is not None
                view.append(elapsed)
            made: list[float] = []
            statuses: dict[str, int] = {}
            for n in range(creates):
                elapsed, result = _timed(
                    lambda n=n: svc.create(
                        scope="global",
                        name=f"new procedure {n:04d}",
                        description=f"A new procedure number {n}",
                        content=f"## Steps\n\n1. Step {n}\n2. Check it",
                    )
                )
                made.append(elapsed)
                statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
        finally:
            storage.close()
    return SkillTimings(
        skills=skills,
        offered=len(offered),
        files=files,
        discover=Latency.of(discover),
        discover_cold_ms=cold_ms,
        view=Latency.of(view),
        create=Latency.of(made),
        create_statuses=statuses,
        prefill_s=prefill_s,
        render_s=render_ms / 1000,
    )


def render_skills(result: SkillTimings) -> list[str]:
    rows = [
        ["discovery (`SkillService.discover`)", result.discover],
        ["`skill view` (`SkillService.get`)", result.view],
        ["create (`SkillService.create`, global)", result.create],
    ]
    statuses = ", ".join(f"{k}={v}" for k, v in sorted(result.create_statuses.items()))
    return [
        "",
        f"## Skills at {result.skills:,} skills (SQLite journal + folders on disk, settled)",
        "",
        _table(
            ["call", "samples", "p50 ms", "p95 ms", "mean ms", "max ms"],
            [
                [
                    name,
                    r.samples,
                    f"{r.p50_ms:.2f}",
                    f"{r.p95_ms:.2f}",
                    f"{r.mean_ms:.2f}",
                    f"{r.max_ms:.2f}",
                ]
                for name, r in rows
            ],
        ),
        "",
        f"Discovery offers {result.offered:,} skills ({result.files:,} files on disk, "
        f"{HIDDEN_SHARE:.0%} of the global ones hidden); the first discovery of a new service "
        f"took {result.discover_cold_ms:.1f} ms. Create statuses: {statuses}. Setup (not a "
        f"target): events {result.prefill_s:.1f} s, first render of every folder "
        f"{result.render_s:.1f} s.",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.skills", description=__doc__)
    parser.add_argument("--skills", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--creates", type=int, default=20)
    args = parser.parse_args(argv)
    result = bench_skills(args.skills, args.samples, args.creates)
    print("\n".join(render_skills(result)))
    return 0 if result.create_statuses.get(Status.CREATED.value) == args.creates else 1


if __name__ == "__main__":
    sys.exit(main())
