"""The `Completer` port over a child process: a configured argv, the prompt on stdin, the
reply on stdout (the `command` and `pi` providers; docs/llm-protocol.md).

- argv is a list, never a shell line (no `shell=True`, nothing is interpolated).
- stdin receives `join_prompt(system, user)` as UTF-8: the system prompt, one blank line, the
  user prompt. A child that exits without reading it all (EPIPE) is not an error by itself.
- The child runs in its own session (POSIX `start_new_session`), so the timeout stops the
  whole process group: SIGTERM, then SIGKILL after a short grace. On Windows the child gets
  its own process group and is terminated (`Popen.kill`); its own children may survive.
- stdout is read incrementally and capped (`max_reply_bytes`): one byte over and the group is
  stopped, the reply dropped (`too-large`). stderr is drained, and its first bytes are kept
  for the error message (clipped by `domain.echo.shown`, which also withholds anything the
  content scanner takes for a secret).
- Every failure is one `CompletionFailed` (`spawn`, `timeout`, `exit`, `too-large`); none
  hangs: the call returns within the timeout plus about two graces.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Final

from pi_hermes_memory.config.settings import DEFAULT_LLM_MAX_REPLY_BYTES
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, InvalidArgument
from pi_hermes_memory.learning.llm import checked_timeout
from pi_hermes_memory.log import library_logger

__all__ = ["CHILD_ENV", "STDERR_SHOWN_CHARS", "CommandCompleter", "join_prompt"]

#: characters of the child's stderr an error message shows
STDERR_SHOWN_CHARS: Final = 500
_STDERR_KEPT_BYTES: Final = 8192
_CHUNK: Final = 65536
_POSIX: Final = os.name == "posix"


def join_prompt(system: str, user: str) -> str:
    """What the child reads on stdin: the system prompt, a blank line, the user prompt."""
    return f"{system.rstrip()}\n\n{user.strip()}\n"


class _Output:
    """The child's stdout (capped) and stderr (first bytes kept), read by two threads."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.reply = bytearray()
        self.stderr = bytearray()
        self.too_large = False
        #: stdout reached EOF, failed, or went over the cap
        self.stdout_done = threading.Event()

    def read_stdout(self, stream: IO[bytes]) -> None:
        try:
            while chunk := stream.read1(_CHUNK):  # type: ignore[attr-defined]
                if len(self.reply) + len(chunk) > self.cap:
                    self.too_large = True
                    return
                self.reply += chunk
        except (OSError, ValueError):
            pass
        finally:
            self.stdout_done.set()
            with contextlib.suppress(OSError):
                stream.close()  # this thread owns the pipe: nobody reads a closed/reused fd

    def read_stderr(self, stream: IO[bytes]) -> None:
        try:
            while chunk := stream.read1(_CHUNK):  # type: ignore[attr-defined]
                room = _STDERR_KEPT_BYTES - len(self.stderr)
                if room > 0:
                    self.stderr += chunk[:room]
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                stream.close()


def _write_stdin(stream: IO[bytes], data: bytes) -> None:
    try:
        stream.write(data)
    except (BrokenPipeError, ConnectionResetError, OSError, ValueError):
        pass  # the child exited or closed stdin early: its exit status and output decide
    finally:
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def _thread(target: Callable[..., None], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True, name="llm-child-io")
    thread.start()
    return thread


#: set in the environment of every LLM child process; this library's host integrations (the Pi
#: extension, `pi-hermes-memory hook`) do nothing when it is set
CHILD_ENV = "PI_HERMES_MEMORY_CHILD"


