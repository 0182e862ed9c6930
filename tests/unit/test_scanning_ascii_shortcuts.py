"""Three scanner passes answer a plain ASCII text without compiling their pattern (issue 29,
ADR 0109): the control-character search (`unicode_policy.candidate_positions`), the mixed-script
hint (`rules._find_mixed_script_token`) and the look-alike hint (`injection_structures.
deobfuscate`). Each shortcut rests on a fact about its pattern, checked here against the real
compiled pattern on generated texts, so an edit of a pattern that breaks the fact fails here;
and a plain first add compiles none of the three (frozen by what compiles, not by a clock)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.scanning import injection_structures, lazy_re, rules, unicode_policy
from pi_hermes_memory.domain.scanning.scanner import scan

ASCII = st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=80)
#: ASCII with the leet characters and some non-ASCII letters the hints look for
MIXED = st.text(
    alphabet=st.sampled_from(
        [*"abcxyzABC ._-\t\n\x00\x1f\x7f", *"013457@$", *"аеорсαβοéü", "\u202e"]
    ),
    max_size=60,
)


@pytest.fixture(autouse=True)
def _leave_compiled() -> Iterator[None]:
    yield
    lazy_re.compile_all()  # other tests see the tables as a long-lived process does


@settings(max_examples=300, deadline=None)
@given(ASCII)
def test_control_positions_of_an_ascii_text_are_the_pattern_s(text: str) -> None:
    expected = [m.start() for m in unicode_policy._ASCII_CONTROLS.finditer(text)]
    assert unicode_policy.candidate_positions(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.one_of(ASCII, MIXED))
def test_the_mixed_script_hint_needs_a_non_ascii_character(text: str) -> None:
    if text.isascii():
        assert rules._MIXED_SCRIPT_HINT.search(text) is None
        assert rules._find_mixed_script_token(text) is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(ASCII, MIXED))
def test_the_look_alike_hint_needs_a_non_ascii_or_a_leet_character(text: str) -> None:
    if text.isascii() and injection_structures._LEET.isdisjoint(text):
        assert injection_structures._MIXED_HINT.search(text) is None


def test_a_plain_ascii_text_compiles_none_of_the_three() -> None:
    lazy_re.forget_compiled()
    result = scan("the deploy window is friday, ask the ops team before you ship")
    assert result.findings == ()
    patterns = (
        unicode_policy._ASCII_CONTROLS,
        rules._MIXED_SCRIPT_HINT,
        injection_structures._MIXED_HINT,
    )
    assert [p.pattern for p in patterns if "search" in vars(p)] == []


def test_the_shortcuts_still_find_what_the_patterns_find() -> None:
    """A control character, a Cyrillic letter inside a Latin word, a leet word: found."""
    assert unicode_policy.candidate_positions("a\x07b") == [1]
    assert unicode_policy.candidate_positions("tab\there") == []  # TAB is allowed
    assert rules._find_mixed_script_token("p\u0430ssword here") == 0
    assert injection_structures.deobfuscate("1gn0re this")[0] == "ignore this"
