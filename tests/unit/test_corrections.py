"""Correction detection (domain.corrections): the seed's rules as defaults, overrides."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.learning.corrections import (
    CorrectionRules,
    Strength,
    corrective_sentence,
    detect,
)
from pi_hermes_memory.lifecycle.corrections import rules_from_config

DEFAULT = CorrectionRules.build()


@pytest.mark.parametrize(
    ("message", "sentence"),
    [
        ("No, use pnpm instead of npm.", "Use pnpm instead of npm."),
        ("Actually, the tests live in tests/unit.", "The tests live in tests/unit."),
        ("Wrong — the port is 8080", "The port is 8080"),
        ("No. We deploy with make release.", "We deploy with make release."),
        ("That's wrong, the config is in ~/.pi", "The config is in ~/.pi"),
        ("Don't use tabs in this repo", "Don't use tabs in this repo"),
    ],
)
def test_strong_corrections_keep_the_corrective_sentence(message: str, sentence: str) -> None:
    found = detect(DEFAULT, message)
    assert found is not None
    assert found.strength is Strength.STRONG
    assert found.sentence == sentence


@pytest.mark.parametrize(
    "message",
    [
        "never mind",
        "No worries, that works",
        "Thanks, looks good",
        "Can you use pnpm?",
        "No.",
        "no",
        "Actually, that's fine",
        "",
        "   ",
    ],
)
def test_not_corrections(message: str) -> None:
    assert detect(DEFAULT, message) is None


def test_a_weak_pattern_needs_a_directive_word_beyond_its_own_match() -> None:
    assert detect(DEFAULT, "please remember this") is None
    found = detect(DEFAULT, "Please remember to always run ruff first")
    assert found is not None and found.strength is Strength.WEAK


def test_the_negative_list_wins_and_an_empty_list_turns_a_list_off() -> None:
    assert detect(DEFAULT, "No, use pnpm. Never mind.") is None
    assert detect(CorrectionRules.build(negative=[]), "No, use pnpm. Never mind.") is not None
    assert detect(CorrectionRules.build(strong=[]), "No, use pnpm") is None
    no_words = CorrectionRules.build(directive_words=[])
    assert detect(no_words, "Please remember to always run ruff first") is None


def test_invalid_patterns_are_skipped_and_the_valid_ones_apply() -> None:
    rules = CorrectionRules.build(strong=["(unclosed", r"^fix:\s+(.+)$"])
    assert rules.invalid == ("(unclosed",)
    assert len(rules.strong) == 1
    found = detect(rules, "fix: the port is 9")
    assert found is not None and found.sentence == "Fix: the port is 9"
    assert detect(rules, "No, use pnpm") is None  # the defaults are replaced, not extended


def test_seed_example_overrides() -> None:
    rules = CorrectionRules.build(
        strong=[r"^actually,\s+(.+)$"],
        weak=[r"^please\s+remember\b"],
        negative=[r"^never mind\b"],
        directive_words=["remember", "prefer"],
    )
    found = detect(rules, "actually, we prefer uv")
    assert found is not None and found.sentence == "We prefer uv"
    assert detect(rules, "please remember I prefer tea") is not None
    assert detect(rules, "never mind, actually, foo") is None


def test_leading_words_are_removed() -> None:
    assert corrective_sentence("No, no, actually: use X") == "Use X"
    assert corrective_sentence("no.") == ""


class _Cfg:
    correction_detection = True
    correction_strong_patterns: tuple[str, ...] | None = ()
    correction_weak_patterns = None
    correction_negative_patterns = None
    correction_directive_words = None


def test_rules_from_config() -> None:
    assert rules_from_config(None) == DEFAULT
    cfg = _Cfg()
    rules = rules_from_config(cfg)
    assert rules is not None and rules.strong == () and rules.weak == DEFAULT.weak
    cfg.correction_detection = False
    assert rules_from_config(cfg) is None


@given(
    st.text(max_size=300),
    st.none() | st.lists(st.text(max_size=12), max_size=4),
    st.none() | st.lists(st.text(max_size=8), max_size=4),
)
def test_detection_never_raises(
    message: str, patterns: list[str] | None, words: list[str] | None
) -> None:
    rules = CorrectionRules.build(strong=patterns, weak=patterns, directive_words=words)
    found = detect(rules, message)
    assert found is None or 3 <= len(found.sentence) <= 500
