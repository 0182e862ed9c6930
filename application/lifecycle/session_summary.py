"""The session summary (`sessionSummary`, off by default; the second seed's Session 记忆, ADR 0077).

The seed saves the *previous* session's summary when a new session starts (`/new`), through the
LLM. Here:

- at `AgentSession.shutdown()` the last `sessionSummaryMessages` messages of the session are
  kept as a pending summary under `session_summary_pending` in `<memoryDir>/review-status.json`
  (written atomically, at most `MAX_PENDING_SESSIONS`, each message clipped); nothing is
  written to memory then;
- when the next session of the same project starts (`Memory.session()`, or
  `AgentSession.new_session()`, the host's `/new`), the background worker summarises each
  pending session of that project: through the LLM when one is configured (one call, the
  lifecycle's `llm.timeoutMs` budget, the reply clipped to `MAX_CAPTURE_CHARS`), otherwise (LLM
  off or failing) the concatenation used before; the summary is stored as one `fact` with
  importance 0.5, through `Memory.add` (content scanner and duplicate rules apply), and the
  pending record is dropped once the write was answered.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

from pi_hermes_memory.domain.learning.capture import MAX_CAPTURE_CHARS
from pi_hermes_memory.domain.memory.model import MemoryKind, Target
from pi_hermes_memory.domain.prompt.blocks import inline
from pi_hermes_memory.errors import CompletionFailed
from pi_hermes_memory.learning.llm import guarded_complete
from pi_hermes_memory.learning.review import _write_status, read_status_file, status_path

__all__ = [
    "MAX_PENDING_SESSIONS",
    "PENDING_KEY",
    "SUMMARY_IMPORTANCE",
    "fallback_summary",
    "keep_pending",
    "store_summary",
    "summarize_pending",
]

PENDING_KEY: Final = "session_summary_pending"
#: pending sessions kept per store (the oldest fall off): a host that never starts a new
#: session must not grow the status file without bound
MAX_PENDING_SESSIONS: Final = 20
#: the seed's importance of a session summary
SUMMARY_IMPORTANCE: Final = 0.5
_MESSAGE_CHARS: Final = 2000
_FALLBACK_MESSAGE_CHARS: Final = 120
_LOCK = threading.Lock()
#: pending sessions of stores without a memory folder on disk
_IN_PROCESS: weakref.WeakKeyDictionary[Any, list[dict[str, Any]]] = weakref.WeakKeyDictionary()

_SYSTEM = (
    "You summarise a finished conversation between a user and a coding agent for the agent's "
    "long-term memory. Write one short paragraph (at most 400 characters) in plain text: what "
    "was worked on, what was decided, and what is still open. No preamble, no Markdown, no "
    "secrets or credentials."
)


def keep_pending(
    memory: Any,
    *,
    session_id: str,
    project: str | None,
    at: datetime,
    messages: Sequence[tuple[str, str]],
) -> bool:
    """Keep the session's messages for the next session start to summarise; False when
    there is nothing to keep or no memory folder."""
    path = status_path(memory)
    kept = [[role, text[:_MESSAGE_CHARS]] for role, text in messages if text.strip()]
    if not kept:
        return False
    record = {"session_id": session_id, "project": project, "at": at.isoformat(), "messages": kept}
    if path is None or not path.parent.is_dir():
        # a store without a memory folder on disk (in-memory adapters): this process only
        with _LOCK:
            mine = _IN_PROCESS.setdefault(memory, [])
            mine[:] = [p for p in mine if p["session_id"] != session_id][-MAX_PENDING_SESSIONS:]
            mine.append(record)
        return True

    def update(current: dict[str, Any]) -> dict[str, Any]:
        pending = [
            p
            for p in _pending(current)
            if p.get("session_id") != session_id  # a second shutdown replaces, never doubles
        ]
        pending.append(record)
        return {**current, PENDING_KEY: pending[-MAX_PENDING_SESSIONS:]}

    with _LOCK:
        _write_status(path, update)
    return True


def summarize_pending(
    memory: Any,
    *,
    project: str | None,
    exclude: str,
    timeout_s: float,
    now: Callable[[], datetime],
    store: Callable[[str], Any],
    log: Any,
) -> list[Any]:
    """Summarise and store each pending session of `project` other than `exclude` (the new
    session itself); returns what each write answered. A record is dropped only after its
    write was answered, so a crash in between summarises it again (a duplicate is then
    refused by the store's duplicate rule)."""
    path = status_path(memory)
    on_disk = path is not None and path.parent.is_dir()
    with _LOCK:
        records = _pending(read_status_file(path.parent)) if on_disk and path else []
        records += _IN_PROCESS.get(memory, [])
        todo = [
            p for p in records if p.get("project") == project and p.get("session_id") != exclude
        ]
    results = []
    for record in todo:
        messages = [(str(r), str(t)) for r, t in record.get("messages", [])]
        day = str(record.get("at", now().isoformat()))[:10]
        text = _llm_summary(memory, messages, timeout_s, log)
        if text is None:
            text = fallback_summary(str(record.get("session_id")), day, messages)
        else:
            text = f"Session {record.get('session_id')} on {day}: {text}"
            if len(text) > MAX_CAPTURE_CHARS:
                text = text[: MAX_CAPTURE_CHARS - 1] + "…"
        results.append(store(text))
        done = record.get("session_id")

        def drop(current: dict[str, Any], done: object = done) -> dict[str, Any]:
            rest = [p for p in _pending(current) if p.get("session_id") != done]
            return {**current, PENDING_KEY: rest}

        with _LOCK:
            if memory in _IN_PROCESS:
                _IN_PROCESS[memory] = drop({PENDING_KEY: _IN_PROCESS[memory]})[PENDING_KEY]
            if on_disk and path is not None:
                _write_status(path, drop)
    return results


def fallback_summary(session_id: str, day: str, messages: Sequence[tuple[str, str]]) -> str:
    """Without an LLM: the session's messages, each clipped, in one line."""
    parts = [f"Session {session_id} on {day}:"]
    for role, raw in messages:
        text = inline(raw)
        if not text:
            continue
        clipped = text if len(text) <= _FALLBACK_MESSAGE_CHARS else text[:119] + "…"
        parts.append(f"{role}: {clipped};")
    summary = " ".join(parts)
    return summary if len(summary) <= MAX_CAPTURE_CHARS else summary[: MAX_CAPTURE_CHARS - 1] + "…"


def store_summary(memory: Any, text: str) -> Any:
    """One `fact` of importance 0.5 in the project's memory (the global one without a
    project), as auto-capture stores."""
    target = Target.PROJECT if getattr(memory, "project", None) else Target.MEMORY
    return memory.add(text, target=target, importance=SUMMARY_IMPORTANCE, kind=MemoryKind.FACT)


def _llm_summary(
    memory: Any, messages: Sequence[tuple[str, str]], timeout_s: float, log: Any
) -> str | None:
    completer = getattr(memory, "llm", None)
    if completer is None or getattr(memory, "llm_off", None) is not None:
        return None
    transcript = "\n".join(f"{role}: {text}" for role, text in messages)
    try:
        reply = guarded_complete(completer, _SYSTEM, transcript, timeout=timeout_s)
    except CompletionFailed as exc:
        log.warning("session_summary.llm_failed", reason=str(exc.reason))
        return None
    text = inline(reply).strip()
    return text or None


def _pending(current: dict[str, Any]) -> list[dict[str, Any]]:
    value = current.get(PENDING_KEY)
    if not isinstance(value, list):
        return []
    return [p for p in value if isinstance(p, dict)]
