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
  operations in the background; at most one capture per 3 user turns.

Each job shows the LLM the last `reviewRecentMessages` / `flushRecentMessages` messages
(0: all kept) and a brief of the current memory, parses the reply (docs/llm-protocol.md) and
applies its operations one by one through the normal tool path (partial commit), as a CHILD
session for skills (project skills only; never use, delete, visibility, or a global skill).

Nothing here raises to the caller: a lifecycle call logs and carries on, and an LLM that is
off, slow, failing or talking nonsense ends as a review result with a reason. Background work
never blocks the caller's turn: one worker thread per store runs one job at a time, holds at
most `MAX_PENDING` more, and drops (coalesces) a trigger of a kind already waiting.
`shutdown(timeout=...)` waits a bounded time.

The last review summary of a store is kept in `<memoryDir>/review-status.json` (written
atomically) so that the CLI's `review-status`, which has no live session, can show it.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import tempfile
import threading
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import attrs
from pi_hermes_memory.corrections import rules_from_config
from pi_hermes_memory.domain.corrections import CAPTURE_EVERY_TURNS, CorrectionRules, detect
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.llm_reply import MemoryOperation, SkillOperation, parse_reply
from pi_hermes_memory.domain.model import FailureCategory, Target
from pi_hermes_memory.domain.skill import parse_skill_id
from pi_hermes_memory.domain.skill_rules import SkillAction, child_session_problem
from pi_hermes_memory.domain.status import SUCCESS, Status
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure
from pi_hermes_memory.log import library_logger

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_S",
    "MAX_PENDING",
    "STATUS_FILE",
    "AgentSession",
    "LifecycleSettings",
    "ReviewKind",
    "ReviewStatus",
    "ReviewSummary",
    "ReviewWorker",
    "read_last_summary",
]

STATUS_FILE: Final = "review-status.json"
#: jobs waiting behind the running one, per store
MAX_PENDING: Final = 2
DEFAULT_SHUTDOWN_TIMEOUT_S: Final = 10.0
#: messages a session keeps (older ones fall off; "all" means all of these)
MAX_KEPT_MESSAGES: Final = 1_000
#: characters of one message / of the whole transcript / of the memory brief in a prompt
MAX_PROMPT_MESSAGE_CHARS: Final = 4_000
MAX_TRANSCRIPT_CHARS: Final = 60_000
MAX_BRIEF_ENTRY_CHARS: Final = 300
MAX_BRIEF_CHARS: Final = 12_000
#: a worker thread with nothing to do for this long ends (a new job starts another)
_IDLE_EXIT_S: Final = 30.0


class ReviewKind(enum.StrEnum):
    REVIEW = "review"
    SKILL_REVIEW = "skill-review"
    FLUSH = "flush"
    CORRECTION = "correction"


@attrs.frozen(kw_only=True)
class LifecycleSettings:
    """The configuration fields the lifecycle reads (defaults: the seed's)."""

    nudge_interval: int = 10
    nudge_tool_calls: int = 15
    skill_review_tool_calls: int = 10
    review_recent_messages: int = 0
    review_enabled: bool = True
    review_skills_enabled: bool = True
    flush_on_compact: bool = True
    flush_on_shutdown: bool = True
    flush_min_turns: int = 6
    flush_recent_messages: int = 0
    #: seconds one LLM call may take (llm.timeoutMs)
    timeout_s: float = 60.0
    #: None: correction detection is off
    corrections: CorrectionRules | None = attrs.field(factory=CorrectionRules.build)

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
            flush_on_compact=getattr(config, "flush_on_compact", True),
            flush_on_shutdown=getattr(config, "flush_on_shutdown", True),
            flush_min_turns=getattr(config, "flush_min_turns", default.flush_min_turns),
            flush_recent_messages=getattr(config, "flush_recent_messages", 0),
            timeout_s=timeout_ms / 1000 if isinstance(timeout_ms, int) and timeout_ms > 0 else 60.0,
            corrections=rules_from_config(config),
        )


