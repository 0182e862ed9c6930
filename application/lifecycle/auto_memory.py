"""Auto-recall and auto-capture on the session API (issue 15 §3, ADR 0049; seed 自动捕获 &
自动回忆, Session 记忆).

`AgentSession.before_turn(user_text)` asks adaptive retrieval
(`pi_hermes_memory.domain.prompt.adaptive`) whether the message needs memory; when it does, it
searches the store on a worker thread and waits at most `autoRecallTimeoutMs`. Hits that are
failure entries or noise are dropped, and so is every hit whose shown score (the 0..1
relevance every search returns) is below `autoRecallMinScore` (0.5, stricter than search's
own floor: a memory in the prompt costs more than a line in a result list, ADR 0070). The
best `autoRecallMaxItems` of the rest become the `<relevant-memories>` block
(`pi_hermes_memory.domain.prompt.recall_block`). A search still running at the budget is
abandoned (it finishes on its thread, its result unused) and the turn gets no block; while it
runs, the next turn's recall is skipped (`busy`) rather than piling up threads.

Each recall says why it fired: the status keeps, per injected memory, its score, the query
terms found in its text and the path that found it (`keyword` when a meaningful query term
is in the text, else `dense`: only the embedder can have found it), with the threshold; a
search whose hits all scored below the threshold is `below_threshold` with the best score
seen, so a user can tell "nothing relevant" from "nothing stored". Without embeddings a
keyword hit whose text holds none of the query's meaningful terms matched on stop words
only, and is left out too (`stop_words_only`), whatever its score (`rejection`).

`AgentSession.after_turn(user_text, assistant_text, success=True)` captures, after a
successful turn, at most `autoCaptureMaxPerTurn` statements of the user's message that
`pi_hermes_memory.domain.learning.capture` finds worth keeping, with their category and importance
0.7, through `Memory.add`: the content scanner and the near-duplicate rule of the target
apply as to any write, so a secret is blocked and a re-stated fact is not stored twice. The
target is the current project's memory when the session has a project, else the global
memory layer. The assistant's text is never captured (the seed captures what the user said).

`sessionSummary` (off by default): at shutdown, one `fact` entry (importance 0.5) sums up the
last `sessionSummaryMessages` messages of the session, clipped to 500 characters.

Every outcome is counted (`AutoMemoryStatus`), shown by `AgentSession.review_status()` and
saved under `auto_memory` in `review-status.json` after each turn's capture and at shutdown.
"""

from __future__ import annotations

import threading
import unicodedata
from collections import Counter, deque
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import attrs
from pi_hermes_memory.config.settings import AutoMemoryConfig
from pi_hermes_memory.domain.learning.capture import MAX_CAPTURE_CHARS, capture_candidates
from pi_hermes_memory.domain.learning.noise import noise_problem
from pi_hermes_memory.domain.memory.model import MemoryKind, Target
from pi_hermes_memory.domain.prompt.adaptive import should_retrieve
from pi_hermes_memory.domain.prompt.blocks import inline
from pi_hermes_memory.domain.prompt.recall_block import RecalledItem, recall_block
from pi_hermes_memory.domain.search.terms import (
    STOP_WORDS,
    plan_terms,
    split_pieces,
)
from pi_hermes_memory.domain.status import SUCCESS, Status
from pi_hermes_memory.tools.pi_memory import scope_name

__all__ = [
    "CAPTURE_IMPORTANCE",
    "SUMMARY_IMPORTANCE",
    "AutoMemory",
    "AutoMemoryStatus",
    "CaptureOutcome",
    "matched_terms",
    "rejection",
]

#: the seed's importance of an auto-captured statement
CAPTURE_IMPORTANCE: Final = 0.7
#: the seed's importance of a session summary
SUMMARY_IMPORTANCE: Final = 0.5
#: search hits read per recall: failure rows and noise are dropped after the search
_SEARCH_LIMIT: Final = 20
#: outcomes kept per kind in the status
_KEPT: Final = 5
_SHOWN_CHARS: Final = 160
_SUMMARY_MESSAGE_CHARS: Final = 120


