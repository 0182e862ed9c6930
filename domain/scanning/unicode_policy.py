"""The invisible/dangerous Unicode policy applied to every memory write (reliability.md §6).

Pure: standard library only. The table is Unicode's Default_Ignorable_Code_Point property
(DerivedCoreProperties.txt, pinned to the Unicode version of Python 3.11's `unicodedata`,
14.0.0) plus the general categories Cc (except TAB, LF, CR), Co, Cs and Cn, plus the bidi
controls. Each code point gets one of three outcomes:

* REJECT - it can change meaning or smuggle data and a reviewer would not see it: bidi
  embeddings/overrides/isolates, tag characters outside a well-formed emoji flag sequence,
  VS1-VS14 and the supplementary variation selectors outside a registered kind of sequence,
  runs of two or more variation selectors, U+2800 BRAILLE PATTERN BLANK outside Braille text,
  private use, controls, unassigned code points, lone surrogates, a BOM in mid-text, Hangul
  fillers outside Hangul text, the interlinear annotation controls.
* STRIP - it carries no content and is usually pasted in by accident: ZWSP, soft hyphen, word
  joiner and the invisible operators, CGJ, the Mongolian vowel separator, a leading BOM, the
  deprecated format characters, the other default-ignorables; and the context-dependent ones
  (ZWJ/ZWNJ, LRM/RLM/ALM, VS15/VS16, Mongolian FVS) when their context does not need them.
* KEEP - VS15/VS16 right after an emoji or symbol, ZWJ inside an emoji sequence, ZWJ/ZWNJ between
  letters of a joining script (Arabic/Persian, Indic, ...) or right after a virama (Malayalam
  chillu, half forms), one VS17-VS256 or VS1-VS3 after a CJK ideograph (ideographic variation
  sequences, CJK compatibility variants), VS1 after a math symbol or a Myanmar, Phags-pa or
  Manichaean letter (StandardizedVariants), LRM/RLM/ALM in text that has
  right-to-left letters, well-formed flag tag sequences, Hangul fillers next to Hangul letters.

`apply_policy` returns the cleaned text (NFC, STRIP characters removed), the labels of the
stripped code points and the rejections with their offsets in the input. `ScanCopy` holds the
NFKC, fully invisible-stripped copy on which the pattern scanners run, with maps back to input
offsets. Cleaning is idempotent: `apply_policy(apply_policy(t).text)` strips and rejects nothing
more whenever `t` had no rejection. Both run in time linear in the text: Python-level work is
done only for the code points the policy table covers (found by one precompiled regex).
"""

from __future__ import annotations

import bisect
import enum
import functools
import re
import unicodedata
from collections.abc import Iterable

import attrs
from pi_hermes_memory.domain.scanning.lazy_re import lazy_compile

UNICODE_VERSION = "14.0.0"

