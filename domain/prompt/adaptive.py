"""Adaptive retrieval: does a user message need memory at all? (seed 自适应检索, ADR 0049)

`should_retrieve` looks at one user message and decides, before any search runs, whether
auto-recall should search. The rules, in order (the first that applies decides):

1. empty text: skip (`empty`);
2. the whole text is a confirmation ("ok", "yes please", "好的", "收到"), a greeting or
   heartbeat ("hello there", "你好", "HEARTBEAT") or a continuation ("go on", "继续",
   "and?"): skip (`confirmation`, `greeting`, `continuation`);
3. a slash command (`/new`, `/help me`) or a shell-like command (`$ ls -la`, `git status`,
   `npm install --save-dev x`, `./deploy.sh --prod`): skip (`command`); a path
   (`/usr/bin/python crashes …`, `./deploy.sh fails on …`) is not a command, and a command word
   starting a sentence (`git push fails with …`) is not;
4. a system line (`[system] …`, `<system-reminder>…`, `NO_REPLY`; a leading HTML element such
   as `<div> is not centered` is no system line): skip (`system`);
5. a reference to memory or the past (remember, recall, last time, previously, before,
   earlier, we decided, 之前, 上次, 还记得, 以前, …): retrieve (`memory_reference`), however
   short the message;
6. pure emoji: skip (`emoji`);
7. a question (a question mark, a question word at the start, 吗/呢/什么/怎么/啥/咋 …): retrieve
   (`question`);
8. shorter than `min_length` characters (`min_length_cjk` when it contains CJK): skip
   (`too_short`);
9. anything else: retrieve (`default`).

Length counts characters of the message with whitespace runs collapsed. Only the first
`DECISION_CHARS` (4,096) characters are read, so a pasted megabyte costs no more than a page.
Pure: no I/O.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from typing import Final

import attrs
from pi_hermes_memory.domain.learning.noise import flatten, is_greeting
from pi_hermes_memory.domain.prompt.blocks import has_cjk

__all__ = [
    "DECISION_CHARS",
    "DEFAULT_MIN_LENGTH",
    "DEFAULT_MIN_LENGTH_CJK",
    "Decision",
    "RetrievalReason",
    "asks_question",
    "should_retrieve",
]

DEFAULT_MIN_LENGTH: Final = 15
DEFAULT_MIN_LENGTH_CJK: Final = 6
#: characters of a message the decision reads
DECISION_CHARS: Final = 4096


class RetrievalReason(enum.StrEnum):
    EMPTY = "empty"
    COMMAND = "command"
    SYSTEM = "system"
    MEMORY_REFERENCE = "memory_reference"
    GREETING = "greeting"
    CONFIRMATION = "confirmation"
    CONTINUATION = "continuation"
    EMOJI = "emoji"
    QUESTION = "question"
    TOO_SHORT = "too_short"
    DEFAULT = "default"


@attrs.frozen(kw_only=True)
class Decision:
    retrieve: bool
    reason: RetrievalReason


_SLASH: Final = re.compile(r"^/[a-z][\w-]*(?:\s|$)", re.IGNORECASE)
_SHELL_WORDS: Final = (
    "git|npm|npx|pnpm|yarn|pip|pip3|uv|make|ls|cd|cat|rm|mv|cp|mkdir|docker|kubectl|python|"
    "python3|node|cargo|go|curl|wget|grep|rg|sed|awk|echo|sudo|apt|apt-get|brew|chmod|chown|"
    "ssh|tail|head|touch|pytest|ruff|mypy|terraform|helm|systemctl|export|source"
)
_PROMPTED: Final = re.compile(rf"^[$#>]\s*(?:{_SHELL_WORDS})\b", re.IGNORECASE)
_SHELL_START: Final = re.compile(rf"^(?:{_SHELL_WORDS})(?:\s|$)")
#: tools whose name with a few bare words is a command line (`git push origin main`); other
#: command words (make, go, cat, head, source …) also start English sentences, so they count
#: only with a flag, a path or a shell operator
_TOOLS: Final = frozenset({
    "git", "npm", "npx", "pnpm", "yarn", "pip", "pip3", "uv", "docker", "kubectl", "cargo",
    "pytest", "ruff", "mypy", "terraform", "helm", "systemctl", "ls", "cd", "rm", "mkdir",
    "brew", "apt", "apt-get", "sudo",
})  # fmt: skip
_RELATIVE_EXEC: Final = re.compile(r"^(?:\.{1,2}|~)/[\w.@+-]")
_SHELL_OPERATOR: Final = re.compile(r"\s(?:\||&&|\|\||>>?|<|;)\s|[|;]\s*\w")
#: HTML elements: "<div> is not centered" is a question about markup, not a harness's tag
_HTML_ELEMENTS: Final = (
    "a|abbr|article|aside|audio|b|body|br|button|canvas|code|dialog|div|em|footer|form|h[1-6]|"
    "head|header|hr|html|i|iframe|img|input|label|li|link|main|meta|nav|ol|option|p|pre|script|"
    "section|select|slot|span|strong|style|svg|table|tbody|td|template|textarea|th|thead|tr|ul|"
    "video"
)
_SYSTEM: Final = re.compile(
    r"^(?:\[?(?:heartbeat(?:_ok)?|no_reply|ping|pong)\]?$"
    r"|\[(?:system|heartbeat|cron|status|debug|info|warn(?:ing)?|error)\]"
    rf"|<\s*/?\s*(?!(?:{_HTML_ELEMENTS})\b(?!-))[a-z][\w-]*(?:\s[^>]*)?>)",
    re.IGNORECASE,
)
_MEMORY_REFERENCE: Final = re.compile(
    r"\b(?:remember|recall|remind\s+me|last\s+(?:time|week|month|session|year)|previously|"
    r"before|earlier|yesterday|as\s+usual|(?:we|you|i)\s+(?:discussed|talked|"
    r"decided|agreed|said|told|mentioned|chose)|my\s+(?:preference|usual|default))\b"
    r"|记得|记住|之前|上次|以前|还记得|刚才|昨天|上周|上个月|曾经|回忆|我说过|你说过|我们讨论|"
    r"我们决定|之前说|老样子|照旧",
    re.IGNORECASE,
)
_CONFIRMATION: Final = re.compile(
    r"^(?:(?:ok|okay|k|kk|yes|yep|yeah|yup|y|no|nope|nah|sure|fine|right|correct|exactly|"
    r"thanks|thank\s+you|thx|ty|please|got\s+it|sounds\s+good|looks\s+good|lgtm|great|"
    r"perfect|cool|nice|awesome|done|agreed|understood|noted|alright|all\s+right)"
    r"[\s,!.]*)+$"
    r"|^(?:(?:好|好的|好吧|行|可以|嗯|嗯嗯|对|对的|是|是的|没错|收到|明白|明白了|知道了|了解|"
    r"没问题|谢谢|多谢|好的谢谢|ok|可)[\s，,！!。]*)+$",
    re.IGNORECASE,
)
_CONTINUATION: Final = re.compile(
    r"^(?:go\s+on|continue|keep\s+going|carry\s+on|go\s+ahead|proceed|next|more|and|"
    r"and\s+then|then|do\s+it|try\s+again|retry|again|huh|really|what|why)(?:\s+please)?$"
    r"|^(?:继续|继续吧|接着|接着说|然后呢|然后|下一步|往下|再来|再试一次|重试|还有呢|说下去)$",
    re.IGNORECASE,
)
_QUESTION_WORDS: Final = re.compile(
    r"^(?:what|how|why|when|where|which|who|whom|whose|can|could|should|would|will|is|are|"
    r"was|were|do|does|did|have|has|shall|may|might)\b"
    r"|吗|呢|什么|怎么|怎样|为什么|为何|哪|几|如何|是否|多少|谁|啥|咋|多久",
    re.IGNORECASE,
)
_EMOJI_EXTRA: Final = frozenset("\u200d\ufe0e\ufe0f\u20e3")


def _is_emoji_only(text: str) -> bool:
    seen = False
    for ch in text:
        category = unicodedata.category(ch)
        if category in ("So", "Sk") or (0x1F3FB <= ord(ch) <= 0x1F3FF):
            seen = True
        elif not (ch.isspace() or ch in _EMOJI_EXTRA or category.startswith("P")):
            return False
    return seen


def _is_command(text: str) -> bool:
    if _SLASH.match(text) or _PROMPTED.match(text):
        return True
    if _RELATIVE_EXEC.match(text) and "?" not in text and not has_cjk(text):
        # `./deploy.sh --prod`, `~/bin/sync`; not `./deploy.sh fails on the staging host`
        args = text.split()[1:]
        return not args or (
            len(args) <= 8 and all(a.startswith("-") or "/" in a or "=" in a for a in args)
        )
    if not _SHELL_START.match(text) or "?" in text or has_cjk(text):
        return False
    if _SHELL_OPERATOR.search(text):
        return True
    args = text.split()[1:]
    if any(a.startswith("-") or "/" in a or "=" in a for a in args):
        return len(args) <= 8  # `ls -la is what I use to …` is a sentence
    # `git push origin main`: a tool's name and a few bare arguments, no sentence
    return text.split()[0] in _TOOLS and len(args) <= 3 and not text.endswith(".")


def asks_question(text: str) -> bool:
    """A question mark, or a question word at the start (English) or anywhere (Chinese)."""
    return "?" in text or "？" in text or _QUESTION_WORDS.search(text) is not None


def should_retrieve(
    text: str,
    *,
    min_length: int = DEFAULT_MIN_LENGTH,
    min_length_cjk: int = DEFAULT_MIN_LENGTH_CJK,
) -> Decision:
    """Whether auto-recall should search for this user message (see the module)."""
    # the decision reads the start of a long message (a pasted log need not be read whole:
    # the time it takes delays the turn, and so long a message is retrieved for anyway)
    flat = " ".join(unicodedata.normalize("NFKC", text[:DECISION_CHARS]).split())
    if not flat:
        return Decision(retrieve=False, reason=RetrievalReason.EMPTY)
    bare = flatten(flat)
    # whole-text matches first: "go on" is a continuation, not the `go` command
    if _CONFIRMATION.match(bare):
        return Decision(retrieve=False, reason=RetrievalReason.CONFIRMATION)
    if is_greeting(flat):
        return Decision(retrieve=False, reason=RetrievalReason.GREETING)
    if _CONTINUATION.match(bare):
        return Decision(retrieve=False, reason=RetrievalReason.CONTINUATION)
    if _is_command(flat):
        return Decision(retrieve=False, reason=RetrievalReason.COMMAND)
    if _SYSTEM.match(flat):
        return Decision(retrieve=False, reason=RetrievalReason.SYSTEM)
    if _MEMORY_REFERENCE.search(flat):
        return Decision(retrieve=True, reason=RetrievalReason.MEMORY_REFERENCE)
    if _is_emoji_only(flat):
        return Decision(retrieve=False, reason=RetrievalReason.EMOJI)
    if asks_question(flat):
        return Decision(retrieve=True, reason=RetrievalReason.QUESTION)
    floor = min_length_cjk if has_cjk(flat) else min_length
    if len(flat) < floor:
        return Decision(retrieve=False, reason=RetrievalReason.TOO_SHORT)
    return Decision(retrieve=True, reason=RetrievalReason.DEFAULT)
