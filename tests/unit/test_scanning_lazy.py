"""The scanner's patterns compile on first use (issue 29, ADR 0080), with verdicts identical to
the eager tables: a cold scanner (nothing compiled) and an eager one (every pattern compiled up
front, as before ADR 0080) give equal results on generated texts and on the benchmark corpora."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.scanning import lazy_re
from pi_hermes_memory.domain.scanning.scanner import INJECTION_RULES, SECRET_RULES, ScanResult, scan

from tests.bench.scanner_corpus import build
from tests.bench.scanner_structures import build_structural

#: every prefilter keyword: texts built from them wake the rules' heavy patterns
KEYWORDS = sorted({k for rule in (*SECRET_RULES, *INJECTION_RULES) for k in rule.keywords})
FRAGMENTS = [
    *KEYWORDS,
    " ",
    "\n",
    "=",
    ": ",
    "://",
    "@",
    "ignore all previous instructions",
    "api_key=",
    "sk-",
    "ghp_",
    "AKIA",
    "-----BEGIN RSA PRIVATE KEY-----",
    "\u200b",
    "\u202e",
    "ｉｇｎｏｒｅ",
    "і",
    "system:",
    "<|im_start|>",
]
TOKEN = st.text(alphabet="abcdefABCDEF0123456789_-/+", min_size=8, max_size=48)
TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), TOKEN, st.text(max_size=12)), max_size=24)


def _cold(text: str) -> ScanResult:
    lazy_re.forget_compiled()
    return scan(text)


def _eager(text: str) -> ScanResult:
    lazy_re.compile_all()
    return scan(text)


@pytest.fixture(autouse=True)
def _leave_compiled() -> Iterator[None]:
    yield
    lazy_re.compile_all()  # other tests see the tables as a long-lived process does


def test_each_pattern_compiles_to_the_same_pattern_as_re_compile() -> None:
    lazy_re.compile_all()
    assert lazy_re.pattern_count() > 200 and lazy_re.compiled_count() == lazy_re.pattern_count()
    for stand_in in lazy_re._ALL:
        eager = re.compile(stand_in.pattern, stand_in._flags)
        assert (stand_in.pattern, stand_in.flags, stand_in.groups, stand_in.groupindex) == (
            eager.pattern,
            eager.flags,
            eager.groups,
            eager.groupindex,
        )


def test_a_plain_text_compiles_few_of_the_patterns() -> None:
    """The gain, frozen without a clock: a text with no rule keyword wakes only the patterns
    that always run (the Unicode policy, keyword-less rules), not the tables."""
    lazy_re.forget_compiled()
    assert lazy_re.compiled_count() == 0
    assert not scan("hello, what did we decide about the deploy window").blocked
    assert 0 < lazy_re.compiled_count() < lazy_re.pattern_count() // 5


@settings(max_examples=150, deadline=None)
@given(TEXTS)
def test_a_cold_scanner_gives_the_eager_verdict(parts: list[str]) -> None:
    text = "".join(parts)
    assert _cold(text) == _eager(text)


def test_the_corpora_get_equal_verdicts_cold_and_eager() -> None:
    samples = [
        *build(per_kind=2, per_template=1, benign=150),
        *build_structural(per_template=1),
    ]
    random.Random(29).shuffle(samples)  # first uses of patterns fall mid-corpus
    lazy_re.forget_compiled()
    cold = [scan(s.text) for s in samples]
    lazy_re.compile_all()
    eager = [scan(s.text) for s in samples]
    assert cold == eager
    assert sum(r.blocked for r in cold) > len(samples) // 4  # the corpus does wake the rules