#: Default_Ignorable_Code_Point, DerivedCoreProperties-14.0.0.txt (inclusive ranges).
DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # Cf SOFT HYPHEN
    (0x034F, 0x034F),  # Mn COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # Cf ARABIC LETTER MARK
    (0x115F, 0x1160),  # Lo HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # Mn KHMER VOWEL INHERENT AQ..AA
    (0x180B, 0x180D),  # Mn MONGOLIAN FREE VARIATION SELECTOR ONE..THREE
    (0x180E, 0x180E),  # Cf MONGOLIAN VOWEL SEPARATOR
    (0x180F, 0x180F),  # Mn MONGOLIAN FREE VARIATION SELECTOR FOUR
    (0x200B, 0x200F),  # Cf ZWSP, ZWNJ, ZWJ, LRM, RLM
    (0x202A, 0x202E),  # Cf LRE..RLO
    (0x2060, 0x2064),  # Cf WORD JOINER..INVISIBLE PLUS
    (0x2065, 0x2065),  # Cn
    (0x2066, 0x206F),  # Cf LRI..NOMINAL DIGIT SHAPES
    (0x3164, 0x3164),  # Lo HANGUL FILLER
    (0xFE00, 0xFE0F),  # Mn VARIATION SELECTOR-1..16
    (0xFEFF, 0xFEFF),  # Cf ZERO WIDTH NO-BREAK SPACE (BOM)
    (0xFFA0, 0xFFA0),  # Lo HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # Cn
    (0x1BCA0, 0x1BCA3),  # Cf SHORTHAND FORMAT LETTER OVERLAP..UP STEP
    (0x1D173, 0x1D17A),  # Cf MUSICAL SYMBOL BEGIN BEAM..END PHRASE
    (0xE0000, 0xE0000),  # Cn
    (0xE0001, 0xE0001),  # Cf LANGUAGE TAG
    (0xE0002, 0xE001F),  # Cn
    (0xE0020, 0xE007F),  # Cf TAG SPACE..CANCEL TAG
    (0xE0080, 0xE00FF),  # Cn
    (0xE0100, 0xE01EF),  # Mn VARIATION SELECTOR-17..256
    (0xE01F0, 0xE0FFF),  # Cn
)

