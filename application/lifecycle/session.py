"""The agent lifecycle API for frameworks (issue 12 §3; seed 后台学习, 修正捕获).

A framework opens `Memory.session()` and feeds it the conversation as it runs: user and
assistant messages, tool calls, compaction, shutdown. The session keeps the seed's counters
and fires, on a background worker:

- a **review** every `nudgeInterval` user turns or `nudgeToolCalls` tool calls
  (`reviewEnabled`); it may also create or improve project skills (`reviewSkillsEnabled`);
- a **skill review** (skills only) every `skillReviewToolCalls` tool calls (0: off; needs
  both `reviewEnabled` and `reviewSkillsEnabled`);
- a **flush** before compaction (`flushOnCompact`) and at shutdown (`flushOnShutdown`), only
  after `flushMinTurns` user turns since the last flush;
- **correction capture**: a user message that corrects the agent (the `correction*` rules)
  stores a `failure` entry of category `correction` at once, then asks the LLM for further
  operations in the background; at most one capture per 3 user turns;
- **auto-recall** (`before_turn`) and **auto-capture** (`after_turn`), with adaptive
  retrieval and the noise filter, and the optional session summary at shutdown
  (`pi_hermes_memory.lifecycle.auto_memory`, ADR 0049).

Each job shows the LLM the last `reviewRecentMessages` / `flushRecentMessages` messages
(0: all kept) and a brief of the current memory, parses the reply (docs/llm-protocol.md) and
applies its operations one by one through the normal tool path (partial commit), as a CHILD
session for skills (project skills only; never use, delete, visibility, or a global skill).

Nothing here raises to the caller: a lifecycle call logs and carries on, and an LLM that is
off, slow, failing or talking nonsense ends as a review result with a reason. Background work
never blocks the caller's turn: one worker thread per store runs one job at a time, holds at
most `MAX_PENDING` more, and drops (coalesces) a trigger of a kind already waiting.
`shutdown(timeout=...)` waits a bounded time.

The job itself is `pi_hermes_memory.learning.review.run_review`. The last review summary of a store
is
kept in `<memoryDir>/review-status.json` (written atomically) so that the CLI's
`review-status`, which has no live session, can show it.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import attrs
from pi_hermes_memory.config.settings import AutoMemoryConfig
from pi_hermes_memory.domain.learning.corrections import (
    CAPTURE_EVERY_TURNS,
    CorrectionRules,
    detect,
)
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.status import SUCCESS, Status
from pi_hermes_memory.learning.review import (
    CONSOLIDATION_KEY,
    MAX_PENDING,
    MAX_REVIEW_ADDS,
    STATUS_FILE,
    ReviewKind,
    ReviewRequest,
    ReviewSummary,
    ReviewWorker,
    note,
    read_last_summary,
    read_status_file,
    recent,
    run_review,
    status_path,
    write_auto_status,
    write_summary,
)
from pi_hermes_memory.lifecycle.auto_memory import AutoMemory, AutoMemoryStatus, CaptureOutcome
from pi_hermes_memory.lifecycle.corrections import rules_from_config
from pi_hermes_memory.lifecycle.session_summary import (
    keep_pending,
    store_summary,
    summarize_pending,
)
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.results import ToolOutcome

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_S",
    "MAX_PENDING",
    "STATUS_FILE",
    "AgentSession",
    "AutoMemoryStatus",
    "CaptureOutcome",
    "LifecycleSettings",
    "ReviewKind",
    "ReviewStatus",
    "ReviewSummary",
    "ReviewWorker",
    "read_last_summary",
]

DEFAULT_SHUTDOWN_TIMEOUT_S: Final = 10.0
#: messages a session keeps (older ones fall off; "all" means all of these)
MAX_KEPT_MESSAGES: Final = 1_000


@attrs.frozen(kw_only=True)
class LifecycleSettings:
    """The configuration fields the lifecycle reads (defaults: the seed's)."""

    nudge_interval: int = 10
    nudge_tool_calls: int = 15
    skill_review_tool_calls: int = 10
    review_recent_messages: int = 0
    review_enabled: bool = True
    review_skills_enabled: bool = True
    #: model-proposed adds one job applies (reviewMaxAdds, ADR 0062)
    review_max_adds: int = MAX_REVIEW_ADDS
    flush_on_compact: bool = True
    flush_on_shutdown: bool = True
    flush_min_turns: int = 6
    flush_recent_messages: int = 0
    #: seconds one LLM call may take (llm.timeoutMs)
    timeout_s: float = 60.0
    #: None: correction detection is off
    corrections: CorrectionRules | None = attrs.field(factory=CorrectionRules.build)
    #: auto-recall, auto-capture and the session summary (ADR 0049)
    auto: AutoMemoryConfig = attrs.field(factory=AutoMemoryConfig)

    @classmethod
    def from_config(cls, config: Any) -> LifecycleSettings:
        if config is None:
            return cls()
        default = cls()
        llm = getattr(config, "llm", None)
        timeout_ms = getattr(llm, "timeout_ms", None)
        return cls(
            nudge_interval=getattr(config, "nudge_interval", default.nudge_interval),
            nudge_tool_calls=getattr(config, "nudge_tool_calls", default.nudge_tool_calls),
            skill_review_tool_calls=getattr(
                config, "skill_review_tool_calls", default.skill_review_tool_calls
            ),
            review_recent_messages=getattr(config, "review_recent_messages", 0),
            review_enabled=getattr(config, "review_enabled", True),
            review_skills_enabled=getattr(config, "review_skills_enabled", True),
            review_max_adds=getattr(config, "review_max_adds", MAX_REVIEW_ADDS),
            flush_on_compact=getattr(config, "flush_on_compact", True),
            flush_on_shutdown=getattr(config, "flush_on_shutdown", True),
            flush_min_turns=getattr(config, "flush_min_turns", default.flush_min_turns),
            flush_recent_messages=getattr(config, "flush_recent_messages", 0),
            timeout_s=timeout_ms / 1000 if isinstance(timeout_ms, int) and timeout_ms > 0 else 60.0,
            corrections=rules_from_config(config),
            auto=getattr(config, "auto_memory", None) or AutoMemoryConfig(),
        )


@attrs.frozen(kw_only=True)
class ReviewStatus:
    """Counters of one session and the last job of its store."""

    session_id: str
    user_turns: int
    turns_since_review: int
    tool_calls_since_review: int
    tool_calls_since_skill_review: int
    turns_since_flush: int
    reviews_started: int
    #: triggers dropped because a job of the same kind was waiting or the queue was full
    coalesced: int
    pending: int
    running: bool
    #: the LLM's status line when it is off, else ""
    llm_off: str
    last: ReviewSummary | None
    #: auto-recall and auto-capture of this session (ADR 0049)
    auto: AutoMemoryStatus | None = None
    #: the last consolidation of the store: target, result, reason, characters (ADR 0062)
    consolidation: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in attrs.fields(ReviewStatus)}
        data["last"] = None if self.last is None else self.last.to_json()
        data["auto"] = None if self.auto is None else self.auto.to_json()
        data["consolidation"] = None if self.consolidation is None else dict(self.consolidation)
        return data