@attrs.frozen(kw_only=True)
class ReviewSummary:
    """What one background job did. `result`: ok (everything asked was applied, or nothing
    was asked), partial (some applied, some skipped), skipped (nothing applied, some
    skipped), off (no LLM; `reason` says why), failed (the LLM failed or its reply could not
    be read; `reason` says why)."""

    kind: ReviewKind
    session_id: str
    at: str
    result: Status
    reason: str = ""
    applied: int = 0
    skipped: int = 0
    dropped: int = 0
    #: one line per skipped operation (its status and message, clipped)
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "session_id": self.session_id,
            "at": self.at,
            "result": self.result.value,
            "reason": self.reason,
            "applied": self.applied,
            "skipped": self.skipped,
            "dropped": self.dropped,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReviewSummary:
        return cls(
            kind=ReviewKind(data["kind"]),
            session_id=str(data["session_id"]),
            at=str(data["at"]),
            result=Status(data["result"]),
            reason=str(data.get("reason", "")),
            applied=int(data.get("applied", 0)),
            skipped=int(data.get("skipped", 0)),
            dropped=int(data.get("dropped", 0)),
            notes=tuple(str(n) for n in data.get("notes", ())),
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

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in attrs.fields(ReviewStatus)}
        data["last"] = None if self.last is None else self.last.to_json()
        return data


# --- the worker ----------------------------------------------------------------------------------


class ReviewWorker:
    """One thread per store: runs one job at a time, holds at most `max_pending` more; a job
    whose key is already waiting is dropped (the waiting one reads the newest state)."""

    def __init__(self, *, max_pending: int = MAX_PENDING, logger: Any = None) -> None:
        self._max = max_pending
        self._cond = threading.Condition()
        self._pending: deque[tuple[str, Callable[[], None]]] = deque()
        self._busy = False
        self._thread: threading.Thread | None = None
        self._log = logger or library_logger()

    def submit(self, key: str, job: Callable[[], None]) -> bool:
        """Queue `job`; False when it was coalesced (dropped)."""
        with self._cond:
            if len(self._pending) >= self._max or any(k == key for k, _ in self._pending):
                return False
            self._pending.append((key, job))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="pi-hermes-memory-review", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
            return True

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    @property
    def running(self) -> bool:
        with self._cond:
            return self._busy

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for every queued job to finish; True when idle."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not self._pending and not self._busy, timeout=max(0.0, timeout)
            )

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: bool(self._pending), timeout=_IDLE_EXIT_S):
                    self._thread = None
                    return
                _, job = self._pending.popleft()
                self._busy = True
            try:
                job()
            except BaseException:  # a job catches its own failures; this is the backstop
                self._log.error("review.worker_failed", exc_info=True)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


_WORKERS: weakref.WeakKeyDictionary[Any, ReviewWorker] = weakref.WeakKeyDictionary()
_WORKERS_LOCK = threading.Lock()


def _worker_for(memory: Any) -> ReviewWorker:
    with _WORKERS_LOCK:
        worker = _WORKERS.get(memory)
        if worker is None:
            worker = _WORKERS[memory] = ReviewWorker()
        return worker


# --- the persisted summary -----------------------------------------------------------------------


def _status_path(memory: Any) -> Path | None:
    memory_dir = getattr(getattr(memory, "config", None), "memory_dir", None)
    return Path(memory_dir) / STATUS_FILE if memory_dir is not None else None


