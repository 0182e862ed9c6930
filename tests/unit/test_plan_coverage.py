"""The coverage rule and the removal cap of a consolidation plan (issue 26 §1, ADR 0062):
examples of `pi_hermes_memory.domain.learning.coverage`, and a Hypothesis property of
`apply_plan`: any plan it accepts keeps every dropped entry's numbers, paths and identifiers,
and at least a third of its other distinctive words, in one text of the plan's output, and
deletes at most the allowed share of the target."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.learning.coverage import (
    MIN_KEPT_SHARE,
    covers,
    entry_terms,
    first_uncovered,
    max_removals,
)
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MemoryCommand,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.decide import WritePolicy
from pi_hermes_memory.domain.memory.document import WorkingDocument
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.terms import STOP_WORDS
from pi_hermes_memory.learning.consolidation import apply_plan

from tests.support import builders

AT = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)


def _covered(removed: str, output: str) -> bool:
    return covers(entry_terms(removed), entry_terms(output))


# -- examples ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("removed", "output"),
    [
        # compression: a third of the words, every name and number
        (
            "the project build needs a full type check before every merge of code",
            "type check before merge",
        ),
        ("The user prefers 4-space indentation in Python files", "Prefers 4-space indents, Python"),
        ("Postgres 15 listens on port 5433 in dev", "dev Postgres 15: port 5433"),
        ("see src/app/main.py and run `make ci` first", "src/app/main.py; `make ci`"),
        ("配置文件在用户目录下面", "配置文件: 用户目录"),
        ("it is what it is", "anything"),  # only function words: nothing to lose
        ("use tox; that is all", "tox"),
    ],
)
def test_an_output_that_keeps_the_facts_covers_the_entry(removed: str, output: str) -> None:
    assert _covered(removed, output)


@pytest.mark.parametrize(
    ("removed", "output"),
    [
        ("Postgres 15 listens on port 5433 in dev", "merged: greek letters"),
        ("Postgres 15 listens on port 5433 in dev", "Postgres listens on a port in dev"),  # numbers
        ("see src/app/main.py and run `make ci` first", "see the main file and run make"),
        ("CI runs on GitHub Actions", "CI runs on something"),  # the name GitHub is an anchor
        ("the project build needs a full type check before every merge", "merge"),  # 1 of 8
        ("配置文件在用户目录下面", "设置"),
    ],
)
def test_an_output_that_loses_the_facts_does_not_cover_the_entry(removed: str, output: str) -> None:
    assert not _covered(removed, output)


def test_first_uncovered_names_the_first_entry_no_single_output_covers() -> None:
    removed = [("a", "Postgres 15 on port 5433"), ("b", "tabs in Go sources")]
    assert first_uncovered(removed, ["Postgres 15, port 5433", "Go sources: tabs"]) is None
    assert first_uncovered(removed, ["Postgres 15, port 5433"]) == removed[1]
    assert first_uncovered(removed, []) == removed[0]


@pytest.mark.parametrize(
    ("n", "share", "allowed"),
    [
        *((0, 0.3, 0), (1, 0.3, 0), (2, 0.3, 1), (3, 0.3, 1), (6, 0.3, 1), (7, 0.3, 2)),
        *((10, 0.3, 3), (100, 0.3, 30), (10, 0.0, 0), (10, 1.0, 10), (5, 0.5, 2)),
    ],
)
def test_max_removals_is_the_share_rounded_down_but_one_from_two_entries(
    n: int, share: float, allowed: int
) -> None:
    assert max_removals(n, share) == allowed


# -- the property ---------------------------------------------------------------------------

_WORDS = ["deploy", "staging", "release", "parser", "schema", "tabs", "docker", "cache"]
_WORDS += ["the", "on", "with", "before"]
_NUMBERS = ["15", "5433", "v2", "20"]
_PATHS = ["src/app.py", "docs/next.md", "ci/run"]
_TOKENS = st.sampled_from(_WORDS + _NUMBERS + _PATHS)
_SCOPE = SessionScope(project="app")
_POLICY = WritePolicy(scope=_SCOPE, char_limit=100_000)


def _oracle_terms(text: str) -> tuple[set[str], set[str]]:
    """(distinctive words, anchors) of a text of the test's vocabulary, cut independently."""
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    anchors = {w for w in words if any(c.isdigit() for c in w)}
    for token in text.split():
        if "/" in token:
            anchors.update(re.findall(r"[a-z0-9]+", token.lower()))
    return words - STOP_WORDS, anchors