#: Bidi embedding, override and isolate controls (Trojan Source, CVE-2021-42574).
BIDI_CONTROLS: frozenset[int] = frozenset((*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
#: Weak direction marks: LRM, RLM, ALM.
DIRECTION_MARKS: frozenset[int] = frozenset((0x200E, 0x200F, 0x061C))
HANGUL_FILLERS: frozenset[int] = frozenset((0x115F, 0x1160, 0x3164, 0xFFA0))
ZWNJ = 0x200C
ZWJ = 0x200D
VS15 = 0xFE0E
VS16 = 0xFE0F
BOM = 0xFEFF
TAG_CANCEL = 0xE007F
WAVING_BLACK_FLAG = 0x1F3F4
MONGOLIAN_FVS: frozenset[int] = frozenset((0x180B, 0x180C, 0x180D, 0x180F))

# Rule ids of the rejections (category invisible_unicode).
RULE_BIDI = "bidi_control"
RULE_TAG = "tag_character"
RULE_VS = "variation_selector"
RULE_VS_RUN = "variation_selector_run"
RULE_PRIVATE_USE = "private_use"
RULE_CONTROL = "control_character"
RULE_UNASSIGNED = "unassigned_code_point"
RULE_SURROGATE = "lone_surrogate"
RULE_BOM = "bom_mid_text"
RULE_HANGUL_FILLER = "hangul_filler"
RULE_ANNOTATION = "interlinear_annotation"
RULE_BLANK = "blank_lookalike"

UNICODE_RULE_IDS: tuple[str, ...] = (
    RULE_BIDI,
    RULE_TAG,
    RULE_VS,
    RULE_VS_RUN,
    RULE_PRIVATE_USE,
    RULE_CONTROL,
    RULE_UNASSIGNED,
    RULE_SURROGATE,
    RULE_BOM,
    RULE_HANGUL_FILLER,
    RULE_ANNOTATION,
    RULE_BLANK,
)

#: At most this many rejections are reported (one per distinct (rule, code point)).
MAX_REPORTED_REJECTIONS = 16


class Action(enum.Enum):
    """Context-free classification of one code point."""

    ALLOW = "allow"
    STRIP = "strip"
    REJECT = "reject"
    JOINER = "joiner"  # ZWJ / ZWNJ
    DIRECTION_MARK = "direction_mark"  # LRM / RLM / ALM
    EMOJI_VS = "emoji_vs"  # VS15 / VS16
    MONGOLIAN_FVS = "mongolian_fvs"
    HANGUL_FILLER = "hangul_filler"
    TAG = "tag"  # E0020..E007F: only inside a flag sequence
    SEQUENCE_VS = "sequence_vs"  # VS1-VS14, VS17-VS256: only in a registered kind of sequence
    BRAILLE_BLANK = "braille_blank"  # U+2800: only next to other Braille patterns
    BOM = "bom"  # U+FEFF: stripped at offset 0, rejected elsewhere


#: Outcomes decided by neighbours after NFC; each is either kept or stripped.
_STRIP_OR_KEEP = frozenset(
    (Action.JOINER, Action.DIRECTION_MARK, Action.EMOJI_VS, Action.MONGOLIAN_FVS)
)


def _in_ranges(cp: int, ranges: Iterable[tuple[int, int]]) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def is_default_ignorable(cp: int) -> bool:
    """Default_Ignorable_Code_Point per the pinned table."""
    return _in_ranges(cp, DEFAULT_IGNORABLE_RANGES)


def code_point_label(cp: int) -> str:
    return f"U+{cp:04X}"


#: bidi controls and direction marks: in a name they make what a person reads differ from
#: what the file system holds (``evil\u202etxt.exe`` shows as ``evilexe.txt``)
_NAME_BIDI = BIDI_CONTROLS | DIRECTION_MARKS


def bidi_control_in(name: str) -> str | None:
    """The label ("U+202E") of the first bidi control or direction mark in `name`, or None.
    For names (projects, support files), where no context can make one harmless."""
    for ch in name:
        if ord(ch) in _NAME_BIDI:
            return code_point_label(ord(ch))
    return None


def _classify(cp: int) -> tuple[Action, str | None]:
    """(action, rejection rule id) for one code point, without looking at its neighbours."""
    if cp < 0x80:
        if cp in (0x09, 0x0A, 0x0D) or 0x20 <= cp < 0x7F:
            return Action.ALLOW, None
        return Action.REJECT, RULE_CONTROL
    if cp <= 0x9F:
        return Action.REJECT, RULE_CONTROL
    if cp in BIDI_CONTROLS:
        return Action.REJECT, RULE_BIDI
    if 0xE0020 <= cp <= 0xE007F:
        return Action.TAG, None
    if 0xE0000 <= cp <= 0xE001F:
        return Action.REJECT, RULE_TAG
    if 0xE0100 <= cp <= 0xE01EF or 0xFE00 <= cp <= 0xFE0D:
        return Action.SEQUENCE_VS, None
    if cp == 0x2800:
        return Action.BRAILLE_BLANK, None
    if cp in (VS15, VS16):
        return Action.EMOJI_VS, None
    if cp in MONGOLIAN_FVS:
        return Action.MONGOLIAN_FVS, None
    if cp in (ZWJ, ZWNJ):
        return Action.JOINER, None
    if cp in DIRECTION_MARKS:
        return Action.DIRECTION_MARK, None
    if cp == BOM:
        return Action.BOM, None
    if cp in HANGUL_FILLERS:
        return Action.HANGUL_FILLER, None
    if 0xFFF9 <= cp <= 0xFFFB:
        return Action.REJECT, RULE_ANNOTATION
    category = unicodedata.category(chr(cp))
    if is_default_ignorable(cp):
        if category == "Cn":
            return Action.REJECT, RULE_UNASSIGNED
        return Action.STRIP, None
    if category == "Co":
        return Action.REJECT, RULE_PRIVATE_USE
    if category == "Cs":
        return Action.REJECT, RULE_SURROGATE
    if category == "Cc":
        return Action.REJECT, RULE_CONTROL
    if category == "Cn":
        if 0x1F000 <= cp <= 0x1FAFF:
            # Future emoji (assigned after Unicode 14): allowed, they render visibly.
            return Action.ALLOW, None
        return Action.REJECT, RULE_UNASSIGNED
    return Action.ALLOW, None


classify = functools.lru_cache(maxsize=8192)(_classify)


@functools.cache
def _candidate_pattern() -> re.Pattern[str]:
    """Finds every BMP code point that `classify` does not plainly ALLOW, and every astral one.

    The BMP class is exact (computed once from `classify`, a few tens of milliseconds) and
    compiles to a bitmap; astral hits are filtered through `classify` by the caller.
    """
    ranges: list[tuple[int, int]] = []
    start = -1
    for cp in range(0x10000):
        bad = not 0x20 <= cp < 0x7F and _classify(cp)[0] is not Action.ALLOW
        if bad and start < 0:
            start = cp
        elif not bad and start >= 0:
            ranges.append((start, cp - 1))
            start = -1
    if start >= 0:
        ranges.append((start, 0xFFFF))
    body = "".join(f"\\u{lo:04x}" if lo == hi else f"\\u{lo:04x}-\\u{hi:04x}" for lo, hi in ranges)
    # Astral: everything except the emoji blocks, which `classify` always allows.
    return lazy_compile(f"[{body}]|[\\U00010000-\\U0001efff\\U0001fb00-\\U0010ffff]")


_ASCII_CONTROLS = lazy_compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def candidate_positions(text: str) -> list[int]:
    """Offsets of the code points that are not plainly allowed (the policy table's domain)."""
    if text.isascii():
        if text.isprintable():  # only U+0020..U+007E: no control, nothing to compile (ADR 0109)
            return []
        return [m.start() for m in _ASCII_CONTROLS.finditer(text)]
    positions: list[int] = []
    for m in _candidate_pattern().finditer(text):
        ch = m.group()
        if ch >= "\U00010000" and classify(ord(ch))[0] is Action.ALLOW:
            continue
        positions.append(m.start())
    return positions


# --------------------------------------------------------------------------------------------
# Neighbour predicates

_PICTOGRAPHIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9),
    (0x00AE, 0x00AE),
    (0x203C, 0x203C),
    (0x2049, 0x2049),
    (0x2122, 0x2122),
    (0x2139, 0x2139),
    (0x2190, 0x21FF),
    (0x2300, 0x23FF),
    (0x24C2, 0x24C2),
    (0x25A0, 0x25FF),
    (0x2600, 0x27BF),
    (0x2900, 0x297F),
    (0x2B00, 0x2BFF),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3297),
    (0x3299, 0x3299),
    (0x1F000, 0x1FAFF),
    (0x1FC00, 0x1FFFD),
)

