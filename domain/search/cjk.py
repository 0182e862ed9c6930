"""CJK characters: which code points count as CJK, and the patterns that find them. Shared by
query terms and the near-duplicate rule; its own module so that a search (terms) does not load
the near-duplicate rule's classes (ADR 0110)."""

from __future__ import annotations

import functools
import re

# Han (incl. extensions in the supplementary planes), Hiragana, Katakana, Hangul.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # Han extension A
    (0x4E00, 0x9FFF),  # Han unified
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables + Jamo extended B
    (0xF900, 0xFAFF),  # Han compatibility
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x1B000, 0x1B16F),  # Kana supplement / extended
    (0x20000, 0x3134F),  # Han extensions B–G (planes 2 and 3)
)

_CJK_CLASS = "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES) + "]"


@functools.cache
def cjk_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`(CJK_CHAR, CJK_RUN)`, compiled on first use: their large character classes cost
    ~5 ms to compile, which a process that meets only ASCII text never needs (issue 29,
    ADR 0099). No `CJK_RANGES` code point is ASCII."""
    return re.compile(_CJK_CLASS), re.compile(_CJK_CLASS + "+")


def __getattr__(name: str) -> re.Pattern[str]:
    """`CJK_CHAR`: any one CJK character (the `CJK_RANGES`), a cheap test for "is there any
    CJK at all"; `CJK_RUN`: a maximal run of CJK characters (both from `cjk_patterns`)."""
    if name == "CJK_CHAR":
        return cjk_patterns()[0]
    if name == "CJK_RUN":
        return cjk_patterns()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    if cp < 0x1100:  # Latin, Greek, Cyrillic, …: the common case, decided without the table
        return False
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


__all__ = ["CJK_RANGES", "cjk_patterns", "is_cjk"]