class CommandCompleter:
    """`complete(system, user, timeout=...)` by running `argv` once per call."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        max_reply_bytes: int = DEFAULT_LLM_MAX_REPLY_BYTES,
        environ: Mapping[str, str] | None = None,
        cwd: str | None = None,
        grace: float = 2.0,
        logger: Any = None,
    ) -> None:
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise InvalidArgument("argv must be a non-empty list of strings (no shell line)")
        if max_reply_bytes < 1:
            raise InvalidArgument("max_reply_bytes must be positive")
        self._argv = list(argv)
        self._cap = max_reply_bytes
        # every child is marked, so that a host program run as our LLM (`pi -p`, `claude -p`)
        # sees it and its hooks/extension of this library do nothing (no recursion; issue 30)
        self._environ = {**(os.environ if environ is None else environ), CHILD_ENV: "1"}
        self._cwd = cwd
        self._grace = max(0.05, grace)
        self._log = logger or library_logger()
        self.source = os.path.basename(self._argv[0]) or self._argv[0]

    def __repr__(self) -> str:  # argv may be long; the program name says enough
        return f"CommandCompleter(source={self.source!r})"

    def _fail(self, reason: CompletionFailure, detail: str, **fields: Any) -> CompletionFailed:
        # debug: the feature that called (review, consolidation, ...) reports the failure once
        self._log.debug("llm.completion_failed", reason=reason.value, source=self.source, **fields)
        return CompletionFailed(reason, self.source, detail)

    def _spawn(self) -> subprocess.Popen[bytes]:
        options: dict[str, Any] = (
            {"start_new_session": True}
            if _POSIX
            else {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
        )
        try:
            return subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._environ,
                cwd=self._cwd,
                close_fds=True,
                **options,
            )
        except OSError as exc:  # not found, not executable; the message names no path
            detail = exc.strerror or type(exc).__name__
            raise self._fail(CompletionFailure.SPAWN, f"cannot start it ({detail})") from None

    def _stop(self, child: subprocess.Popen[bytes]) -> None:
        """Stop the child and everything it started: SIGTERM to the group, a grace, SIGKILL."""
        if not _POSIX:
            with contextlib.suppress(OSError):
                child.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(self._grace)
            return
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(self._grace)
        # Always: the leader may be gone while its children, which ignored SIGTERM, live on.
        # The group id cannot be reused while any member of the group exists.
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(self._grace)

    def _stderr_text(self, output: _Output) -> str:
        text = output.stderr.decode("utf-8", errors="replace").strip()
        return shown(text, STDERR_SHOWN_CHARS) if text else "no stderr"

    def complete(self, system: str, user: str, *, timeout: float) -> str:
        limit = checked_timeout(timeout)
        started = time.monotonic()
        deadline = started + limit
        data = join_prompt(system, user).encode("utf-8", errors="replace")
        child = self._spawn()
        output = _Output(self._cap)
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        _thread(_write_stdin, child.stdin, data)
        _thread(output.read_stdout, child.stdout)
        stderr_reader = _thread(output.read_stderr, child.stderr)
        finished = output.stdout_done.wait(limit)
        if finished and not output.too_large:
            try:
                child.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                finished = False
        if not finished or output.too_large:
            self._stop(child)
            if output.too_large:
                raise self._fail(
                    CompletionFailure.TOO_LARGE,
                    f"the reply exceeded {self._cap:,} bytes; the process was stopped",
                    limit_bytes=self._cap,
                )
            raise self._fail(
                CompletionFailure.TIMEOUT,
                f"no complete reply within {limit:g} s; the process group was stopped",
                timeout_s=limit,
            )
        stderr_reader.join(self._grace)
        code = child.returncode
        if code != 0:
            status = f"exit status {code}"
            if code < 0:
                with contextlib.suppress(ValueError):
                    status = f"killed by {signal.Signals(-code).name}"
            raise self._fail(
                CompletionFailure.EXIT, f"{status}; {self._stderr_text(output)}", exit=code
            )
        self._log.debug(
            "llm.completed",
            source=self.source,
            reply_bytes=len(output.reply),
            seconds=round(time.monotonic() - started, 3),
        )
        return output.reply.decode("utf-8", errors="replace")