_JOINING_SCRIPT_RANGES: tuple[tuple[int, int], ...] = (
    (0x0600, 0x08FF),  # Arabic, Syriac, Thaana, NKo, Samaritan, Mandaic, Arabic ext.
    (0x0900, 0x0DFF),  # Devanagari .. Sinhala
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x1800, 0x18AF),  # Mongolian
    (0x1900, 0x194F),  # Limbu
    (0x1A20, 0x1AAF),  # Tai Tham
    (0x1B00, 0x1BFF),  # Balinese, Sundanese, Batak
    (0xA800, 0xA8FF),  # Syloti Nagri, Phags-pa, Saurashtra, Devanagari ext.
    (0xA980, 0xA9DF),  # Javanese
    (0xFB50, 0xFDFF),  # Arabic presentation forms A
    (0xFE70, 0xFEFE),  # Arabic presentation forms B
    (0x10AC0, 0x10AFF),  # Manichaean
    (0x10B80, 0x10BAF),  # Psalter Pahlavi
    (0x10D00, 0x10D3F),  # Hanifi Rohingya
    (0x10F30, 0x10FFF),  # Sogdian, Old Uyghur, Chorasmian, Elymaic
    (0x11000, 0x11FFF),  # Brahmic scripts of the SMP
    (0x1E900, 0x1E95F),  # Adlam
)

_HANGUL_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),
    (0x3131, 0x318E),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7A3),
    (0xD7B0, 0xD7FF),
    (0xFFA1, 0xFFDC),
)

_MONGOLIAN_RANGES: tuple[tuple[int, int], ...] = ((0x1800, 0x18AF), (0x11660, 0x1167F))


