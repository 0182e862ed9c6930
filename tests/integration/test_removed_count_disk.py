"""`stats`' removed count is what `restore` lists (ADR 0120), on the real store (SQLite on
disk, Markdown files): after any sequence of adds, removals, restores, updates and moves
between the global memory and a project (promote, demote), per target. An in-memory store
once hid a disagreement of exactly this kind, so this runs on the real adapters."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pi_hermes_memory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.memory import porting

#: a few distinct texts (far from each other, so no near-duplicate refuses an add)
TEXTS = (
    "Deploys go out on Tuesdays after the freeze",
    "The build cache lives in /var/cache/builds",
    "Prefers pnpm over npm for every package",
    "Release tags are signed with the team key",
)

_STEP = st.tuples(
    st.sampled_from(["add", "add_project", "remove", "restore", "promote", "demote", "update"]),
    st.integers(min_value=0, max_value=len(TEXTS) - 1),
)


def _apply(memory: Memory, op: str, n: int) -> None:
    text = TEXTS[n]
    words = text.split()[1]  # a word unique to that text
    if op == "add":
        memory.add(text, target="memory", force=True)
    elif op == "add_project":
        memory.add(text, target="project", force=True)
    elif op == "remove":
        for target in ("memory", "project"):
            memory.call_tool("memory", {"action": "remove", "target": target, "old_text": words})
    elif op == "restore":
        for target in ("memory", "project"):
            memory.restore(words, target=target)
    elif op == "promote":
        memory.promote(words, force=True)
    elif op == "demote":
        memory.demote(words, force=True)
    else:
        for entry in memory.entries():
            if words in entry.text:
                memory.update(entry.id, f"{entry.text} (checked)")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(_STEP, min_size=1, max_size=12))
def test_stats_removed_equals_what_restore_lists(steps: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        with pi_hermes_memory.open(
            project="web", agent_root=root / "agent", environ={"HOME": str(root)}, cwd=root
        ) as memory:
            for op, n in steps:
                _apply(memory, op, n)
            counted = {t: v["removed"] for t, v in porting.stats(memory)["targets"].items()}
            listed = {t.value: len(memory.removed(t)) for t in Target}
            assert counted == listed, steps
        # and again from the files and database alone, by a new process's open
        with pi_hermes_memory.open(
            project="web", agent_root=root / "agent", environ={"HOME": str(root)}, cwd=root
        ) as again:
            counted = {t: v["removed"] for t, v in porting.stats(again)["targets"].items()}
            assert counted == listed, steps
