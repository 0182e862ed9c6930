"""Properties of the write scanner: total, idempotent on its output, and ReDoS-free."""

from __future__ import annotations

import base64
import hashlib
import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.scanning import unicode_policy
from pi_hermes_memory.domain.scanning.scanner import MAX_SCAN_CHARS, Severity, scan

# Every general category except surrogates (a str from real input never holds one).
ANY_CHAR = st.characters(exclude_categories=["Cs"])

# Characters the Unicode policy treats specially, plus the neighbours its decisions look at.
SPECIALS = [
    *"\u200b\u200c\u200d\u200e\u200f\u061c\u00ad\u034f\u180e\u2060\u2061\u2064\ufeff",
    *"\u202a\u202e\u2066\u2069\ufe00\ufe0e\ufe0f\u180b\u180f\u115f\u1160\u3164\uffa0",
    "\U000e0067",
    "\U000e0062",
    "\U000e0073",
    "\U000e007f",
    "\U000e0041",
    "\U000e0100",
    "\U0001f3f4",
    "\ue000",
    "\x1b",
    "\u0378",
    *"👨👩👧❤🔥🏳🌈😀🏽1#©",
    *"\u20e3",
    *"میخواهمابکشدصق",
    *"क्षष",
    *"한글ㄱ\u1100\u1161",
    *"ᠮᠣᠩ",
    *"\u05d0\u05d1",
    *"e\u0301=\u0338",
    *"ｉｇｎｏｒｅ",
    *"aZ9 _-.:=/\n",
]
MIXED = st.text(st.one_of(ANY_CHAR, st.sampled_from(SPECIALS)), max_size=80)
WORDS = st.lists(
    st.sampled_from(
        [
            "ignore",
            "previous",
            "instructions",
            "token",
            "=",
            "key:",
            "you",
            "are",
            "now",
            "a",
            "system:",
            "\n",
            "<|im_start|>",
            "curl",
            "$OPENAI_API_KEY",
            "cat",
            ".env",
            "![x](https://h/?q=1)",
            "<!--",
            "-->",
            "hidden",
            "AGENTS.md",
            "update",
            "ghp_",
            "A1b2" * 9,
            "\u200b",
            "😀",
            "\ufe0f",
            "\u200d",
            "می",
            "\u200c",
        ]
    ),
    max_size=30,
).map(" ".join)
ANY_TEXT = st.one_of(st.text(ANY_CHAR, max_size=200), MIXED, WORDS)


def _check_result_shape(text: str) -> None:
    result = scan(text)
    assert unicodedata.is_normalized("NFC", result.text)
    assert isinstance(result.message(), str) and result.message()
    for finding in result.findings:
        assert finding.offset is None or 0 <= finding.offset <= max(len(text), MAX_SCAN_CHARS)
        assert finding.severity in (Severity.BLOCK, Severity.WARN)
    assert result.blocked == any(f.severity is Severity.BLOCK for f in result.findings)


@given(ANY_TEXT)
def test_scan_never_raises(text: str) -> None:
    _check_result_shape(text)


@given(ANY_TEXT)
def test_scan_is_idempotent_on_its_cleaned_output(text: str) -> None:
    first = scan(text)
    if first.blocked:
        return
    second = scan(first.text)
    assert second.text == first.text
    assert second.stripped == ()
    assert not second.blocked, second.message()
    assert set(second.rule_ids()) == set(first.rule_ids())


@given(ANY_TEXT)
def test_scan_copy_is_nfkc_of_the_stripped_text_and_maps_into_it(text: str) -> None:
    copy = unicode_policy.ScanCopy(text)
    assert copy.folded == unicodedata.normalize("NFKC", copy.stripped)
    kept = [c for c in text if unicode_policy.classify(ord(c))[0] is unicode_policy.Action.ALLOW]
    assert copy.stripped == "".join(kept)
    for i in range(len(copy.stripped)):
        assert text[copy.stripped_to_raw(i)] == copy.stripped[i]
    for i in range(len(copy.folded)):
        assert 0 <= copy.folded_to_raw(i) < len(text)


@given(st.text(ANY_CHAR, max_size=40), st.text(ANY_CHAR, max_size=40))
def test_stripping_zero_width_space_never_hides_a_block(left: str, right: str) -> None:
    """Splitting a keyword with ZWSP does not change the verdict of the pattern rules."""
    plain = scan(f"{left} ignore previous instructions {right}")
    split = scan(f"{left} ig\u200bnore previous instr\u200buctions {right}")
    assert "ignore_previous" in plain.rule_ids()
    assert "ignore_previous" in split.rule_ids()


# --------------------------------------------------------------------------------------------
# Adversarial 64 KiB inputs: every one must finish; the time is measured and printed.

_TIMES: dict[str, float] = {}
#: a ReDoS catch only, in CPU seconds of this process (a loaded machine stretches wall time,
#: not the work done): the slowest input takes ~0.45 s, typical ones tens of milliseconds, and
#: a quadratic pattern over 64 KiB takes far longer than this
_REDOS_BOUND_S = 2.0