def _class_of(ranges: Iterable[tuple[int, int]]) -> re.Pattern[str]:
    return lazy_compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]")


_PICTOGRAPHIC = _class_of(_PICTOGRAPHIC_RANGES)
_JOINING_SCRIPT = _class_of(_JOINING_SCRIPT_RANGES)
_HANGUL = _class_of(_HANGUL_RANGES)
_MONGOLIAN = _class_of(_MONGOLIAN_RANGES)


def is_pictographic(ch: str) -> bool:
    """An approximation of Extended_Pictographic (the emoji bases of ZWJ sequences)."""
    return _PICTOGRAPHIC.match(ch) is not None


def _is_emoji_continuation(ch: str) -> bool:
    cp = ord(ch)
    return cp in (VS16, TAG_CANCEL, 0x20E3) or is_pictographic(ch)


def _is_vs_base(ch: str) -> bool:
    """May VS15/VS16 follow `ch`? Emoji, symbols, and the keycap bases."""
    return is_pictographic(ch) or ch in "0123456789#*" or unicodedata.category(ch)[0] == "S"


def _is_joining_letter(ch: str) -> bool:
    return _JOINING_SCRIPT.match(ch) is not None and unicodedata.category(ch)[0] in "LM"


def _is_hangul_letter(ch: str) -> bool:
    cp = ord(ch)
    return cp not in HANGUL_FILLERS and _HANGUL.match(ch) is not None


def _is_mongolian_letter(ch: str) -> bool:
    return _MONGOLIAN.match(ch) is not None and unicodedata.category(ch)[0] == "L"


def _is_variation_selector(cp: int) -> bool:
    return 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF or cp in MONGOLIAN_FVS


_CJK_IDEOGRAPH = lazy_compile(
    "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\U00030000-\U0003134f]"
)
_VS1_BASES = lazy_compile("[\u1000-\u109f\ua840-\ua87f\U00010ac0-\U00010aff]")


def _registered_vs_base(ch: str, vs: int) -> bool:
    """May selector `vs` (VS1-VS14 or VS17-VS256) follow `ch` (StandardizedVariants, IVD)?"""
    if _CJK_IDEOGRAPH.match(ch) is not None:
        return vs >= 0xE0100 or vs <= 0xFE02
    if vs == 0xFE00:
        return unicodedata.category(ch) == "Sm" or _VS1_BASES.match(ch) is not None
    return False


def _is_rtl(ch: str) -> bool:
    return unicodedata.bidirectional(ch) in ("R", "AL")


def _keep_in_context(
    cp: int, action: Action, prev: str | None, nxt: str | None, has_rtl: bool
) -> bool:
    """Keep a strip-or-keep character, given the previous kept and the next character?"""
    if action is Action.DIRECTION_MARK:
        return has_rtl
    if prev is None:
        return False
    if action is Action.EMOJI_VS:
        return _is_vs_base(prev)
    if action is Action.MONGOLIAN_FVS:
        return _is_mongolian_letter(prev)
    # Action.JOINER (ZWJ or ZWNJ): between joining letters, or ZWJ inside an emoji sequence.
    if unicodedata.combining(prev) == 9 and _JOINING_SCRIPT.match(prev) is not None:
        return True  # after a virama: conjunct/half forms and old-style chillu, also word-final
    if nxt is None:
        return False
    if _is_joining_letter(prev) and _is_joining_letter(nxt):
        return True
    return cp == ZWJ and _is_emoji_continuation(prev) and is_pictographic(nxt)


# --------------------------------------------------------------------------------------------
# The policy


@attrs.frozen(kw_only=True)
class Rejection:
    """One rejected code point: its rule id, label ("U+202E") and offset in the input."""

    rule_id: str
    code_point: str
    offset: int


@attrs.frozen(kw_only=True)
class PolicyResult:
    text: str
    stripped: tuple[str, ...]
    rejections: tuple[Rejection, ...]


