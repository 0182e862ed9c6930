"""Auto-capture: which user statements are worth remembering (seed 自动捕获, ADR 0049).

`capture_candidates(text)` splits one user message (its first `CAPTURE_SCAN_CHARS`, 32,768
characters: a pasted log is not read whole) into statements (sentences and lines) and keeps
those that

- match a trigger of a category: preference ("I prefer …", "我喜欢 …"), decision ("we
  decided …", "以后都用 …"), entity ("my name is …", "我叫 …", "I work at …") or fact
  ("remember that …", "note that …", "my X is …", "记住 …", "我们的 X 是 …");
- are between `MIN_CAPTURE_CHARS` (10) and `MAX_CAPTURE_CHARS` (500) characters long, or at
  least `MIN_CAPTURE_CHARS_CJK` (4) when they contain CJK;
- are not a question, not noise (`pi_hermes_memory.domain.learning.noise`), carry no injected memory
  block (`<relevant-memories>`, `<memory-context>`, … or their escaped `&lt;` form), no XML or
  system text (a tag, a `[system]` line, a chat role marker), and are not a memory-management
  request ("forget …", "delete that memory", "don't remember …", "忘记 …", "删除记忆"), nor a
  request to keep something the statement does not say ("remember how the service deploys",
  "remember this", "记住怎么部署"): the agent keeps that with its tool, once it knows it.

"Remember that X" is a capture: the person asked for X to be kept, so X is stored (with the
request words removed, "Remember that the staging DB is on 5433" stores "the staging DB is on
5433"), and so is "Don't forget that X". "Forget X" is not: forgetting is a deletion the agent
does with its tools, never an entry. A statement's category is the first trigger kind that
matches, in the order decision, preference, entity, fact; `detect_category` gives `other` for
text with no trigger.

Pure: no I/O, no state.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import attrs
from pi_hermes_memory.domain.learning.noise import noise_problem
from pi_hermes_memory.domain.memory.model import MemoryKind
from pi_hermes_memory.domain.prompt.blocks import BLOCK_TAGS, ROLE_MARKER, has_cjk

__all__ = [
    "CAPTURE_SCAN_CHARS",
    "MAX_CAPTURE_CHARS",
    "MIN_CAPTURE_CHARS",
    "MIN_CAPTURE_CHARS_CJK",
    "RECALL_TAG",
    "Candidate",
    "capture_candidates",
    "capture_problem",
    "detect_category",
    "split_statements",
]

MIN_CAPTURE_CHARS: Final = 10
MIN_CAPTURE_CHARS_CJK: Final = 4
MAX_CAPTURE_CHARS: Final = 500
#: characters of a message whose statements are considered (a pasted log is not read whole)
CAPTURE_SCAN_CHARS: Final = 32_768
#: the auto-recall block's tag (domain/prompt/recall_block.py renders it)
RECALL_TAG: Final = "relevant-memories"
_INJECTED_TAGS: Final = (RECALL_TAG, *BLOCK_TAGS)


@attrs.frozen(kw_only=True)
class Candidate:
    text: str
    category: MemoryKind


_TRIGGERS: Final[tuple[tuple[MemoryKind, re.Pattern[str]], ...]] = (
    (
        MemoryKind.DECISION,
        re.compile(
            r"\b(?:we|i)\s+(?:have\s+)?(?:decided|chose|agreed|settled\s+on|picked|went\s+with)\b"
            r"|\b(?:we|i)(?:\s+will|['’]ll)\s+(?:use|go\s+with|stick\s+with|switch\s+to)\b"
            r"|\b(?:we\s+are|we['’]re)\s+(?:going\s+to\s+use|switching\s+to|moving\s+to)\b"
            r"|\blet['’]?s\s+(?:use|go\s+with|stick\s+with|switch\s+to)\b"
            r"|\b(?:from\s+now\s+on|going\s+forward)\b"
            r"|(?:我们)?决定(?:了|用|采用|使用)?|我们选(?:择)?了|以后(?:都|就|统一)|从现在(?:开始|起)|"
            r"今后|就用|改用|统一用|定下来",
            re.IGNORECASE,
        ),
    ),
    (
        MemoryKind.PREFERENCE,
        re.compile(
            r"\b(?:i|we)\s+(?:really\s+|much\s+|strongly\s+)?(?:prefer|like|love|hate|dislike|"
            r"enjoy|want|need|always|never|usually|tend\s+to)\b"
            r"|\b(?:i|we)['’]d\s+(?:rather|prefer)\b|\bmy\s+favou?rite\b"
            r"|\bplease\s+(?:always|never|don['’]?t)\b|\b(?:always|never)\s+use\b"
            r"|我(?:很|更|比较|最|不太|不)?(?:喜欢|偏好|偏爱|讨厌|习惯|倾向|希望|想要)|总是|从不|"
            r"请(?:始终|一直|总是|不要|别)|别再|不要再",
            re.IGNORECASE,
        ),
    ),
    (
        MemoryKind.ENTITY,
        re.compile(
            r"\bmy\s+(?:name|email|e-mail|phone|address|birthday|team|company|employer|manager|"
            r"boss|colleague|role|title|wife|husband|partner|son|daughter|dog|cat)\b"
            r"|\bi(?:\s+am|['’]m)\s+(?:a|an|the)\s+\w+|\bi\s+work\s+(?:at|for|on|in|as)\b"
            r"|\bi\s+live\s+in\b|\bcall\s+me\b|\b[\w.+-]+@[\w-]+\.[\w.]+\b"
            r"|我叫|我的名字|我是(?:一名|一个|个)?|我在\S{1,20}工作|我住在|我的(?:邮箱|电话|地址|生日|"
            r"团队|公司|老板|经理|同事)|我们公司|我们团队",
            re.IGNORECASE,
        ),
    ),
    (
        MemoryKind.FACT,
        re.compile(
            r"\b(?:remember|note|keep\s+in\s+mind|don['’]?t\s+forget|be\s+aware)(?:\s+that\b|\s*:)"
            r"|^(?:please\s+)?remember\b|\bfyi\b|\bfor\s+the\s+record\b|\bimportant\s*:"
            r"|\bmy\s+\w+(?:\s+\w+)?\s+(?:is|are|was|runs|uses)\b|\bis\s+my\b"
            r"|\bour\s+(?:\w+\s+)?(?:project|repo|repository|stack|api|server|database|db|"
            r"service|app|team|deadline|cluster)\s+(?:is|are|uses|runs|lives|has)\b"
            r"|记住|记一下|请记下|备注|注意[:：]|重要[:：]|我的\S{1,12}是|我们的\S{1,12}(?:是|用|在)|"
            r"项目(?:用的是|使用|基于)|默认(?:是|用)",
            re.IGNORECASE,
        ),
    ),
)
#: the request words in front of a fact the person asked to keep
_REMEMBER_PREFIX: Final = re.compile(
    r"^(?:(?:please|pls|also|and)\s+)*(?:remember|note|keep\s+in\s+mind|don['’]?t\s+forget)"
    r"(?:\s+that\b|\s*:|\s*,|\s+(?=\S))\s*"
    r"|^(?:请)?(?:记住|记一下|请记下|记下)[:：，,\s]*",
    re.IGNORECASE,
)
_MANAGEMENT: Final = re.compile(
    # "forget …" is a deletion; "don't forget that …" asks to keep (a fact trigger)
    r"(?<!n't\s)(?<!n’t\s)(?<!dont\s)(?<!not\s)(?<!never\s)\b(?:forget|unlearn|erase|wipe)\b"
    r"|\b(?:delete|remove|drop|clear|purge|update|edit|change)\s+(?:(?:that|this|the|my|a|all|"
    r"your|those|these)\s+)?(?:(?:\w+\s+)?(?:memor(?:y|ies)|entry|entries)|notes?)\b"
    r"|\b(?:don['’]?t|do\s+not|stop)\s+(?:remember|remembering)\b"
    # "don't store this", "stop saving that to memory"; not "don't store secrets in .env"
    r"|\b(?:don['’]?t|do\s+not|stop)\s+(?:record|recording|store|storing|save|saving)\s+"
    r"(?:(?:this|that|it|these|those|anything|everything|what)\b|(?:\S+\s+){0,4}(?:in|to|into)"
    r"\s+(?:your\s+|the\s+)?memory\b)"
    r"|\bmemory_(?:store|forget|recall|update|list|stats)\b"
    r"|(?<!别)(?<!不要)(?<!不能)(?<!勿)(?:忘记|忘掉)|(?<!别)(?<!不要)忘了(?:它|这|那)"
    r"|删除(?:这条|那条|所有)?记忆|删掉(?:这条|那条)?记忆|清空记忆|(?:不要|别|不用)记(?!录)",
    re.IGNORECASE,
)
#: a request to keep something the statement does not say ("remember how the service deploys",
#: "remember this", "记住怎么部署"): the content is elsewhere, the request itself is no fact
_UNSTATED: Final = re.compile(
    r"^(?:(?:please|pls|also|and|can\s+you|could\s+you)\s+)*"
    r"(?:remember|note|keep\s+in\s+mind|don['’]?t\s+forget)\s+"
    r"(?:(?:how|what|where|when|why|which|who|whom|whose|whether|if)\b"
    r"|(?:this|that|it|these|those)\s*[.!。！]*$)"
    r"|^(?:请)?(?:记住|记一下|记下)(?:怎么|如何|怎样|哪里|哪儿|什么|为什么|这个|那个|这些|那些|它)",
    re.IGNORECASE,
)
#: what separates a request from the content it states ("remember how it deploys: via Argo")
_STATES_CONTENT: Final = re.compile(r"[:：,，;；—]")
_INJECTED: Final = re.compile(
    rf"(?:<|&lt;|\uff1c|\ufe64)\s*/?\s*(?:{'|'.join(_INJECTED_TAGS)})\b", re.IGNORECASE
)
_MARKUP: Final = re.compile(
    r"<\s*/?\s*[a-z!?][\w:.-]*(?:\s[^<>]*)?/?\s*>"
    r"|^\s*\[(?:system|inst|/inst|sys|assistant|user|tool)\]"
    r"|<\|[\w-]+\|>",
    re.IGNORECASE,
)
_QUESTION_END: Final = re.compile(r"[?？]\s*[)\]\"'”’]*$")
#: a question without its question mark ("should I prefer tabs", "我喜欢用vim吗"); not "when I
#: deploy, I …" nor "what I like is …" (statements that start with a question word)
_QUESTION_FORM: Final = re.compile(
    r"^(?:what|why|which|who|how|where|when)\s+(?:do|does|did|is|are|was|were|should|shall|can|"
    r"could|would|will|have|has|if|about)\b"
    r"|^(?:should|shall|can|could|would|will|do|does|did|is|are|am|was|were|have|has)\s+"
    r"(?:i|we|you|they|he|she|it|there|this|that|my|our|your)\b"
    r"|(?:吗|呢|么)[\s.!。！]*$|哪个|哪些",
    re.IGNORECASE,
)
_LINE_MARKER: Final = re.compile(r"^(?:[-*+•]|\d{1,3}[.)]|>+)\s+")
_SPLIT: Final = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；;])|\n+")


def split_statements(text: str) -> list[str]:
    """The sentences and lines of `text`, stripped, without empty ones; a line's list or quote
    marker ("- ", "* ", "1. ", "> ") is no part of its statement."""
    normal = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    statements: list[str] = []
    for line in normal.split("\n"):
        line = line.strip()
        while (marker := _LINE_MARKER.match(line)) is not None:
            line = line[marker.end() :]
        statements += [part.strip() for part in _SPLIT.split(line) if part and part.strip()]
    return statements


def _length_problem(text: str) -> str | None:
    if len(text) > MAX_CAPTURE_CHARS:
        return f"it is longer than {MAX_CAPTURE_CHARS} characters"
    low = MIN_CAPTURE_CHARS_CJK if has_cjk(text) else MIN_CAPTURE_CHARS
    if len(text) < low:
        return f"it is shorter than {low} characters"
    return None


def detect_category(text: str) -> MemoryKind:
    """The first trigger kind that matches (decision, preference, entity, fact), else other."""
    for kind, pattern in _TRIGGERS:
        if pattern.search(text):
            return kind
    return MemoryKind.OTHER


def capture_problem(text: str) -> str | None:
    """Why one statement is not captured, or None when it is worth capturing."""
    stripped = " ".join(text.split())
    if len(stripped) > MAX_CAPTURE_CHARS:  # first: no pattern runs over a pasted megabyte
        return f"it is longer than {MAX_CAPTURE_CHARS} characters"
    if _INJECTED.search(stripped):
        return "it contains an injected memory block"
    if _MARKUP.search(stripped) or ROLE_MARKER.match(stripped):
        return "it is markup or system text"
    if _MANAGEMENT.search(stripped):
        return "it is a memory-management request, not a fact"
    if _UNSTATED.search(stripped) and not _STATES_CONTENT.search(stripped):
        return "it asks to remember something without stating it"
    length = _length_problem(stripped)
    if length is not None:
        return length
    if _QUESTION_END.search(stripped) or _QUESTION_FORM.search(stripped):
        return "it is a question"
    noise = noise_problem(stripped)
    if noise is not None:
        return noise
    if detect_category(stripped) is MemoryKind.OTHER:
        return "it matches no preference, decision, entity or fact trigger"
    return None


def _kept_text(statement: str) -> str:
    """The statement without "remember that" in front (when what is left still stands)."""
    stripped = " ".join(statement.split())
    rest = _REMEMBER_PREFIX.sub("", stripped, count=1).strip()
    if rest == stripped or _length_problem(rest) is not None:
        return stripped
    return rest[0].upper() + rest[1:]


def capture_candidates(text: str, *, limit: int = 3) -> tuple[Candidate, ...]:
    """At most `limit` statements of `text` worth capturing, in order, with their category.

    The whole message is refused when it carries an injected memory block (the agent's own
    recall echoed back), so none of its statements is stored."""
    if limit <= 0 or _INJECTED.search(text):
        return ()
    found: list[Candidate] = []
    seen: set[str] = set()
    for statement in split_statements(text[:CAPTURE_SCAN_CHARS]):
        if capture_problem(statement) is not None:
            continue
        kept = _kept_text(statement)
        key = kept.casefold()
        if key in seen:
            continue
        seen.add(key)
        found.append(Candidate(text=kept, category=detect_category(statement)))
        if len(found) >= limit:
            break
    return tuple(found)
