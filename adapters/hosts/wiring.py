"""The doctor's hosts section: is each host that `setup` wired in still wired (issue 30 §4,
ADR 0092). Read only.

For every host whose `detect()` says it is set up: where its wiring is, what keeps it from
working (a host may offer `problems(options)`: our entry's command is gone or not
executable), and when the host last called us. Hosts that record their calls keep files under
`<agent root>/hosts/<host>/` (or `<agent root>/hosts/<host>.*`): the newest file's time is
the last call; no such file is "never recorded". The last background review is the store's
(`review-status.json` in memoryDir), shared by every host.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pi_hermes_memory.adapters.hosts.base import SetupOptions
from pi_hermes_memory.doctor.report import HostsState, HostState

__all__ = ["HOST_STATE_DIR", "hosts_section", "last_call"]

#: the folder under the agent root where host integrations keep their per-host state
HOST_STATE_DIR = "hosts"
_MAX_FILES = 2_000


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def last_call(agent_root: Path, host: str, memory_dir: Path | None = None) -> str | None:
    """The time of the newest file a host's integration keeps under the agent root
    (`hosts/<host>`) or the memory directory (`hooks/<host>`: the Claude Code hooks' session
    state, the Pi bridge's last call); None when there is none (or cannot be read)."""
    bases = [agent_root / HOST_STATE_DIR]
    if memory_dir is not None:
        bases.append(memory_dir / "hooks")
    newest: float | None = None
    seen = 0
    candidates: list[Path] = []
    for base in bases:
        try:
            candidates += [p for p in base.iterdir() if p.name == host or p.stem == host]
        except OSError:
            continue
    for path in candidates:
        walked = os.walk(path) if path.is_dir() else [(str(path.parent), [], [path.name])]
        for folder, _dirs, files in walked:
            for name in files:
                seen += 1
                if seen > _MAX_FILES:
                    break
                try:
                    mtime = (Path(folder) / name).stat().st_mtime
                except OSError:
                    continue
                newest = mtime if newest is None else max(newest, mtime)
    return None if newest is None else _iso(newest)


def hosts_section(
    hosts: Iterable[tuple[str, Callable[[], Any]]], options: SetupOptions, memory_dir: Path
) -> HostsState:
    """`hosts`: (name, a function returning its Host) pairs, loaded one by one so that one
    host that fails to load or detect is reported, not fatal."""
    from pi_hermes_memory.learning.review import read_last_summary

    wired: list[HostState] = []
    idle: list[str] = []
    for name, load in hosts:
        try:
            host = load()
            found = host.detect(options)
            problems = list(host.problems(options)) if hasattr(host, "problems") else []
        except Exception as exc:  # a host's own check failing is a finding, not a crash
            wired.append(
                HostState(
                    host=name,
                    where=None,
                    detail="",
                    problems=(f"{name}: the check failed: {exc}",),
                )
            )
            continue
        if not found.configured:
            if found.installed:
                idle.append(name)
            continue
        wired.append(
            HostState(
                host=name,
                where=found.where,
                detail=found.detail,
                problems=tuple(problems),
                last_call=last_call(options.agent_root, name, memory_dir),
            )
        )
    summary = read_last_summary(memory_dir)
    return HostsState(
        hosts=tuple(wired),
        not_set_up=tuple(idle),
        last_review=None if summary is None else summary.at,
        last_review_result=None
        if summary is None
        else str(getattr(summary.result, "value", summary.result)),
    )