_STRIP_OR_KEEP_CHARS = lazy_compile("[\u061c\u180b-\u180d\u180f\u200c-\u200f\ufe0e\ufe0f]")
_RTL_HINT = lazy_compile(
    "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]"
)


class _Rejections:
    def __init__(self) -> None:
        self.items: list[Rejection] = []
        self._seen: set[tuple[str, int]] = set()

    def add(self, rule_id: str, cp: int, offset: int) -> None:
        key = (rule_id, cp)
        if key in self._seen or len(self.items) >= MAX_REPORTED_REJECTIONS:
            return
        self._seen.add(key)
        self.items.append(
            Rejection(rule_id=rule_id, code_point=code_point_label(cp), offset=offset)
        )


def _valid_flag_tags(tags: list[int]) -> bool:
    """UTS #51 emoji tag sequence spec: a subdivision id, 2 letters + 1-4 letters/digits."""
    if not 3 <= len(tags) <= 6:
        return False
    spec = "".join(chr(t - 0xE0000) for t in tags)
    return spec[:2].isalpha() and spec.islower() and spec.isalnum() and spec.isascii()


def _remove_positions(s: str, positions: list[int]) -> str:
    """`s` without the characters at the (sorted) positions."""
    pieces: list[str] = []
    last = 0
    for p in positions:
        pieces.append(s[last:p])
        last = p + 1
    pieces.append(s[last:])
    return "".join(pieces)


class _Sequence:
    """The text after step 1's unconditional strips, seen through the raw offsets."""

    def __init__(self, text: str, removed: set[int]) -> None:
        self.text = text
        self.removed = removed

    def prev_kept(self, p: int) -> int:
        q = p - 1
        while q >= 0 and q in self.removed:
            q -= 1
        return q

    def next_kept(self, p: int) -> int:
        q = p + 1
        while q < len(self.text) and q in self.removed:
            q += 1
        return q


