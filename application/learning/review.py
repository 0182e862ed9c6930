"""One background review job and the machinery around it (issue 12 §3): the job kinds, the
summary a job leaves, the per-store worker, the persisted last summary and the prompts.

`run_review` asks the LLM once (the last messages of the conversation and a brief of the
current memory), parses the reply (docs/llm-protocol.md) and applies its operations one by one
through the normal tool path (partial commit), as a CHILD session for skills: project skills
only, never use, delete, visibility or a global skill (`domain.skill_rules.
child_session_problem`, re-checked against the skill id's real scope). It never raises: an
LLM that is off, slow, failing or talking nonsense ends as a summary with a reason.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.learning.llm_reply import (
    MemoryAction,
    MemoryOperation,
    SkillOperation,
    parse_reply,
)
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.skills.rules import SkillAction, child_session_problem
from pi_hermes_memory.domain.skills.skill import parse_skill_id
from pi_hermes_memory.domain.status import SUCCESS, Status
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure
from pi_hermes_memory.learning.llm import guarded_complete
from pi_hermes_memory.log import library_logger

__all__ = [
    "AUTO_MEMORY_KEY",
    "CONSOLIDATION_KEY",
    "MAX_PENDING",
    "MAX_REVIEW_ADDS",
    "STATUS_FILE",
    "ReviewKind",
    "ReviewRequest",
    "ReviewSummary",
    "ReviewWorker",
    "child_problem",
    "note",
    "read_last_summary",
    "read_status_file",
    "recent",
    "run_review",
    "status_path",
    "write_auto_status",
    "write_consolidation_status",
    "write_summary",
]

STATUS_FILE: Final = "review-status.json"
#: jobs waiting behind the running one, per store
MAX_PENDING: Final = 2
#: characters of one message / of the whole transcript / of the memory brief in a prompt
MAX_PROMPT_MESSAGE_CHARS: Final = 4_000
MAX_TRANSCRIPT_CHARS: Final = 60_000
MAX_BRIEF_ENTRY_CHARS: Final = 300
MAX_BRIEF_CHARS: Final = 12_000
#: notes (skipped operations) kept in a summary
MAX_NOTES: Final = 20
#: model-proposed adds one job applies (reviewMaxAdds); the rest are skipped with a note
MAX_REVIEW_ADDS: Final = 10
#: a worker thread with nothing to do for this long ends (a new job starts another)
_IDLE_EXIT_S: Final = 30.0


class ReviewKind(enum.StrEnum):
    REVIEW = "review"
    SKILL_REVIEW = "skill-review"
    FLUSH = "flush"
    CORRECTION = "correction"


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


# --- the persisted summary -----------------------------------------------------------------------


def status_path(memory: Any) -> Path | None:
    memory_dir = getattr(getattr(memory, "config", None), "memory_dir", None)
    return Path(memory_dir) / STATUS_FILE if memory_dir is not None else None


def read_last_summary(memory_dir: str | os.PathLike[str]) -> ReviewSummary | None:
    """The last review summary persisted under `memory_dir`, or None (none yet, unreadable)."""
    try:
        data = json.loads((Path(memory_dir) / STATUS_FILE).read_text(encoding="utf-8"))
        return ReviewSummary.from_json(data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


#: the key of review-status.json that holds the last auto-memory status (ADR 0049); the
#: rest of the file is the last review summary
AUTO_MEMORY_KEY: Final = "auto_memory"
#: the key that holds the outcome of the last consolidation of this store (ADR 0062)
CONSOLIDATION_KEY: Final = "consolidation"
_KEPT_KEYS: Final = (AUTO_MEMORY_KEY, CONSOLIDATION_KEY)
_FILE_LOCK = threading.Lock()


def read_status_file(memory_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The whole review-status.json ({} when there is none or it cannot be read)."""
    try:
        data = json.loads((Path(memory_dir) / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_status(path: Path, update: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Rewrite the file atomically with `update(current)`: a review summary and the
    auto-memory status share it, and each writer keeps the other's part."""
    with _FILE_LOCK:
        data = update(read_status_file(path.parent))
        fd, tmp = tempfile.mkstemp(prefix=".review-status.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, ensure_ascii=False, indent=2)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def write_summary(path: Path, summary: ReviewSummary) -> None:
    def update(current: dict[str, Any]) -> dict[str, Any]:
        kept: dict[str, Any] = {k: current[k] for k in _KEPT_KEYS if k in current}
        return {**summary.to_json(), **kept}

    _write_status(path, update)


def write_auto_status(path: Path, status: Mapping[str, Any]) -> None:
    """Save the auto-memory status of a session under `auto_memory`, keeping the summary."""
    _write_status(path, lambda current: {**current, AUTO_MEMORY_KEY: dict(status)})


def write_consolidation_status(path: Path, outcome: Mapping[str, Any]) -> None:
    """Save the outcome of the last consolidation (applied or refused, with its reason)
    under `consolidation`, keeping the rest of the file."""
    _write_status(path, lambda current: {**current, CONSOLIDATION_KEY: dict(outcome)})


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
    '"project", "name": "...", "description": "...", "when_to_use": "...", '
    '"procedure_steps": ["..."]} or '
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


def recent(messages: tuple[tuple[str, str], ...], count: int) -> tuple[tuple[str, str], ...]:
    return messages if count <= 0 else messages[-count:]


# --- one job -------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ReviewRequest:
    """One job: what to show the LLM and what the caller already did (a correction capture
    stores its entry before the job runs and counts it here)."""

    kind: ReviewKind
    session_id: str
    messages: tuple[tuple[str, str], ...]
    #: seconds the LLM call may take
    timeout_s: float
    #: skill operations accepted (reviewSkillsEnabled; review and skill review only)
    skills: bool
    extra: str = ""
    #: model-proposed adds this job may apply (reviewMaxAdds); the rest are skipped
    max_adds: int = MAX_REVIEW_ADDS
    applied: int = 0
    skipped: int = 0
    notes: tuple[str, ...] = ()


def run_review(
    memory: Any, request: ReviewRequest, *, now: Callable[[], datetime], logger: Any = None
) -> ReviewSummary:
    """Run one job against `memory` (a `Memory`); never raises."""
    try:
        return _review(memory, request, now)
    except Exception as exc:
        (logger or library_logger()).error("review.failed", kind=request.kind.value, exc_info=True)
        return _summary(request, now, Status.FAILED, f"the review failed ({type(exc).__name__})")


def _summary(
    request: ReviewRequest,
    now: Callable[[], datetime],
    result: Status,
    reason: str = "",
    *,
    applied: int | None = None,
    skipped: int | None = None,
    dropped: int = 0,
    notes: tuple[str, ...] | None = None,
) -> ReviewSummary:
    return ReviewSummary(
        kind=request.kind,
        session_id=request.session_id,
        at=now().isoformat(timespec="seconds"),
        result=result,
        reason=reason,
        applied=request.applied if applied is None else applied,
        skipped=request.skipped if skipped is None else skipped,
        dropped=dropped,
        notes=(request.notes if notes is None else notes)[:MAX_NOTES],
    )


def _review(memory: Any, request: ReviewRequest, now: Callable[[], datetime]) -> ReviewSummary:
    kind = request.kind
    completer = getattr(memory, "llm", None)
    if completer is None:
        return _summary(request, now, Status.OFF, "no LLM is attached to this store")
    skills = (
        kind in (ReviewKind.REVIEW, ReviewKind.SKILL_REVIEW)
        and request.skills
        and _has_skills(memory)
    )
    system = _SYSTEMS[kind] + " " + _PROTOCOL + (_SKILLS if skills else "")
    user = (
        f"Current memory (briefly):\n{_brief(memory)}\n\n"
        f"Conversation:\n{_transcript(request.messages)}"
        + (f"\n\n{request.extra}" if request.extra else "")
    )
    try:
        reply = guarded_complete(completer, system, user, timeout=request.timeout_s)
    except CompletionFailed as exc:
        if exc.reason is CompletionFailure.OFF:
            return _summary(request, now, Status.OFF, str(exc))
        return _summary(request, now, Status.FAILED, f"{exc.reason}: {shown(str(exc))}")
    parsed = parse_reply(
        reply if isinstance(reply, str) else "",
        skills=skills,
        targets=() if kind is ReviewKind.SKILL_REVIEW else None,
    )
    if not parsed.readable:
        reason = f"the reply could not be read ({parsed.shape.value})"
        return _summary(request, now, Status.FAILED, reason)
    ops: list[MemoryOperation | SkillOperation] = [*parsed.operations, *parsed.skill_operations]
    ops.sort(key=lambda op: op.index)
    applied, skipped, notes = request.applied, request.skipped, list(request.notes)
    adds = over_cap = 0
    cap = max(0, request.max_adds)
    for op in ops:
        is_add = isinstance(op, MemoryOperation) and op.action is MemoryAction.ADD
        if is_add and adds >= cap:  # a model cannot flood memory from one conversation
            skipped += 1
            over_cap += 1
            notes.append(note(op.index, {"status": "add-cap", "message": _cap_message(cap)}))
            continue
        result = _apply(memory, op)
        if result.get("success") and result.get("status") in SUCCESS:
            applied += 1
            adds += is_add
        else:
            skipped += 1
            notes.append(note(op.index, result))
    status = Status.PARTIAL if skipped and applied else Status.SKIPPED if skipped else Status.OK
    reason = parsed.note
    if over_cap:
        reason += f"; {over_cap} add(s) over the cap skipped ({_cap_message(cap)})"
    return _summary(
        request,
        now,
        status,
        reason,
        applied=applied,
        skipped=skipped,
        dropped=parsed.dropped_count,
        notes=tuple(notes),
    )


def _cap_message(cap: int) -> str:
    return f"at most {cap} add(s) per review (reviewMaxAdds)"


def _apply(memory: Any, op: MemoryOperation | SkillOperation) -> Mapping[str, Any]:
    result: Mapping[str, Any]
    if isinstance(op, MemoryOperation):
        result = memory.call_tool("memory", op.tool_arguments())
        return result
    problem = child_problem(op)
    if problem is not None:
        return {"success": False, "status": Status.FORBIDDEN, "message": problem}
    result = memory.call_tool("skill", dict(op.arguments))
    return result


def child_problem(op: SkillOperation) -> str | None:
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


def note(index: int, result: Mapping[str, Any]) -> str:
    where = "correction" if index < 0 else f"operation {index}"
    return f"{where}: {result.get('status')}: {shown(str(result.get('message', '')), 160)}"