@attrs.frozen(kw_only=True)
class CaptureOutcome:
    """One statement auto-capture tried to store: `status` is the write's (added, noop for
    the same text again, near_duplicate, blocked, …), or `failed` when the store raised.
    `text` is clipped, and withheld when the content scanner blocked it."""

    text: str
    category: str
    status: str
    entry_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class AutoMemoryStatus:
    """Counts of recall and capture outcomes of one session, and the last few of each.

    recall counts: injected, empty (searched, nothing usable), below_threshold (hits, none
    scoring `autoRecallMinScore`), skipped (adaptive retrieval said no; `skip_reasons` has
    why), timed_out, busy, failed, off. capture counts: the write
    statuses (added, near_duplicate, blocked, …), failed, plus `turns` and `not_successful`."""

    session_id: str
    recall_enabled: bool
    capture_enabled: bool
    recall: dict[str, int]
    skip_reasons: dict[str, int]
    recalled_items: int
    capture: dict[str, int]
    last_recalls: tuple[dict[str, Any], ...]
    last_captures: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["last_recalls"] = list(self.last_recalls)
        data["last_captures"] = list(self.last_captures)
        return data


def _clip(text: str) -> str:
    flat = inline(text)
    return flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 1] + "…"


@attrs.frozen(kw_only=True)
class _Found:
    """What one recall search found: the items to inject with why each was kept, and the
    best score of the usable hits the threshold turned away."""

    items: tuple[RecalledItem, ...] = ()
    why: tuple[dict[str, Any], ...] = ()
    #: usable hits (not failures, not noise, still active) below the threshold
    below: int = 0
    best_below: float | None = None
    #: keyword hits that matched stop words only (see `rejection`)
    stop_words_only: int = 0


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _same_word(a: str, b: str) -> bool:
    """Whether two words look like forms of one (`deploys`/`deployment`, `reply`/`replies`):
    equal, or sharing a prefix of at least 3 letters that leaves at most 3 letters of the
    shorter word. Lenient on purpose: it only ever keeps a hit (see `matched_terms`)."""
    if a == b:
        return True
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared >= 3 and shared >= min(len(a), len(b)) - 3


def matched_terms(query: str, text: str) -> tuple[str, ...]:
    """The meaningful terms of `query` (no stop words) found in `text`: a word as a form of a
    word of the text (`_same_word`), a CJK bigram as a substring. What "why it fired" shows,
    and, without embeddings, whether a keyword hit matched anything but stop words."""
    terms = plan_terms(query)
    folded = _folded(text)
    words = {run for kind, run in split_pieces(folded) if kind == "word"}
    found: list[str] = []
    for word in dict.fromkeys((*terms.words, *terms.alt_words)):
        if word not in STOP_WORDS and any(_same_word(word, w) for w in words):
            found.append(word)
    for gram in dict.fromkeys((*terms.grams, *terms.alt_grams)):
        if gram in folded:
            found.append(gram)
    return tuple(found)


def rejection(query: str, score: float, text: str, threshold: float, *, dense: bool) -> str | None:
    """Why auto-recall leaves a hit out, or None to keep it: `below_threshold` when its shown
    score is under `threshold` (NaN included); `stop_words_only` when no embedder could have
    found it (`dense` False) and its text holds none of the query's meaningful terms, so only
    stop words matched (a guard that holds whatever scale the index scores on)."""
    if not score >= threshold:
        return "below_threshold"
    if not dense and not matched_terms(query, text):
        return "stop_words_only"
    return None


class _Search:
    """The one recall search of a session in flight (a daemon thread and its result)."""

    def __init__(self, run: Callable[[], _Found]) -> None:
        self.done = threading.Event()
        self.found = _Found()
        self.error: BaseException | None = None
        self._run = run
        self.thread = threading.Thread(
            target=self._main, name="pi-hermes-memory-recall", daemon=True
        )

    def _main(self) -> None:
        try:
            self.found = self._run()
        except BaseException as exc:  # reported to the waiting turn, never raised there
            self.error = exc
        finally:
            self.done.set()