def apply_policy(text: str, candidates: list[int] | None = None) -> PolicyResult:
    """Clean `text` per the policy; see the module docstring. Linear in len(text).

    `candidates` may pass `candidate_positions(text)` when the caller already has it.
    """
    if candidates is None:
        candidates = candidate_positions(text)
    if not candidates:
        return PolicyResult(text=unicodedata.normalize("NFC", text), stripped=(), rejections=())
    n = len(text)
    rejections = _Rejections()
    stripped: dict[str, None] = {}  # ordered set of labels

    # Step 1: context-free classification; unconditional strips leave the sequence.
    removed: set[int] = set()
    action_at: dict[int, Action] = {}
    for p in candidates:
        cp = ord(text[p])
        action, rule = classify(cp)
        if action is Action.STRIP or (action is Action.BOM and p == 0):
            stripped[code_point_label(cp)] = None
            removed.add(p)
            continue
        if action is Action.BOM:
            action, rule = Action.REJECT, RULE_BOM
        if action is Action.REJECT:
            assert rule is not None
            rejections.add(rule, cp, p)
        action_at[p] = action
    seq = _Sequence(text, removed)
    kept = [p for p in candidates if p in action_at]

    # Step 2: keep-or-reject decisions on the sequence after step 1.
    # 2a. Runs of two or more variation selectors.
    selectors = [p for p in kept if _is_variation_selector(ord(text[p]))]
    i = 0
    while i < len(selectors):
        j = i
        while j + 1 < len(selectors) and seq.next_kept(selectors[j]) == selectors[j + 1]:
            j += 1
        if j > i:
            rejections.add(RULE_VS_RUN, ord(text[selectors[i]]), selectors[i])
            for k in range(i, j + 1):
                action_at[selectors[k]] = Action.REJECT
        i = j + 1
    # 2b. Tag characters: only inside U+1F3F4 + subdivision tags + CANCEL TAG.
    for p in kept:
        if action_at[p] is not Action.TAG:
            continue
        before = seq.prev_kept(p)
        if before >= 0 and ord(text[before]) == WAVING_BLACK_FLAG:
            run = [p]
            q = seq.next_kept(p)
            while q < n and 0xE0020 <= ord(text[q]) <= 0xE007E and len(run) <= 7:
                run.append(q)
                q = seq.next_kept(q)
            if (
                q < n
                and ord(text[q]) == TAG_CANCEL
                and _valid_flag_tags([ord(text[r]) for r in run])
            ):
                for r in (*run, q):
                    action_at[r] = Action.ALLOW
                continue
        action_at[p] = Action.REJECT
        rejections.add(RULE_TAG, ord(text[p]), p)
    # 2c. Hangul fillers: only in a run of fillers touching a Hangul letter.
    for p in kept:
        if action_at[p] is not Action.HANGUL_FILLER:
            continue
        run = [p]
        q = seq.next_kept(p)
        while q < n and action_at.get(q) is Action.HANGUL_FILLER:
            run.append(q)
            q = seq.next_kept(q)
        before = seq.prev_kept(p)
        ok = (before >= 0 and _is_hangul_letter(text[before])) or (
            q < n and _is_hangul_letter(text[q])
        )
        for r in run:
            action_at[r] = Action.ALLOW if ok else Action.REJECT
            if not ok:
                rejections.add(RULE_HANGUL_FILLER, ord(text[r]), r)

    # 2d. VS1-VS14 and VS17-VS256: kept only where Unicode registers such sequences (one
    # selector after a CJK ideograph: ideographic variation sequences and CJK compatibility
    # variants; VS1 after a math symbol, Myanmar, Phags-pa or Manichaean letter).
    for p in kept:
        if action_at[p] is not Action.SEQUENCE_VS:
            continue
        before = seq.prev_kept(p)
        ok = (
            before >= 0
            and action_at.get(before, Action.ALLOW) is Action.ALLOW
            and (_registered_vs_base(text[before], ord(text[p])))
        )
        action_at[p] = Action.ALLOW if ok else Action.REJECT
        if not ok:
            rejections.add(RULE_VS, ord(text[p]), p)
    # 2e. U+2800 BRAILLE PATTERN BLANK looks like a space: kept only inside Braille text.
    for p in kept:
        if action_at[p] is not Action.BRAILLE_BLANK:
            continue
        run = [p]
        q = seq.next_kept(p)
        while q < n and ord(text[q]) == 0x2800:
            run.append(q)
            q = seq.next_kept(q)
        before = seq.prev_kept(p)
        ok = (before >= 0 and 0x2801 <= ord(text[before]) <= 0x28FF) or (
            q < n and 0x2801 <= ord(text[q]) <= 0x28FF
        )
        for r in run:
            action_at[r] = Action.ALLOW if ok else Action.REJECT
            if not ok:
                rejections.add(RULE_BLANK, ord(text[r]), r)

    has_rtl = any(
        _is_rtl(m.group()) and classify(ord(m.group()))[0] is Action.ALLOW
        for m in _RTL_HINT.finditer(text)
    )

    # Step 3: keep-or-strip decisions on the NFC form, until nothing more is stripped (NFC can
    # compose across a removed character, which may change a neighbour).
    current = unicodedata.normalize("NFC", _remove_positions(text, sorted(removed)))
    while True:
        removed_now: list[int] = []
        last_pos = -2
        prev_after_last: str | None = None  # the last kept character up to last_pos
        for m in _STRIP_OR_KEEP_CHARS.finditer(current):
            p = m.start()
            ch = m.group()
            if p == 0:
                prev: str | None = None
            elif p - 1 == last_pos:
                prev = prev_after_last
            else:
                prev = current[p - 1]
            nxt = current[p + 1] if p + 1 < len(current) else None
            cp = ord(ch)
            if _keep_in_context(cp, classify(cp)[0], prev, nxt, has_rtl):
                prev_after_last = ch
            else:
                prev_after_last = prev
                removed_now.append(p)
                stripped[code_point_label(cp)] = None
            last_pos = p
        if not removed_now:
            break
        current = unicodedata.normalize("NFC", _remove_positions(current, removed_now))

    return PolicyResult(text=current, stripped=tuple(stripped), rejections=tuple(rejections.items))


