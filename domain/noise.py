"""The second seed's noise filter, as far as `memory_store` needs it (ADR 0045).

Text that is not a fact worth remembering: an agent's refusal ("I don't have any information
…"), a meta question about memory itself ("do you remember …?"), a greeting or a heartbeat
("hi", "hello", "HEARTBEAT"), or too little text to mean anything. `noise_problem` says which,
or None for text that may be stored. Pure: no I/O, no state.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["MIN_CHARS", "noise_problem"]

#: fewer letters and digits than this is no fact (CJK: each character counts as a word)
MIN_CHARS: Final = 4

_REFUSALS: Final = re.compile(
    r"^(?:i\s+(?:do\s*n['’]?t|do\s+not|don't)\s+have\s+(?:any\s+)?"
    r"(?:information|memor(?:y|ies)|(?:relevant\s+)?(?:context|details?|data))"
    r"|i\s+(?:can\s*not|can['’]?t|am\s+unable\s+to|'m\s+unable\s+to)\s+"
    r"(?:recall|remember|find|access)"
    r"|(?:there\s+(?:is|are)\s+)?no\s+(?:relevant\s+)?memor(?:y|ies)\s+(?:found|available)"
    r"|i\s+(?:have\s+)?no\s+(?:memory|record|information)\s+of"
    r"|as\s+an\s+ai\b"
    r"|我(?:没有|不知道|无法|不记得))",
    re.IGNORECASE,
)
_META: Final = re.compile(
    r"^(?:do|did|can|could|will|would)\s+you\s+(?:still\s+)?(?:remember|recall|know)\b"
    r"|^what\s+do\s+you\s+(?:remember|know\s+about\s+me)\b"
    r"|^(?:你(?:还)?记得|你知道我)",
    re.IGNORECASE,
)
_GREETINGS: Final = frozenset(
    {
        "hi",
        "hello",
        "hey",
        "yo",
        "hiya",
        "howdy",
        "good morning",
        "good afternoon",
        "good evening",
        "good night",
        "thanks",
        "thank you",
        "ok",
        "okay",
        "bye",
        "heartbeat",
        "ping",
        "你好",
        "您好",
        "谢谢",
        "再见",
        "早上好",
        "晚安",
    }
)
_TRAILING: Final = re.compile(r"[\s!.?,;:~…！。？，、]+$")


def _words(text: str) -> int:
    """Letters and digits, a CJK character counting as much as a short word."""
    count = 0
    for ch in text:
        if ch.isalnum():
            count += 4 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return count


def noise_problem(text: str) -> str | None:
    """Why `text` is noise rather than a memory, or None when it may be stored."""
    flat = " ".join(unicodedata.normalize("NFKC", text).split())
    bare = _TRAILING.sub("", flat).casefold()
    if _words(bare) < MIN_CHARS:
        return "it is too short to be a fact worth remembering"
    if bare in _GREETINGS or bare.removeprefix("[").removesuffix("]") in _GREETINGS:
        return "it is a greeting or a heartbeat, not a fact"
    if _REFUSALS.match(bare):
        return "it is an assistant's refusal or a 'no information' reply, not a fact"
    if _META.match(bare):
        return "it is a question about memory itself, not a fact"
    return None
