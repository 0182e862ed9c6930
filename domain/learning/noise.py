"""The second seed's noise filter (ADR 0045, extended by ADR 0049).

Text that is not a fact worth remembering: an agent's refusal ("I don't have any information
…"), a meta question about memory itself ("do you remember …?"), assistant boilerplate ("I
hope this helps!"), a greeting or a heartbeat ("hi", "hello there", "HEARTBEAT", "你好"), or
too little text to mean anything. `noise_problem` says which, or None for text that may be
stored. The same filter guards `memory_store`, auto-capture and the results of auto-recall.

A greeting is the *whole* text (after trailing punctuation): the upstream filter matched a
greeting word at the start of the text, so "history of the project" counted as "hi" and
"hello-world service uses port 8080" as "hello". Here a greeting is a greeting word followed
by at most an addressee ("hi there", "hello everyone"), nothing else.

Pure: no I/O, no state. `flatten` and `is_greeting` are shared with adaptive retrieval.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["MIN_CHARS", "flatten", "is_greeting", "noise_problem"]

#: fewer letters and digits than this is no fact (CJK: each character counts as a word)
MIN_CHARS: Final = 4

_REFUSALS: Final = re.compile(
    r"^(?:(?:i['’]?m\s+sorry|sorry|unfortunately)[,.!\s]+(?:but\s+)?)?"
    r"(?:i\s+(?:do\s*n['’]?t|do\s+not|don't)\s+have\s+(?:access\s+to\b|(?:any\s+)?"
    r"(?:information|memor(?:y|ies)|(?:relevant\s+)?(?:context|details?|data|records?)))"
    r"|i\s+(?:can\s*not|can['’]?t|am\s+unable\s+to|'m\s+unable\s+to|am\s+not\s+able\s+to)\s+"
    r"(?:recall|remember|find|access|retrieve)"
    r"|(?:there\s+(?:is|are)\s+)?no\s+(?:relevant\s+)?memor(?:y|ies)\s+(?:found|available)"
    r"|i\s+(?:have\s+)?no\s+(?:memory|record|information)\s+of"
    r"|as\s+an\s+ai\b"
    # "我没有相关信息", "我找不到任何记录" — not a user's "我没有 root 权限，…"
    r"|我(?:没有|找不到)(?:找到)?(?:任何|相关|关于\S{0,20}?|的){0,3}(?:信息|记忆|记录|资料|数据|上下文)"
    r"|我(?:不知道|不记得|无法(?:回忆|记起|想起|访问|获取|找到|检索))"
    r"|(?:抱歉|对不起|很抱歉)[，,。\s]*我(?:没有|无法|不记得|找不到|不知道))",
    re.IGNORECASE,
)
_META: Final = re.compile(
    r"^(?:do|did|can|could|will|would)\s+you\s+(?:still\s+)?(?:remember|recall|know)\b"
    r"|^what\s+do\s+you\s+(?:remember|know\s+about\s+me)\b"
    r"|^what\s+did\s+i\s+(?:tell|say\s+to)\s+you\b"
    r"|^(?:你(?:还)?记得|你知道我|你记住了吗|我(?:之前|上次)(?:跟你)?说过什么)",
    re.IGNORECASE,
)
#: whole-text assistant boilerplate (never a prefix: "Happy path tests run nightly" is a fact)
_BOILERPLATE: Final = re.compile(
    r"^(?:i\s+hope\s+(?:this|that)\s+helps"
    r"|(?:please\s+)?(?:let\s+me\s+know|feel\s+free\s+to\s+ask)\s+if\s+you\s+have\s+any\s+"
    r"(?:other\s+|more\s+|further\s+)?questions"
    r"|(?:i['’]?m\s+)?happy\s+to\s+help|(?:how\s+)?can\s+i\s+help\s+you(?:\s+today)?"
    r"|is\s+there\s+anything\s+else(?:\s+i\s+can\s+help\s+(?:you\s+)?with)?"
    r"|sure|certainly|of\s+course|no\s+problem|you['’]?re\s+welcome|great\s+question"
    r"|希望(?:这|以上内容)?(?:对你|对您)?有(?:所)?帮助|有什么(?:我)?可以帮(?:你|您)的(?:吗)?"
    r"|如(?:果)?有(?:其他|任何)?(?:问题|疑问)(?:，|,)?(?:请|欢迎)?随时(?:告诉我|提问|联系)"
    r"|不客气|当然|没问题)$",
    re.IGNORECASE,
)
_GREETING: Final = re.compile(
    r"^(?:hi|hello|hey|hiya|howdy|yo|greetings|good\s+(?:morning|afternoon|evening|night)"
    r"|thanks|thank\s+you|bye|goodbye|see\s+you|ok|okay)"
    r"(?:[\s,]+(?:there|all|everyone|everybody|folks|team|guys|friend|again|so\s+much))?$"
    r"|^\[?(?:heartbeat(?:_ok)?|ping|pong|no_reply)\]?$"
    r"|^(?:你好|您好|嗨|哈喽|哈啰|早上好|早安|午安|下午好|晚上好|晚安|大家好|谢谢|多谢|再见|拜拜|在吗)"
    r"(?:呀|啊|哦|你|您|大家)?$",
    re.IGNORECASE,
)
_TRAILING: Final = re.compile(r"[\s!.?,;:~…！。？，、]+$")


def flatten(text: str) -> str:
    """NFKC, whitespace runs as one space, no trailing punctuation, casefolded."""
    flat = " ".join(unicodedata.normalize("NFKC", text).split())
    return _TRAILING.sub("", flat).casefold()


def is_greeting(text: str) -> bool:
    """The whole text is a greeting, thanks, farewell or heartbeat (see the module)."""
    return _GREETING.match(flatten(text)) is not None


def _words(text: str) -> int:
    """Letters and digits, a CJK character counting as much as a short word."""
    count = 0
    for ch in text:
        if ch.isalnum():
            count += 4 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return count


def noise_problem(text: str) -> str | None:
    """Why `text` is noise rather than a memory, or None when it may be stored."""
    bare = flatten(text)
    if _words(bare) < MIN_CHARS:
        return "it is too short to be a fact worth remembering"
    if _GREETING.match(bare):
        return "it is a greeting or a heartbeat, not a fact"
    if _REFUSALS.match(bare):
        return "it is an assistant's refusal or a 'no information' reply, not a fact"
    if _META.match(bare):
        return "it is a question about memory itself, not a fact"
    if _BOILERPLATE.match(bare):
        return "it is assistant boilerplate, not a fact"
    return None