def read_last_summary(memory_dir: str | os.PathLike[str]) -> ReviewSummary | None:
    """The last review summary persisted under `memory_dir`, or None (none yet, unreadable)."""
    try:
        data = json.loads((Path(memory_dir) / STATUS_FILE).read_text(encoding="utf-8"))
        return ReviewSummary.from_json(data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _write_summary(path: Path, summary: ReviewSummary) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".review-status.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(summary.to_json(), out, ensure_ascii=False, indent=2)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- prompts -------------------------------------------------------------------------------------

_PROTOCOL = (
    "Answer with ONE JSON object and nothing else: "
    '{"operations": [...]}. Memory items: {"action": "add"|"replace"|"remove", '
    '"target": "memory"|"user"|"project"|"failure", "content": "...", "old_text": "..." '
    '(replace/remove: a unique part of the entry), "category": "failure"|"correction"|'
    '"insight"|"preference"|"convention"|"tool-quirk" (failure only)}. '
    'When there is nothing worth saving, answer {"operations": []}. '
    "Save only durable facts that will help in later sessions; never secrets, never "
    "one-off task details; prefer replace over adding a near-duplicate."
)
_SKILLS = (
    ' Skill items (project skills only): {"tool": "skill", "action": "create", "scope": '
    '"project", "name": "...", "description": "...", "procedure_steps": ["..."]} or '
    '{"tool": "skill", "action": "patch"|"update", "skill_id": "project:...", ...} for a '
    "reusable procedure the conversation worked out."
)
_SYSTEMS: Final = {
    ReviewKind.REVIEW: "You review a conversation between a user and a coding agent and "
    "decide what is worth remembering across sessions (user preferences, project commands "
    "and conventions, environment facts, failures and their fixes).",
    ReviewKind.SKILL_REVIEW: "You review a conversation between a user and a coding agent "
    "and decide whether it worked out a reusable procedure worth keeping as a project "
    "skill, or improves an existing one. Answer with skill items only.",
    ReviewKind.FLUSH: "The conversation below is about to be compacted or closed. Save "
    "what is worth remembering across sessions before it is lost.",
    ReviewKind.CORRECTION: "The user just corrected the agent; the correction itself is "
    "already saved as a failure entry of category correction. Add any further operation "
    "that keeps the agent from repeating the mistake (e.g. fix or remove a memory entry "
    "that the correction shows is wrong). Do not repeat the correction itself.",
}


def _transcript(messages: Iterable[tuple[str, str]]) -> str:
    lines = []
    for role, text in messages:
        body = (
            text
            if len(text) <= MAX_PROMPT_MESSAGE_CHARS
            else text[:MAX_PROMPT_MESSAGE_CHARS] + " …"
        )
        lines.append(f"[{role}] {body}")
    out = "\n".join(lines)
    if len(out) > MAX_TRANSCRIPT_CHARS:  # keep the newest part
        out = "… (older messages left out)\n" + out[-MAX_TRANSCRIPT_CHARS:]
    return out or "(no messages)"


def _brief(memory: Any) -> str:
    lines: list[str] = []
    used = 0
    for target in Target:
        try:
            views = memory.entries(target)
        except Exception:  # the brief is a courtesy; the review still runs without it
            continue
        for view in views:
            text = view.text.replace("\n", " ")
            if len(text) > MAX_BRIEF_ENTRY_CHARS:
                text = text[:MAX_BRIEF_ENTRY_CHARS] + " …"
            category = f"/{view.category}" if view.category else ""
            line = f"§ [{target.value}{category}] {text}"
            if used + len(line) > MAX_BRIEF_CHARS:
                lines.append("… (more entries left out)")
                return "\n".join(lines)
            lines.append(line)
            used += len(line) + 1
    return "\n".join(lines) or "(empty)"


def _recent(messages: tuple[tuple[str, str], ...], count: int) -> tuple[tuple[str, str], ...]:
    return messages if count <= 0 else messages[-count:]


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
            if self.settings.flush_on_shutdown:
                self._flush()
            return self._worker.wait_idle(timeout)
        except Exception:
            self._log.error("lifecycle.shutdown_failed", exc_info=True)
            return False

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
        if last is None:
            path = _status_path(self._memory)
            last = read_last_summary(path.parent) if path is not None else None
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
        note = "" if stored else _note(-1, result)
        self._submit(
            ReviewKind.CORRECTION,
            lambda: self._run(
                ReviewKind.CORRECTION,
                messages,
                extra=f"The correction (saved as a failure entry): {sentence}",
                applied=1 if stored else 0,
                skipped=0 if stored else 1,
                notes=(note,) if note else (),
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
        return _recent(messages, count)

    # -- one job ------------------------------------------------------------------------

    def _run(
        self,
        kind: ReviewKind,
        messages: tuple[tuple[str, str], ...],
        *,
        extra: str = "",
        applied: int = 0,
        skipped: int = 0,
        notes: tuple[str, ...] = (),
    ) -> None:
        try:
            summary = self._review(kind, messages, extra, applied, skipped, notes)
        except Exception as exc:
            self._log.error("review.failed", kind=kind.value, exc_info=True)
            summary = self._summary(
                kind, Status.FAILED, f"the review failed ({type(exc).__name__})", applied, skipped
            )
        self._record(summary)

    def _summary(
        self,
        kind: ReviewKind,
        result: Status,
        reason: str = "",
        applied: int = 0,
        skipped: int = 0,
        dropped: int = 0,
        notes: tuple[str, ...] = (),
    ) -> ReviewSummary:
        return ReviewSummary(
            kind=kind,
            session_id=self.session_id,
            at=self._now().isoformat(timespec="seconds"),
            result=result,
            reason=reason,
            applied=applied,
            skipped=skipped,
            dropped=dropped,
            notes=notes[:20],
        )

    def _review(
        self,
        kind: ReviewKind,
        messages: tuple[tuple[str, str], ...],
        extra: str,
        applied: int,
        skipped: int,
        notes: tuple[str, ...],
    ) -> ReviewSummary:
        completer = getattr(self._memory, "llm", None)
        if completer is None:
            return self._summary(
                kind, Status.OFF, "no LLM is attached to this store", applied, skipped, notes=notes
            )
        skills = (
            kind in (ReviewKind.REVIEW, ReviewKind.SKILL_REVIEW)
            and self.settings.review_skills_enabled
            and _has_skills(self._memory)
        )
        system = _SYSTEMS[kind] + " " + _PROTOCOL + (_SKILLS if skills else "")
        user = (
            f"Current memory (briefly):\n{_brief(self._memory)}\n\n"
            f"Conversation:\n{_transcript(messages)}" + (f"\n\n{extra}" if extra else "")
        )
        try:
            reply = completer.complete(system, user, timeout=self.settings.timeout_s)
        except CompletionFailed as exc:
            result = Status.OFF if exc.reason is CompletionFailure.OFF else Status.FAILED
            reason = str(exc) if result is Status.OFF else f"{exc.reason}: {shown(str(exc))}"
            return self._summary(kind, result, reason, applied, skipped, notes=notes)
        parsed = parse_reply(
            reply if isinstance(reply, str) else "",
            skills=skills,
            targets=() if kind is ReviewKind.SKILL_REVIEW else None,
        )
        if not parsed.readable:
            return self._summary(
                kind,
                Status.FAILED,
                f"the reply could not be read ({parsed.shape.value})",
                applied,
                skipped,
                notes=notes,
            )
        ops: list[MemoryOperation | SkillOperation] = [*parsed.operations, *parsed.skill_operations]
        ops.sort(key=lambda op: op.index)
        more_notes = list(notes)
        for op in ops:
            result_json = self._apply(op)
            if result_json.get("success") and result_json.get("status") in SUCCESS:
                applied += 1
            else:
                skipped += 1
                more_notes.append(_note(op.index, result_json))
        if skipped and applied:
            status = Status.PARTIAL
        elif skipped:
            status = Status.SKIPPED
        else:
            status = Status.OK
        return self._summary(
            kind, status, parsed.note, applied, skipped, parsed.dropped_count, tuple(more_notes)
        )

    def _apply(self, op: MemoryOperation | SkillOperation) -> Mapping[str, Any]:
        result: Mapping[str, Any]
        if isinstance(op, MemoryOperation):
            result = self._memory.call_tool("memory", op.tool_arguments())
            return result
        problem = _child_problem(op)
        if problem is not None:
            return {"success": False, "status": Status.FORBIDDEN, "message": problem}
        result = self._memory.call_tool("skill", dict(op.arguments))
        return result

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
        path = _status_path(self._memory)
        if path is None or getattr(self._memory, "read_only", None) is not None:
            return
        try:
            _write_summary(path, summary)
        except OSError:
            self._log.warning("review.status_not_saved", exc_info=True)


def _child_problem(op: SkillOperation) -> str | None:
    """Why a background session may not run `op` (re-checked here: the parser's check is
    not the last word, the skill id's real scope is)."""
    scope: str | None
    if op.action is SkillAction.CREATE:
        scope = op.arguments.get("scope")
        if not isinstance(scope, str) or scope.strip().lower() != "project":
            return "a background session creates project skills only (scope project)"
    else:
        skill_id = op.arguments.get("skill_id")
        if not isinstance(skill_id, str):
            return "a skill operation needs a skill_id"
        try:
            scope = parse_skill_id(skill_id.strip())[0].value
        except Exception:
            return f"not a skill id: {shown(skill_id)}"
    return child_session_problem(op.action, scope)


def _has_skills(memory: Any) -> bool:
    try:
        return memory.skills is not None
    except Exception:  # InvalidArgument: no skills on this store
        return False


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _note(index: int, result: Mapping[str, Any]) -> str:
    where = "correction" if index < 0 else f"operation {index}"
    return f"{where}: {result.get('status')}: {shown(str(result.get('message', '')), 160)}"
