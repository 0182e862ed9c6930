"""Claude Code's hooks, one short process each (issue 30 §2, ADR 0090).

`pi-hermes-memory hook EVENT` reads the hook's JSON from stdin (session_id, transcript_path,
cwd, hook_event_name, and the event's own fields) and answers as Claude Code expects:

- SessionStart: the memory block of the system prompt (policy, standing instructions, the
  frozen snapshot) as `hookSpecificOutput.additionalContext`;
- UserPromptSubmit: correction capture (a `failure` entry at once, the LLM follow-up in the
  worker), turn counting (a review every `nudgeInterval` turns), and auto-recall: the
  `<relevant-memories>` block as additionalContext;
- PostToolUse: tool-call counting (a review every `nudgeToolCalls` calls);
- PreCompact: a flush (when `flushOnCompact` and `flushMinTurns` turns since the last one);
- Stop: auto-capture of the turn's user prompt;
- SessionEnd: a flush (`flushOnShutdown`), then old session files are pruned.

Each process keeps nothing: the counters of a session live in
`<memoryDir>/hooks/claude-code/sessions/<session>.json`, read-modify-written under an
exclusive `flock` of a sibling `.lock` file and replaced atomically, so two hooks of one
session at once never lose a count. A session file untouched for `PRUNE_AFTER_DAYS` days is
removed.

Slow work (a review, a flush, a correction follow-up: an LLM call) is a job file under
`hooks/claude-code/jobs/` (one per session and kind: a second trigger of a kind already
waiting coalesces) and a detached worker process (`hook --worker`, a new session, stdio on
/dev/null and the log) that holds `worker.lock` runs them; a second worker that cannot take
the lock leaves at once, and the holder looks for jobs again after releasing it, so none is
stranded. The messages a job shows the LLM come from the session's transcript file
(`transcript_path`), read when the job runs.

Nothing here may fail the user's turn: `run_hook` raises nothing; the CLI exits 0 whatever
happens and writes one line to `hooks/claude-code/hook.log` at most.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from pi_hermes_memory.adapters.hosts.base import write_atomic

__all__ = [
    "CHILD_ENV",
    "EVENTS",
    "HOST_DIR",
    "MAX_STDIN_BYTES",
    "PRUNE_AFTER_DAYS",
    "SessionState",
    "hooks_dir",
    "log_line",
    "read_transcript",
    "run_hook",
    "run_worker",
    "session_state",
]

#: the variable every LLM child process carries (adapters/providers/command_llm.py)
CHILD_ENV: Final = "PI_HERMES_MEMORY_CHILD"
EVENTS: Final = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PreCompact",
    "Stop",
    "SessionEnd",
)
#: under the store's memory directory
HOST_DIR: Final = Path("hooks") / "claude-code"
MAX_STDIN_BYTES: Final = 4 << 20
PRUNE_AFTER_DAYS: Final = 7
#: the tail of a transcript a job reads (the LLM sees the last messages only)
TRANSCRIPT_TAIL_BYTES: Final = 4 << 20
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


def hooks_dir(memory_dir: Path) -> Path:
    return memory_dir / HOST_DIR


def log_line(folder: Path | None, message: str) -> None:
    """One line in hook.log (best effort: a hook never fails for its log)."""
    if folder is None:
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        with open(folder / "hook.log", "a", encoding="utf-8") as out:
            out.write(f"{stamp} {message[:500]}\n")


def _session_file_name(session_id: str) -> str:
    if _SAFE_ID.match(session_id) and not session_id.startswith("."):
        return session_id
    return "h-" + hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]


def _write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    write_atomic(path, json.dumps(data, ensure_ascii=False).encode("utf-8"), new_mode=0o600)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# --- per-session state ---------------------------------------------------------------------------

_COUNTERS: Final = (
    "user_turns",
    "turns_since_review",
    "tools_since_review",
    "tools_since_skill_review",
    "turns_since_flush",
    "tool_calls",
    "reviews_queued",
    "captures",
)


class SessionState(dict[str, Any]):
    """The persisted counters of one Claude Code session (a plain JSON object)."""

    def count(self, key: str) -> int:
        value = self.get(key, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def bump(self, *keys: str) -> None:
        for key in keys:
            self[key] = self.count(key) + 1


@contextlib.contextmanager
def session_state(folder: Path, session_id: str) -> Iterator[SessionState]:
    """The session's state, locked for the block and written back (atomically) after it."""
    sessions = folder / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    name = _session_file_name(session_id)
    path = sessions / f"{name}.json"
    with open(sessions / f"{name}.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            state = SessionState(_read_json(path))
            state.setdefault("session_id", session_id)
            for key in _COUNTERS:
                state[key] = state.count(key)
            yield state
            state["updated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            _write_json_atomic(path, state)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def prune_sessions(folder: Path, *, now: float, days: int = PRUNE_AFTER_DAYS) -> int:
    """Remove session files (and their locks) untouched for `days` days."""
    removed = 0
    cutoff = now - days * 86400
    for path in (folder / "sessions").glob("*.json"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                path.with_suffix(".lock").unlink(missing_ok=True)
                removed += 1
    return removed


# --- the payload ---------------------------------------------------------------------------------


def _payload(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _str(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _answer(event: str, context: str | None) -> str | None:
    if not context:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}},
        ensure_ascii=False,
    )


# --- one hook ------------------------------------------------------------------------------------


class _Hook:
    """One hook call: the payload, the configuration, the store when an event needs it."""

    def __init__(
        self,
        event: str,
        payload: dict[str, Any],
        environ: Mapping[str, str],
        memory_for: MemoryFor | None = None,
    ) -> None:
        from pi_hermes_memory.adapters.files.config_file import load_config

        self.event = event
        self.payload = payload
        self.environ = environ
        self.session_id = _str(payload, "session_id") or "unknown"
        cwd = _str(payload, "cwd")
        self.cwd = Path(cwd) if cwd and Path(cwd).is_absolute() else None
        self.config, _warnings = load_config(environ=environ, cwd=self.cwd)
        self.folder = hooks_dir(Path(self.config.memory_dir))
        self._memory: Any = None
        self._settings: Any = None
        self._memory_for = memory_for

    @property
    def settings(self) -> Any:
        """The lifecycle's settings (`LifecycleSettings`; imported only by the events that
        need more than the counters' thresholds: PostToolUse stays light)."""
        if self._settings is None:
            from pi_hermes_memory.lifecycle.session import LifecycleSettings

            self._settings = LifecycleSettings.from_config(self.config)
        return self._settings

    def nudges(self) -> tuple[bool, bool, int, int, int]:
        """reviewEnabled, reviewSkillsEnabled, nudgeInterval, nudgeToolCalls and
        skillReviewToolCalls (the fields LifecycleSettings copies)."""
        c = self.config
        return (
            c.review_enabled,
            c.review_skills_enabled,
            c.nudge_interval,
            c.nudge_tool_calls,
            c.skill_review_tool_calls,
        )

    def memory(self) -> Any:
        if self._memory is None and self._memory_for is not None:
            # the hook server's (ADR 0096): open across calls, owned (and closed) by it
            return self._memory_for(self.cwd, self.environ, self.config)
        if self._memory is None:
            from pi_hermes_memory.bootstrap import open_memory

            self._memory = open_memory(
                cwd=self.cwd, environ=self.environ, session_id=self.session_id[:64]
            )
        return self._memory

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()

    def state(self) -> contextlib.AbstractContextManager[SessionState]:
        return session_state(self.folder, self.session_id)

    def queue(self, kind: str, **more: Any) -> None:
        """A job for the worker (a second one of the same session and kind replaces it)."""
        job = {
            "kind": kind,
            "session_id": self.session_id,
            "cwd": str(self.cwd) if self.cwd else None,
            "transcript_path": _str(self.payload, "transcript_path") or None,
            "queued_at": time.time(),
            **more,
        }
        name = f"{_session_file_name(self.session_id)}.{kind}.json"
        _write_json_atomic(self.folder / "jobs" / name, job)
        start_worker(self.folder, self.environ, cwd=self.cwd)

    # -- events -------------------------------------------------------------------------

    def session_start(self) -> str | None:
        with self.state() as state:
            state.bump("starts")
            state["source"] = _str(self.payload, "source")
        prune_sessions(self.folder, now=time.time())
        block = self.memory().system_prompt()
        return str(block) if block else None

    def user_prompt(self) -> str | None:
        from pi_hermes_memory.domain.learning.corrections import CAPTURE_EVERY_TURNS, detect

        prompt = _str(self.payload, "prompt")
        rules = self.settings.corrections
        with self.state() as state:
            state.bump("user_turns", "turns_since_review", "turns_since_flush")
            turn = state.count("user_turns")
            last = state.get("last_capture_turn")
            correction = None
            if rules is not None and (
                not isinstance(last, int) or turn - last >= CAPTURE_EVERY_TURNS
            ):
                correction = detect(rules, prompt)
                if correction is not None:
                    state["last_capture_turn"] = turn
                    state.bump("captures")
            state["last_prompt"] = prompt[:20_000]
            review = self._review_due(state)
        if correction is not None:
            self._capture(correction.sentence)
        if review is not None:
            self.queue(review)
        return self._recall(prompt)

    def _recall(self, prompt: str) -> str | None:
        from pi_hermes_memory.lifecycle.auto_memory import AutoMemory
        from pi_hermes_memory.log import library_logger

        auto = AutoMemory(
            self.memory(),
            self.settings.auto,
            session_id=self.session_id,
            now=lambda: datetime.now(UTC),
            logger=library_logger(),
        )
        return auto.before_turn(prompt)

    def _capture(self, sentence: str) -> None:
        result = self.memory().call_tool(
            "memory",
            {"action": "add", "target": "failure", "category": "correction", "content": sentence},
        )
        stored = bool(result.get("success"))
        self.queue(
            "correction",
            extra=f"The correction (saved as a failure entry): {sentence}",
            applied=1 if stored else 0,
            skipped=0 if stored else 1,
        )

    def post_tool(self) -> None:
        with self.state() as state:
            state.bump("tool_calls", "tools_since_review", "tools_since_skill_review")
            review = self._review_due(state)
        if review is not None:
            self.queue(review)

    def _review_due(self, state: SessionState) -> str | None:
        """The seed's nudges, on the persisted counters (AgentSession._maybe_review)."""
        enabled, skills, every_turns, every_tools, every_skill_tools = self.nudges()
        if not enabled:
            return None
        if (every_turns > 0 and state.count("turns_since_review") >= every_turns) or (
            every_tools > 0 and state.count("tools_since_review") >= every_tools
        ):
            state["turns_since_review"] = state["tools_since_review"] = 0
            if skills:
                state["tools_since_skill_review"] = 0
            state.bump("reviews_queued")
            return "review"
        if (
            skills
            and every_skill_tools > 0
            and state.count("tools_since_skill_review") >= every_skill_tools
        ):
            state["tools_since_skill_review"] = 0
            state.bump("reviews_queued")
            return "skill-review"
        return None

    def flush(self, enabled: bool) -> None:
        if not enabled:
            return
        with self.state() as state:
            due = state.count("turns_since_flush") >= max(self.config.flush_min_turns, 1)
            if due:
                state["turns_since_flush"] = 0
        if due:
            self.queue("flush")

    def stop(self) -> None:
        from pi_hermes_memory.lifecycle.auto_memory import AutoMemory
        from pi_hermes_memory.log import library_logger

        if self.payload.get("stop_hook_active") is True:
            return  # Claude Code continues because of a stop hook: the turn is not over
        with self.state() as state:
            prompt = state.pop("last_prompt", "")
        if not isinstance(prompt, str) or not prompt or not self.settings.auto.capture:
            return
        AutoMemory(
            self.memory(),
            self.settings.auto,
            session_id=self.session_id,
            now=lambda: datetime.now(UTC),
            logger=library_logger(),
        ).after_turn(prompt, success=True)

    def session_end(self) -> None:
        self.flush(self.config.flush_on_shutdown)
        prune_sessions(self.folder, now=time.time())


#: the hook server's Memory for (cwd, environ, config): kept open across calls (ADR 0096)
MemoryFor = Callable[[Path | None, Mapping[str, str], Any], Any]


def run_hook(
    event: str,
    raw: bytes,
    environ: Mapping[str, str],
    *,
    note: str | None = None,
    memory_for: MemoryFor | None = None,
) -> str | None:
    """What the hook prints (None: nothing). Never raises; a failure is one log line.

    `note`: a line for hook.log once its folder is known (why the hook server was not used).
    `memory_for`: where the store comes from (the hook server's open ones); by default each
    call opens the store and closes it."""
    if environ.get(CHILD_ENV):
        return None
    payload = _payload(raw)
    if payload is None or event not in EVENTS:
        return None
    named = payload.get("hook_event_name")
    if isinstance(named, str) and named and named != event:
        return None  # a hook wired to the wrong event: do nothing rather than the wrong thing
    hook: _Hook | None = None
    try:
        hook = _Hook(event, payload, environ, memory_for)
        if note:
            log_line(hook.folder, note)
        handlers: dict[str, Callable[[], str | None]] = {
            "SessionStart": hook.session_start,
            "UserPromptSubmit": hook.user_prompt,
            "PostToolUse": lambda: hook.post_tool() if hook else None,
            "PreCompact": lambda: hook.flush(hook.config.flush_on_compact) if hook else None,
            "Stop": lambda: hook.stop() if hook else None,
            "SessionEnd": lambda: hook.session_end() if hook else None,
        }
        return _answer(event, handlers[event]())
    except Exception as exc:
        line = f"{event}: {type(exc).__name__}: {exc}"
        if hook is None:  # no store folder to log in: one line on stderr
            with contextlib.suppress(OSError, ValueError):
                print(f"pi-hermes-memory hook: {line}"[:300], file=sys.stderr)
        log_line(hook.folder if hook else None, line)
        return None
    finally:
        if hook is not None:
            with contextlib.suppress(Exception):
                hook.close()


# --- the detached worker -------------------------------------------------------------------------


def start_worker(folder: Path, environ: Mapping[str, str], *, cwd: Path | None) -> None:
    """Start `hook --worker` detached (its own session, no terminal, stdio on /dev/null and
    the log); return at once. The worker leaves at once when another one holds the lock."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in environ.items() if k != CHILD_ENV}
    argv = [sys.executable, "-m", "pi_hermes_memory.adapters.cli", "hook", "--worker"]
    if cwd is not None:
        argv += ["--cwd", str(cwd)]
    with open(folder / "worker.log", "ab") as log:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
            cwd=str(folder),
            start_new_session=True,
            close_fds=True,
        )


def read_transcript(path: str | None, *, limit: int = 0) -> tuple[tuple[str, str], ...]:
    """The user and assistant text messages of a Claude Code transcript (JSONL), oldest first,
    the last `limit` (0: all read). Tool calls, tool results and unreadable lines are skipped."""
    if not path:
        return ()
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return ()
    if size > TRANSCRIPT_TAIL_BYTES:
        data = data.split(b"\n", 1)[-1]  # a partial first line
    messages: list[tuple[str, str]] = []
    for line in data.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict) or row.get("type") not in ("user", "assistant"):
            continue
        message = row.get("message")
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        text = _message_text(message.get("content"))
        if role in ("user", "assistant") and text.strip():
            messages.append((str(role), text))
    return tuple(messages[-limit:] if limit > 0 else messages)


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text"))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and block.get("text")
        )
    return ""


@contextlib.contextmanager
def _try_lock(path: Path) -> Iterator[bool]:
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _claim(jobs: Path) -> Path | None:
    """The oldest waiting job, renamed to `.running` (so a new trigger of its kind queues
    anew), or None."""
    waiting = sorted(jobs.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))
    for path in waiting:
        running = path.with_suffix(".running")
        try:
            os.replace(path, running)
        except FileNotFoundError:
            continue
        return running
    return None


def run_worker(folder: Path, environ: Mapping[str, str], *, log: Callable[[str], None]) -> int:
    """Run every queued job, one at a time, while holding the worker lock; the number run.
    A worker that cannot take the lock leaves at once (another one is running)."""
    jobs = folder / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    done = 0
    while True:
        with _try_lock(folder / "worker.lock") as held:
            if not held:
                log("worker: another worker holds the lock; leaving")
                return done
            # a `.running` left by a killed worker runs again
            for stale in jobs.glob("*.running"):
                with contextlib.suppress(OSError):
                    os.replace(stale, stale.with_suffix(".json"))
            while (claimed := _claim(jobs)) is not None:
                job = _read_json(claimed)
                try:
                    log(
                        f"worker: {job.get('kind')} of {job.get('session_id')}: "
                        + _run_job(job, environ)
                    )
                except Exception as exc:  # one job's failure never stops the others
                    log(f"worker: {job.get('kind')} failed: {type(exc).__name__}: {exc}")
                finally:
                    claimed.unlink(missing_ok=True)
                done += 1
        # a job queued while the lock was being released started a worker that left: look
        if not any(jobs.glob("*.json")):
            return done


def _run_job(job: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    from pi_hermes_memory.bootstrap import open_memory
    from pi_hermes_memory.learning.review import (
        ReviewKind,
        ReviewRequest,
        recent,
        run_review,
        status_path,
        write_summary,
    )
    from pi_hermes_memory.lifecycle.session import LifecycleSettings

    kind = ReviewKind(str(job.get("kind")))
    cwd = job.get("cwd")
    session_id = str(job.get("session_id") or "unknown")
    with open_memory(
        cwd=cwd if isinstance(cwd, str) else None, environ=environ, session_id=session_id[:64]
    ) as memory:
        settings = LifecycleSettings.from_config(memory.config)
        keep = (
            settings.flush_recent_messages
            if kind is ReviewKind.FLUSH
            else settings.review_recent_messages
        )
        transcript = job.get("transcript_path")
        messages = recent(
            read_transcript(transcript if isinstance(transcript, str) else None), keep
        )
        extra = job.get("extra")
        applied, skipped = job.get("applied"), job.get("skipped")
        request = ReviewRequest(
            kind=kind,
            session_id=session_id,
            messages=messages,
            timeout_s=settings.timeout_s,
            skills=settings.review_skills_enabled,
            max_adds=settings.review_max_adds,
            extra=extra if isinstance(extra, str) else "",
            applied=applied if isinstance(applied, int) else 0,
            skipped=skipped if isinstance(skipped, int) else 0,
        )
        summary = run_review(memory, request, now=lambda: datetime.now(UTC))
        path = status_path(memory)
        if path is not None and memory.read_only is None:
            write_summary(path, summary)
        return f"{summary.result.value} (applied {summary.applied}, {summary.reason or 'ok'})"