class AutoMemory:
    """Auto-recall and auto-capture of one `AgentSession` (see the module)."""

    def __init__(
        self,
        memory: Any,
        settings: AutoMemoryConfig,
        *,
        session_id: str,
        now: Callable[[], datetime],
        logger: Any,
    ) -> None:
        self._memory = memory
        self.settings = settings
        self._session_id = session_id
        self._now = now
        self._log = logger
        self._lock = threading.Lock()
        self._recall: Counter[str] = Counter()
        self._skips: Counter[str] = Counter()
        self._capture: Counter[str] = Counter()
        self._items = 0
        self._last_recalls: deque[dict[str, Any]] = deque(maxlen=_KEPT)
        self._last_captures: deque[dict[str, Any]] = deque(maxlen=_KEPT)
        self._inflight: _Search | None = None

    # -- recall ---------------------------------------------------------------------------

    def before_turn(self, user_text: str) -> str | None:
        s = self.settings
        if not s.recall:
            self._note_recall("off", "autoRecall is off")
            return None
        decision = should_retrieve(
            user_text, min_length=s.min_length, min_length_cjk=s.min_length_cjk
        )
        if not decision.retrieve:
            with self._lock:
                self._skips[decision.reason.value] += 1
            self._note_recall("skipped", decision.reason.value)
            return None
        with self._lock:
            running = self._inflight is not None and not self._inflight.done.is_set()
            if not running:
                search = self._inflight = _Search(lambda: self._search(user_text))
        if running:
            self._note_recall("busy", "the previous recall search is still running")
            return None
        search.thread.start()
        if not search.done.wait(s.recall_timeout_ms / 1000):
            self._note_recall("timed_out", f"no answer within {s.recall_timeout_ms} ms")
            return None
        if search.error is not None:
            self._log.warning("auto_recall.failed", exc_info=search.error)
            self._note_recall("failed", type(search.error).__name__)
            return None
        found = search.found
        if not found.items:
            if found.below or found.stop_words_only:
                self._note_recall(
                    "below_threshold",
                    decision.reason.value,
                    threshold=s.recall_min_score,
                    best_score=found.best_below,
                    below=found.below,
                    stop_words_only=found.stop_words_only,
                )
            else:
                self._note_recall("empty", decision.reason.value)
            return None
        block = recall_block(found.items)
        self._note_recall(
            "injected",
            decision.reason.value,
            items=[f"[{i.category}:{i.scope}] {_clip(i.text)}" for i in found.items],
            hits=list(found.why),
            threshold=s.recall_min_score,
            below=found.below,
            stop_words_only=found.stop_words_only,
        )
        return block

    def _search(self, query: str) -> _Found:
        s = self.settings
        result = self._memory.search(query, limit=_SEARCH_LIMIT)
        dense = getattr(self._memory, "embeddings", None) is not None
        items: list[RecalledItem] = []
        why: list[dict[str, Any]] = []
        below = stop_words_only = 0
        best_below: float | None = None
        for hit in result.hits:
            if hit.target is Target.FAILURE or noise_problem(hit.text) is not None:
                continue
            view = self._memory.active_entry(hit.id, hit.target)
            if view is None:
                continue
            score = float(hit.score)
            why_not = rejection(query, score, view.text, s.recall_min_score, dense=dense)
            if why_not == "stop_words_only":
                stop_words_only += 1
                continue
            if why_not is not None:
                below += 1
                if best_below is None or score > best_below:
                    best_below = score
                continue
            if len(items) >= s.recall_max_items:
                continue
            category = view.kind or MemoryKind.OTHER.value
            items.append(RecalledItem(category=category, scope=scope_name(view), text=view.text))
            terms = matched_terms(query, view.text)
            why.append(
                {
                    "id": view.id,  # the memory's stable id (ADR 0074)
                    "score": round(score, 4),
                    "path": "keyword" if terms or not dense else "dense",
                    "terms": list(terms),
                }
            )
        return _Found(
            items=tuple(items),
            why=tuple(why),
            below=below,
            best_below=None if best_below is None else round(best_below, 4),
            stop_words_only=stop_words_only,
        )

    def _note_recall(
        self, outcome: str, reason: str, items: list[str] | None = None, **why: Any
    ) -> None:
        with self._lock:
            self._recall[outcome] += 1
            self._items += len(items or ())
            self._last_recalls.append(
                {
                    "at": self._now().isoformat(timespec="seconds"),
                    "outcome": outcome,
                    "reason": reason,
                    "items": list(items or ()),
                    **why,
                }
            )

    # -- capture --------------------------------------------------------------------------

    def after_turn(self, user_text: str, *, success: bool) -> tuple[CaptureOutcome, ...]:
        s = self.settings
        with self._lock:
            self._capture["turns"] += 1
        if not s.capture:
            return ()
        if not success:
            with self._lock:
                self._capture["not_successful"] += 1
            return ()
        outcomes = tuple(
            self._store(c.text, c.category, CAPTURE_IMPORTANCE)
            for c in capture_candidates(user_text, limit=s.capture_max_per_turn)
        )
        return outcomes

    def _target(self) -> Target:
        return Target.PROJECT if getattr(self._memory, "project", None) else Target.MEMORY

    def _store(self, text: str, category: MemoryKind, importance: float) -> CaptureOutcome:
        try:
            result = self._memory.add(
                text, target=self._target(), importance=importance, kind=category
            )
            status = result.status.value
            entry_id = result.entry_id if result.status in SUCCESS else None
        except Exception as exc:  # a read-only or failing store: counted, never raised
            self._log.warning("auto_capture.failed", exc_info=True)
            status, entry_id = Status.FAILED.value, None
            text = f"{text} ({type(exc).__name__})"
        if status == Status.BLOCKED.value:
            # the scanner refused it (a secret, an injection): the status file never keeps it
            text = "(withheld: refused by the content scanner)"
        outcome = CaptureOutcome(
            text=_clip(text), category=category.value, status=status, entry_id=entry_id
        )
        with self._lock:
            self._capture[status] += 1
            self._last_captures.append(
                {"at": self._now().isoformat(timespec="seconds"), **outcome.to_json()}
            )
        return outcome

    # -- session summary -------------------------------------------------------------------

    def summarize(self, messages: tuple[tuple[str, str], ...]) -> CaptureOutcome | None:
        """The session summary (when `sessionSummary` is on and there are messages)."""
        s = self.settings
        if not s.session_summary:
            return None
        kept = [(role, inline(text)) for role, text in messages[-s.session_summary_messages :]]
        kept = [(role, text) for role, text in kept if text]
        if not kept:
            return None
        head = f"Session {self._session_id} on {self._now().date().isoformat()}:"
        parts = [head]
        for role, text in kept:
            clipped = text if len(text) <= _SUMMARY_MESSAGE_CHARS else text[:119] + "…"
            parts.append(f"{role}: {clipped};")
        summary = " ".join(parts)
        if len(summary) > MAX_CAPTURE_CHARS:
            summary = summary[: MAX_CAPTURE_CHARS - 1] + "…"
        return self._store(summary, MemoryKind.FACT, SUMMARY_IMPORTANCE)

    # -- status ---------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether this session recalled or captured anything (or tried to)."""
        with self._lock:
            return bool(self._recall or self._capture)

    def status(self) -> AutoMemoryStatus:
        with self._lock:
            return AutoMemoryStatus(
                session_id=self._session_id,
                recall_enabled=self.settings.recall,
                capture_enabled=self.settings.capture,
                recall=dict(sorted(self._recall.items())),
                skip_reasons=dict(sorted(self._skips.items())),
                recalled_items=self._items,
                capture=dict(sorted(self._capture.items())),
                last_recalls=tuple(self._last_recalls),
                last_captures=tuple(self._last_captures),
            )