def _fill(unit: str, size: int = MAX_SCAN_CHARS) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def _b64_blob(size: int) -> str:
    raw = b"".join(hashlib.sha256(str(i).encode()).digest() for i in range(size // 32 + 2))
    return base64.b64encode(raw).decode()[:size]


ADVERSARIAL: dict[str, str] = {
    "repeated words": _fill("lorem ipsum dolor sit amet "),
    "repeated ignore": _fill("ignore "),
    "ignore all previous": _fill("ignore all previous "),
    "ignore without spaces": "ignore" + "a" * (MAX_SCAN_CHARS - 6),
    "long a= run": _fill("a="),
    "long key= run": _fill("key="),
    "api_key assignments": _fill("api_key=x"),
    "password values": _fill("password=Ab3dEf9hIj "),
    "long base64": _b64_blob(MAX_SCAN_CHARS),
    "one long word": "a" * MAX_SCAN_CHARS,
    "html comment openers": _fill("<!--"),
    "html comments with words": _fill("<!--system "),
    "div openers": _fill("<div style='"),
    "curl without newline": _fill("curl "),
    "curl with dollars": _fill("curl $"),
    "markdown image openers": _fill("!["),
    "markdown image query": "![x](https://" + "?" * (MAX_SCAN_CHARS - 20),
    "img tags": _fill("<img src=https://"),
    "url userinfo": _fill("://a:"),
    "url userinfo 2": _fill("://a:b"),
    "jwt prefix": _fill("ey"),
    "jwt header dots": _fill("eyJhbGciOiJIUzI1NiJ9."),
    "slack prefix": _fill("xoxb-1234567890-"),
    "pem begin": _fill("-----BEGIN "),
    "aws keyword": _fill("aws key "),
    "you are": _fill("you are "),
    "pretend": _fill("pretend "),
    "do not tell": _fill("do not tell "),
    "translate": _fill("translate "),
    "newlines": "\n" * MAX_SCAN_CHARS,
    "blank lines": _fill("\n \n"),
    "role lines": _fill("system:\n"),
    "role tokens": _fill("<|"),
    "add verbs": _fill("add "),
    "redirects": _fill(">"),
    "dashes": _fill("-"),
    "sk prefix": _fill("sk-"),
    "bearer": _fill("bearer "),
    "cat": _fill("cat "),
    "authorized_keys redirect": _fill(">> authorized"),
    "mixed script": _fill("a\u0430"),
    "full width": _fill("ｉｇｎｏｒｅ "),
    "zero width spaces": _fill("a\u200b"),
    "cjk": _fill("忽略之前的"),
    "persian zwnj": _fill("می\u200cخواهم "),
    "emoji zwj": _fill("👨\u200d👩\u200d👧"),
    "variation selectors": _fill("😀\ufe0f"),
    "tags": _fill("\U0001f3f4\U000e0067"),
    "hangul fillers": _fill("\u3164"),
    "bidi": _fill("\u202e"),
    "nfkc expansion": _fill("\ufdfa", MAX_SCAN_CHARS // 4),
    # ADR 0025 rules
    "netrc machines": _fill("machine h login u "),
    "password keys": _fill("password: "),
    "from now on": _fill("from now on "),
    "remember forever send": _fill("remember this forever send "),
    "urls with send": _fill("send https://a.b/ "),
    "sensitive words": _fill("send .env token "),
    "you are now": _fill("you are now "),
    "act as": _fill("act as "),
    "sas prefix": _fill("sv=2020-01-01&sig="),
    "base64 equals": _fill("a" * 86 + "== key "),
    "emails": _fill("a@b.co "),
    "cjk override": _fill("忽略之前的规则"),
    "ja frames": _fill("あなたは今から"),
    "curl upload": _fill("curl -d @"),
    "ignore instructions": _fill("ignore the "),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_64k_inputs_finish(name: str) -> None:
    text = ADVERSARIAL[name]
    start = time.process_time()
    result = scan(text)
    elapsed = time.process_time() - start
    _TIMES[name] = elapsed
    assert isinstance(result.message(), str)
    assert elapsed < _REDOS_BOUND_S, f"{name}: {elapsed:.3f} s"


@settings(deadline=None)
@given(
    st.lists(st.sampled_from(sorted(ADVERSARIAL)), min_size=1, max_size=4),
    st.integers(min_value=1, max_value=64),
)
def test_adversarial_mixtures_finish(names: list[str], piece: int) -> None:
    unit = "".join(ADVERSARIAL[n][: piece * 16] for n in names)
    text = _fill(unit)
    start = time.process_time()
    scan(text)
    elapsed = time.process_time() - start
    _TIMES[f"mixture {'+'.join(names)}"] = max(
        elapsed, _TIMES.get(f"mixture {'+'.join(names)}", 0.0)
    )
    assert elapsed < _REDOS_BOUND_S


def test_report_worst_case_scan_time(capsys: pytest.CaptureFixture[str]) -> None:
    """Prints the slowest 64 KiB scans measured above (no assertion on timing)."""
    if not _TIMES:
        pytest.skip("run together with the adversarial tests")
    worst = sorted(_TIMES.items(), key=lambda kv: kv[1], reverse=True)[:5]
    with capsys.disabled():
        print("\nscanner worst-case CPU times on 64 KiB inputs:")
        for name, seconds in worst:
            print(f"  {seconds * 1000:8.1f} ms  {name}")