_WORKERS: weakref.WeakKeyDictionary[Any, ReviewWorker] = weakref.WeakKeyDictionary()
_WORKERS_LOCK = threading.Lock()


def drain(memory: Any, timeout: float = DEFAULT_SHUTDOWN_TIMEOUT_S) -> bool:
    """Wait up to `timeout` seconds for the background work queued for `memory` (called by
    `Memory.close`, so no job writes to a closed store); True when none is left."""
    with _WORKERS_LOCK:
        worker = _WORKERS.get(memory)
    return True if worker is None else worker.wait_idle(timeout)


def _worker_for(memory: Any) -> ReviewWorker:
    with _WORKERS_LOCK:
        worker = _WORKERS.get(memory)
        if worker is None:
            worker = _WORKERS[memory] = ReviewWorker()
        return worker


# --- the session ---------------------------------------------------------------------------------


class AgentSession:
    """One conversation of an agent. Every method returns quickly and never raises."""

    def __init__(
        self,
        memory: Any,
        *,
        session_id: str | None = None,
        settings: LifecycleSettings | None = None,
        worker: ReviewWorker | None = None,
        clock: Callable[[], datetime] | None = None,
        logger: Any = None,
    ) -> None:
        self._memory = memory
        self.session_id = session_id or uuid.uuid4().hex[:12]
        self.settings = settings or LifecycleSettings.from_config(getattr(memory, "config", None))
        self._worker = worker or _worker_for(memory)
        self._now = clock or (lambda: datetime.now(UTC))
        self._log = logger or library_logger()
        self._lock = threading.Lock()
        self._messages: deque[tuple[str, str]] = deque(maxlen=MAX_KEPT_MESSAGES)
        self._user_turns = 0
        self._turns_since_review = 0
        self._tools_since_review = 0
        self._tools_since_skill_review = 0
        self._turns_since_flush = 0
        self._last_capture_turn: int | None = None
        self._started = 0
        self._coalesced = 0
        self._last: ReviewSummary | None = None
        self._closed = False
        self._auto = AutoMemory(
            memory,
            self.settings.auto,
            session_id=self.session_id,
            now=self._now,
            logger=self._log,
        )
        if self.settings.auto.session_summary:
            # the seed's `/new`: the previous session of this project is summarised now
            self._worker.submit(f"session-summary:{self.session_id}", self._summarize_previous)

    def new_session(self, session_id: str | None = None) -> AgentSession:
        """The host's `/new`: this session ends (`shutdown`, without waiting for the
        background work) and the next one starts, which summarises this one when
        `sessionSummary` is on."""
        self.shutdown(timeout=0)
        return AgentSession(
            self._memory,
            session_id=session_id,
            settings=self.settings,
            worker=self._worker,
            clock=self._now,
            logger=self._log,
        )

    # -- the conversation ---------------------------------------------------------------

    def user_message(self, text: str) -> None:
        try:
            self._user_message(text)
        except Exception:
            self._log.error("lifecycle.user_message_failed", exc_info=True)

    def assistant_message(self, text: str) -> None:
        try:
            with self._lock:
                self._messages.append(("assistant", _text(text)))
        except Exception:
            self._log.error("lifecycle.assistant_message_failed", exc_info=True)

    def tool_call(self, name: str) -> None:
        """A tool call the agent made (its name; the lifecycle only counts them)."""
        try:
            with self._lock:
                self._tools_since_review += 1
                self._tools_since_skill_review += 1
            self._maybe_review()
        except Exception:
            self._log.error("lifecycle.tool_call_failed", exc_info=True)

    def before_turn(self, user_text: str) -> str | None:
        """Auto-recall before the agent starts a turn: the `<relevant-memories>` block to
        put in front of the turn, or None (off, adaptive retrieval said no, nothing found,
        or the search took longer than `autoRecallTimeoutMs`: the turn never waits longer).
        Never raises."""
        try:
            return self._auto.before_turn(_text(user_text))
        except Exception:
            self._log.error("lifecycle.before_turn_failed", exc_info=True)
            return None

    def after_turn(
        self, user_text: str, assistant_text: str = "", *, success: bool = True
    ) -> tuple[CaptureOutcome, ...]:
        """Auto-capture after a turn: up to `autoCaptureMaxPerTurn` statements of the user's
        message stored (nothing when `success` is False); what each write did. The session's
        auto-memory status is then saved in review-status.json. Never raises. The turn's
        messages are not counted here: `user_message`/`assistant_message` do that."""
        try:
            outcomes = self._auto.after_turn(_text(user_text), success=success)
            self._save_auto_status()
            return outcomes
        except Exception:
            self._log.error("lifecycle.after_turn_failed", exc_info=True)
            return ()

    def before_compact(self) -> bool:
        """The host is about to compact the context: flush (when on and enough turns);
        True when a flush was queued."""
        try:
            return self.settings.flush_on_compact and self._flush()
        except Exception:
            self._log.error("lifecycle.before_compact_failed", exc_info=True)
            return False

    def shutdown(self, timeout: float = DEFAULT_SHUTDOWN_TIMEOUT_S) -> bool:
        """The session ends: flush (when on and enough turns), then wait up to `timeout`
        seconds for the store's background work. True when it all finished in time."""
        try:
            if self._closed:
                return self._worker.wait_idle(timeout)
            self._closed = True
            if self.settings.auto.session_summary:
                self._keep_for_summary()
            if self._auto.active:
                self._save_auto_status()
            if self.settings.flush_on_shutdown:
                self._flush()
            return self._worker.wait_idle(timeout)
        except Exception:
            self._log.error("lifecycle.shutdown_failed", exc_info=True)
            return False

    def _keep_for_summary(self) -> None:
        """Keep the last `sessionSummaryMessages` messages for the next session start."""
        try:
            keep_pending(
                self._memory,
                session_id=self.session_id,
                project=getattr(self._memory, "project", None),
                at=self._now(),
                messages=self._snapshot(self.settings.auto.session_summary_messages),
            )
        except OSError:
            self._log.warning("session_summary.not_kept", exc_info=True)

    def _summarize_previous(self) -> None:
        try:
            summarize_pending(
                self._memory,
                project=getattr(self._memory, "project", None),
                exclude=self.session_id,
                timeout_s=self.settings.timeout_s,
                now=self._now,
                store=lambda text: store_summary(self._memory, text),
                log=self._log,
            )
        except Exception:
            self._log.error("session_summary.failed", exc_info=True)

    def learn_skill(self, *, name: str | None = None, recent_messages: int = 0) -> ToolOutcome:
        """`/memory-learn-skill` on this session's recent context: the last `recent_messages`
        messages (0: every one kept) become the source material of one project skill
        (`Memory.learn_skill`; runs on the caller's thread: the person asked for it)."""
        messages = self._snapshot(recent_messages)
        source = "\n\n".join(f"{role}: {text}" for role, text in messages)
        if not source.strip():
            return ToolOutcome(
                {
                    "success": False,
                    "status": Status.NOOP,
                    "message": "No skill learned: this session has no messages yet.",
                }
            )
        outcome: ToolOutcome = self._memory.learn_skill(source, name=name)
        return outcome

    def system_prompt(self) -> str:
        """The memory block of this session's system prompt (`Memory.system_prompt`). Like
        every session method it never raises: a store that fails while the block is built is
        logged and gives "" (the agent then runs without memory, as with no store at all)."""
        try:
            return str(self._memory.system_prompt())
        except Exception:
            self._log.error("session.system_prompt_failed", exc_info=True)
            return ""

    def review_status(self) -> ReviewStatus:
        with self._lock:
            last = self._last
            counters = (
                self._user_turns,
                self._turns_since_review,
                self._tools_since_review,
                self._tools_since_skill_review,
                self._turns_since_flush,
                self._started,
                self._coalesced,
            )
        path = status_path(self._memory)
        if last is None:
            last = read_last_summary(path.parent) if path is not None else None
        consolidation = (
            read_status_file(path.parent).get(CONSOLIDATION_KEY) if path is not None else None
        )
        off = getattr(self._memory, "llm_off", None)
        return ReviewStatus(
            session_id=self.session_id,
            user_turns=counters[0],
            turns_since_review=counters[1],
            tool_calls_since_review=counters[2],
            tool_calls_since_skill_review=counters[3],
            turns_since_flush=counters[4],
            reviews_started=counters[5],
            coalesced=counters[6],
            pending=self._worker.pending,
            running=self._worker.running,
            llm_off=getattr(off, "message", "") if off is not None else "",
            last=last,
            auto=self._auto.status(),
            consolidation=consolidation if isinstance(consolidation, dict) else None,
        )

    # -- triggers -----------------------------------------------------------------------

    def _user_message(self, text: str) -> None:
        text = _text(text)
        with self._lock:
            self._messages.append(("user", text))
            self._user_turns += 1
            self._turns_since_review += 1
            self._turns_since_flush += 1
            turn = self._user_turns
            rules = self.settings.corrections
            may_capture = rules is not None and (
                self._last_capture_turn is None
                or turn - self._last_capture_turn >= CAPTURE_EVERY_TURNS
            )
        if may_capture and rules is not None:
            correction = detect(rules, text)
            if correction is not None:
                with self._lock:
                    self._last_capture_turn = turn
                self._capture(correction.sentence)
        self._maybe_review()

    def _maybe_review(self) -> None:
        s = self.settings
        if not s.review_enabled:
            return
        kind: ReviewKind | None = None
        with self._lock:
            if (s.nudge_interval > 0 and self._turns_since_review >= s.nudge_interval) or (
                s.nudge_tool_calls > 0 and self._tools_since_review >= s.nudge_tool_calls
            ):
                kind = ReviewKind.REVIEW
                self._turns_since_review = 0
                self._tools_since_review = 0
                if s.review_skills_enabled:
                    self._tools_since_skill_review = 0
            elif (
                s.review_skills_enabled
                and s.skill_review_tool_calls > 0
                and self._tools_since_skill_review >= s.skill_review_tool_calls
            ):
                kind = ReviewKind.SKILL_REVIEW
                self._tools_since_skill_review = 0
        if kind is not None:
            chosen, recent = kind, s.review_recent_messages
            self._submit(chosen, lambda: self._run(chosen, self._snapshot(recent)))

    def _flush(self) -> bool:
        with self._lock:
            if self._turns_since_flush < max(self.settings.flush_min_turns, 1):
                return False
            self._turns_since_flush = 0
        # the messages are read now: compaction is about to drop them
        messages = self._snapshot(self.settings.flush_recent_messages)
        return self._submit(ReviewKind.FLUSH, lambda: self._run(ReviewKind.FLUSH, messages))

    def _capture(self, sentence: str) -> None:
        """Store the correction now (a local write), then ask the LLM for more."""
        result = self._memory.call_tool(
            "memory",
            {
                "action": "add",
                "target": Target.FAILURE.value,
                "category": FailureCategory.CORRECTION.value,
                "content": sentence,
            },
        )
        stored = bool(result.get("success")) and result.get("status") in SUCCESS
        if not stored:
            self._log.info("correction.not_stored", status=str(result.get("status")))
        messages = self._snapshot(self.settings.review_recent_messages)
        skipped_note = "" if stored else note(-1, result)
        self._submit(
            ReviewKind.CORRECTION,
            lambda: self._run(
                ReviewKind.CORRECTION,
                messages,
                extra=f"The correction (saved as a failure entry): {sentence}",
                applied=1 if stored else 0,
                skipped=0 if stored else 1,
                notes=(skipped_note,) if skipped_note else (),
            ),
        )

    def _submit(self, kind: ReviewKind, job: Callable[[], None]) -> bool:
        queued = self._worker.submit(f"{id(self)}:{kind.value}", job)
        with self._lock:
            if queued:
                self._started += 1
            else:
                self._coalesced += 1
        return queued

    def _snapshot(self, count: int) -> tuple[tuple[str, str], ...]:
        with self._lock:
            messages = tuple(self._messages)
        return recent(messages, count)

    def _run(self, kind: ReviewKind, messages: tuple[tuple[str, str], ...], **more: Any) -> None:
        request = ReviewRequest(
            kind=kind,
            session_id=self.session_id,
            messages=messages,
            timeout_s=self.settings.timeout_s,
            skills=self.settings.review_skills_enabled,
            max_adds=self.settings.review_max_adds,
            **more,
        )
        self._record(run_review(self._memory, request, now=self._now, logger=self._log))
        if kind in (ReviewKind.REVIEW, ReviewKind.SKILL_REVIEW):
            self._auto_curate()

    def _auto_curate(self) -> None:
        """After a review, on the worker: an automatic skill curation when the curation
        lease, its cooldowns and failure cap allow (ADR 0031); a refusal is a counted skip."""
        if getattr(self._memory, "llm_off", None) is not None:
            return  # the rule-based classifier runs on `skill-governance curate` by hand
        try:
            self._memory.skill_governance.maybe_auto_curate()
        except Exception:  # background work never reaches the caller
            self._log.warning("curation.auto_failed", exc_info=True)

    def _save_auto_status(self) -> None:
        path = status_path(self._memory)
        if path is None or getattr(self._memory, "read_only", None) is not None:
            return
        if not path.parent.is_dir():  # a store without a memory directory (in-memory)
            return
        try:
            write_auto_status(path, self._auto.status().to_json())
        except OSError:
            self._log.warning("auto_memory.status_not_saved", exc_info=True)

    def _record(self, summary: ReviewSummary) -> None:
        with self._lock:
            self._last = summary
        self._log.info(
            "review.done",
            kind=summary.kind.value,
            result=summary.result.value,
            applied=summary.applied,
            skipped=summary.skipped,
            dropped=summary.dropped,
        )
        path = status_path(self._memory)
        if path is None or getattr(self._memory, "read_only", None) is not None:
            return
        try:
            write_summary(path, summary)
        except OSError:
            self._log.warning("review.status_not_saved", exc_info=True)


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