def _keeps(removed: str, output: str) -> bool:
    distinctive, anchors = _oracle_terms(removed)
    have = set(re.findall(r"[a-z0-9]+", output.lower()))
    if not anchors <= have:
        return False
    stems = {w[:5] if len(w) >= 5 and w.isalpha() else w for w in have}
    kept = sum(1 for w in distinctive if (w[:5] if len(w) >= 5 and w.isalpha() else w) in stems)
    return kept >= math.ceil(MIN_KEPT_SHARE * len(distinctive) - 1e-9)


@st.composite
def _plans(draw: st.DrawFn) -> tuple[list[str], list[MemoryCommand], float]:
    texts = draw(
        st.lists(
            st.lists(_TOKENS, min_size=1, max_size=6).map(" ".join),
            min_size=1,
            max_size=8,
            unique=True,
        )
    )
    texts = [f"{t} n{n}" for n, t in enumerate(texts)]  # distinct, each with an anchor
    commands: list[MemoryCommand] = []
    for n, text in enumerate(texts):
        action = draw(st.sampled_from(["keep", "keep", "remove", "replace"]))
        if action == "keep":
            continue
        tokens = text.split()
        if draw(st.integers(0, 5)):  # mostly a faithful merge: numbers and paths kept, some words
            kept = [t for t in tokens if re.search(r"[0-9/]", t) or draw(st.booleans())]
        else:  # anything
            kept = draw(st.lists(st.sampled_from(tokens), max_size=len(tokens)))
        noise = draw(st.lists(_TOKENS, max_size=1))
        merged = " ".join(dict.fromkeys([*kept, *noise])) or "x"
        if action == "replace":
            commands.append(
                ReplaceMemory(
                    target=Target.PROJECT,
                    old_text=text,
                    text=merged,
                    entry_id=f"r{n}",
                    at=AT,
                )
            )
            continue
        commands.append(RemoveMemory(target=Target.PROJECT, old_text=text, at=AT))
        if draw(st.integers(0, 5)):  # mostly with an add that may cover it
            commands.append(
                AddMemory(target=Target.PROJECT, text=merged, entry_id=f"a{n}", at=AT, force=True)
            )
    share = draw(st.sampled_from([0.3, 0.5, 1.0]))
    return texts, commands, share


@settings(max_examples=300, deadline=None)
@given(_plans())
def test_an_accepted_plan_keeps_every_dropped_entrys_terms_in_one_output(
    plan: tuple[list[str], list[MemoryCommand], float],
) -> None:
    texts, commands, share = plan
    svc = builders.service(project="app")
    for n, text in enumerate(texts):
        svc.execute(
            AddMemory(target=Target.PROJECT, text=text, entry_id=f"p{n}", at=AT, force=True)
        )
    doc = svc.document(Target.PROJECT)
    assert len(doc.active) == len(texts)
    commands.sort(key=lambda c: {RemoveMemory: 0, ReplaceMemory: 1, AddMemory: 2}[type(c)])
    decisions, why = apply_plan(
        {Target.PROJECT: doc},
        commands,
        target=Target.PROJECT,
        allowed=frozenset(e.id for e in doc.active),
        policies={Target.PROJECT: _POLICY},
        scope=_SCOPE,
        max_removed_share=share,
    )
    event("accepted" if why is None else " ".join(why.split()[:3]))
    if why is not None:
        assert decisions == []
        return
    work = WorkingDocument(doc)
    for _, decision in decisions:
        work.apply(decision.events)
    after = {e.text for e in work.active}
    outputs = [c.text for c in commands if isinstance(c, AddMemory | ReplaceMemory)]
    outputs = [o for o in outputs if o in after]
    dropped = [t for t in texts if t not in after]
    for text in dropped:
        assert any(_keeps(text, o) for o in outputs), (text, outputs)
    deleted = sum(isinstance(c, RemoveMemory) for c in commands)
    assert deleted <= max(max_removals(len(texts), share), 0)
