"""Correction capture (seed 修正捕获): does a user message correct the agent, and what is
the corrective sentence to remember.

Rules (config `correctionStrongPatterns`, `correctionWeakPatterns`,
`correctionNegativePatterns`, `correctionDirectiveWords`):
- a NEGATIVE pattern anywhere in the message means "not a correction" ("never mind", "no
  worries", "no problem"): it wins over everything;
- a STRONG pattern match is a correction ("no, use X", "actually, it is Y", "that's wrong");
- a WEAK pattern match is a correction only when the message also holds a DIRECTIVE word
  ("please remember ..." + "always", "don't", ...).
Patterns are case-insensitive regular expressions applied to each sentence of the message;
None for a list means the built-in defaults, an empty list turns that list off, and an entry
that is not a valid regular expression is skipped (the valid ones apply).

Pure: standard library and attrs only.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Final

import attrs

__all__ = [
    "CAPTURE_EVERY_TURNS",
    "DEFAULT_DIRECTIVE_WORDS",
    "DEFAULT_NEGATIVE_PATTERNS",
    "DEFAULT_STRONG_PATTERNS",
    "DEFAULT_WEAK_PATTERNS",
    "Correction",
    "CorrectionRules",
    "Strength",
    "corrective_sentence",
    "detect",
]

#: at most one capture per this many user turns
CAPTURE_EVERY_TURNS: Final = 3
#: characters of a message that are examined (a pasted log is not a correction)
MAX_MESSAGE_CHARS: Final = 4_000
#: characters of a corrective sentence that are stored
MAX_SENTENCE_CHARS: Final = 500

DEFAULT_STRONG_PATTERNS: Final = (
    r"^(?:no|nope)(?:[,.!:;]\s+\S|[.!]$)",
    r"^actually[,:]?\s+\S",
    r"^(?:wrong|incorrect)\b",
    r"\bthat(?:'s| is) (?:wrong|incorrect|not (?:right|correct|what i (?:asked|meant|want)))\b",
    r"\byou(?:'re| are) wrong\b",
    r"^(?:don'?t|do not|stop|never)\s+\w+",
    r"\bi (?:said|told you|asked for)\b",
    r"\bnot what i (?:asked|meant|wanted)\b",
    r"^instead[,:]?\s+\S",
    r"\b(?:you should have|you shouldn't have|should(?: have)? used?)\b",
)
DEFAULT_WEAK_PATTERNS: Final = (
    r"^please\s+remember\b",
    r"\bremember (?:that|to)\b",
    r"\bfrom now on\b",
    r"\bin the future\b",
    r"\bnext time\b",
    r"\bgoing forward\b",
    r"^(?:hmm|hm|well|but)[,.]?\s+\S",
)
DEFAULT_NEGATIVE_PATTERNS: Final = (
    r"^never ?mind\b",
    r"\bno (?:worries|problem|thanks|thank you)\b",
    r"^no\?*$",
    r"\?\s*$",
    r"^(?:actually|no),?\s+(?:that(?:'s| is)|it(?:'s| is)) (?:fine|ok|okay|good|great|perfect)\b",
)
DEFAULT_DIRECTIVE_WORDS: Final = (
    "always",
    "never",
    "don't",
    "dont",
    "do not",
    "should",
    "must",
    "prefer",
    "instead",
    "use",
    "remember",
)

#: leading words of a correction that carry no fact ("No, use pnpm" -> "use pnpm")
_LEAD = re.compile(
    r"^\s*(?:(?:no|nope|actually|wrong|incorrect|not quite|hmm|well|but|instead|"
    r"that(?:'s| is) (?:wrong|incorrect|not right))\s*[,.!:;\-—]*\s*)+",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


class Strength(enum.StrEnum):
    STRONG = "strong"
    WEAK = "weak"


@attrs.frozen(kw_only=True)
class CorrectionRules:
    """Compiled correction rules; `invalid` lists the pattern entries that were skipped."""

    strong: tuple[re.Pattern[str], ...] = ()
    weak: tuple[re.Pattern[str], ...] = ()
    negative: tuple[re.Pattern[str], ...] = ()
    directive_words: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        *,
        strong: Sequence[str] | None = None,
        weak: Sequence[str] | None = None,
        negative: Sequence[str] | None = None,
        directive_words: Sequence[str] | None = None,
    ) -> CorrectionRules:
        """None: the defaults; an empty sequence: that list is off."""
        invalid: list[str] = []

        def compiled(
            given: Sequence[str] | None, default: Sequence[str]
        ) -> tuple[re.Pattern[str], ...]:
            out = []
            for source in default if given is None else given:
                try:
                    out.append(re.compile(source, re.IGNORECASE))
                except (re.error, TypeError, ValueError, RecursionError, OverflowError):
                    invalid.append(str(source))
            return tuple(out)

        words = DEFAULT_DIRECTIVE_WORDS if directive_words is None else directive_words
        return cls(
            strong=compiled(strong, DEFAULT_STRONG_PATTERNS),
            weak=compiled(weak, DEFAULT_WEAK_PATTERNS),
            negative=compiled(negative, DEFAULT_NEGATIVE_PATTERNS),
            directive_words=tuple(
                w.strip().lower() for w in words if isinstance(w, str) and w.strip()
            ),
            invalid=tuple(invalid),
        )


@attrs.frozen(kw_only=True)
class Correction:
    strength: Strength
    #: the sentence that corrects, without its leading "no, / actually, / wrong, …"
    sentence: str


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _has_word(text: str, word: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE) is not None


def corrective_sentence(sentence: str) -> str:
    """`sentence` without its leading "no, / actually, / wrong, …" (clipped); "" when
    nothing else is left."""
    stripped = _LEAD.sub("", sentence, count=1).strip()
    if stripped[:1].islower():
        stripped = stripped[0].upper() + stripped[1:]
    return stripped[:MAX_SENTENCE_CHARS]


def detect(rules: CorrectionRules, message: str) -> Correction | None:
    """The correction `message` makes, or None. Never raises."""
    if not isinstance(message, str):
        return None
    text = message.strip()[:MAX_MESSAGE_CHARS]
    sentences = _sentences(text)
    if not sentences:
        return None
    for sentence in sentences:
        if any(p.search(sentence) for p in rules.negative):
            return None
    for strength, patterns in ((Strength.STRONG, rules.strong), (Strength.WEAK, rules.weak)):
        for i, sentence in enumerate(sentences):
            match = next((p for p in patterns if p.search(sentence)), None)
            if match is None:
                continue
            if strength is Strength.WEAK:
                # the directive must be more than the words the weak pattern matched
                rest = " ".join(
                    [*sentences[:i], match.sub(" ", sentence, count=1), *sentences[i + 1 :]]
                )
                if not any(_has_word(rest, w) for w in rules.directive_words):
                    continue
            found = corrective_sentence(sentence)
            if len(found) < 3 and i + 1 < len(sentences):  # "No. Use X." : the fact follows
                found = corrective_sentence(sentences[i + 1])
            if len(found) >= 3:
                return Correction(strength=strength, sentence=found)
    return None