# --------------------------------------------------------------------------------------------
# The scan copy

_WS_CHUNKS = lazy_compile(r"[\t\n\r ]+|[^\t\n\r ]+")


class ScanCopy:
    """The copies the pattern scanners read, with maps back to offsets in the input.

    * `stripped`: the input with every code point that is not plainly allowed removed (strip,
      context and reject classes alike), not normalised;
    * `folded`: NFKC(stripped), the copy the injection and secret regexes run on.
    Maps are built lazily, only when a finding needs an offset. Inside a word whose NFKC form
    depends on its neighbours an offset maps to the start of that word.
    """

    def __init__(self, text: str, candidates: list[int] | None = None) -> None:
        if candidates is None:
            candidates = candidate_positions(text)
        runs: list[tuple[int, int]] = []
        for p in candidates:
            if runs and runs[-1][1] == p:
                runs[-1] = (runs[-1][0], p + 1)
            else:
                runs.append((p, p + 1))
        if runs:
            pieces: list[str] = []
            last = 0
            for a, b in runs:
                pieces.append(text[last:a])
                last = b
            pieces.append(text[last:])
            self.stripped = "".join(pieces)
        else:
            self.stripped = text
        # For run k: its position in `stripped` and the removed length up to and including it.
        self._run_at: list[int] = []
        self._removed_through: list[int] = []
        total = 0
        for a, b in runs:
            self._run_at.append(a - total)
            total += b - a
            self._removed_through.append(total)
        if self.stripped.isascii() or unicodedata.is_normalized("NFKC", self.stripped):
            self.folded = self.stripped
        else:
            self.folded = unicodedata.normalize("NFKC", self.stripped)
        self._chunks: list[tuple[int, int, str, str]] | None = None
        self._chunk_starts: list[int] = []

    def stripped_to_raw(self, i: int) -> int:
        k = bisect.bisect_right(self._run_at, i)
        return i + (self._removed_through[k - 1] if k else 0)

    def folded_to_raw(self, i: int) -> int:
        if self.folded is self.stripped:
            return self.stripped_to_raw(i)
        if self._chunks is None:
            self._build_chunks()
        assert self._chunks is not None
        k = max(bisect.bisect_right(self._chunk_starts, i) - 1, 0)
        if not self._chunks:
            return 0
        folded_start, stripped_start, chunk, folded_chunk = self._chunks[k]
        within = i - folded_start
        if chunk == folded_chunk:
            return self.stripped_to_raw(stripped_start + min(within, len(chunk) - 1))
        position = 0
        index = len(chunk) - 1
        for k, c in enumerate(chunk):
            position += len(unicodedata.normalize("NFKC", c))
            if position > within:
                index = k
                break
        per_char_ok = "".join(unicodedata.normalize("NFKC", c) for c in chunk) == folded_chunk
        return self.stripped_to_raw(stripped_start + (index if per_char_ok else 0))

    def _build_chunks(self) -> None:
        chunks: list[tuple[int, int, str, str]] = []
        folded_pos = 0
        for m in _WS_CHUNKS.finditer(self.stripped):
            chunk = m.group()
            folded_chunk = (
                chunk
                if chunk.isascii() or unicodedata.is_normalized("NFKC", chunk)
                else unicodedata.normalize("NFKC", chunk)
            )
            chunks.append((folded_pos, m.start(), chunk, folded_chunk))
            folded_pos += len(folded_chunk)
        self._chunks = chunks
        self._chunk_starts = [c[0] for c in chunks]
