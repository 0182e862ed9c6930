"""The JSON-lines bridge between the Pi extension and this library (issue 30 §1, ADR 0091).

One long-lived process per Pi session (`pi-hermes-memory bridge`). Each stdin line is a
request `{"id": …, "method": "…", "params": {…}}`; each answer is one stdout line, either
`{"id": …, "result": …}` or `{"id": …, "error": {"code": "…", "message": "…"}}`. Requests are
answered in order, one at a time. Nothing else is ever written to stdout: logs and stray
prints go to stderr. A line that is not JSON, not an object, names an unknown method or
carries bad params gets an error answer; the process carries on. End of input ends the
session as `shutdown` would (flush, bounded wait) and closes the store.

Methods (params → result):

    hello            {}                          → {"version", "protocol", "child"}
    tools            {}                          → {"tools": [{"name", "label", "description",
                                                     "parameters"}]}
    call             {"name", "arguments"}       → the tool's JSON result
    session_start    {"session_id"?, "cwd"?}     → {"session_id", "project"}
    before_agent_start {"prompt"}                → {"system_prompt", "recall"}
    user_message     {"text"}                    → {}
    assistant_message {"text"}                   → {}
    tool_call        {"name"}                    → {}
    agent_end        {"user_text", "assistant_text", "success"?} → {"captured": n}
    before_compact   {}                          → {"flushed": bool}
    shutdown         {"timeout"?}                → {"finished": bool}
    ping             {}                          → {}

The store is opened on the first request that needs it, for the project of `session_start`'s
`cwd` (else the process's own). A store that cannot be opened gives `unavailable` errors
(tried again on the next request), so the host can say "memory unavailable: …" and go on.
Started with PI_HERMES_MEMORY_CHILD set (inside one of our own LLM children), the bridge
offers no tools and every lifecycle method does nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Final

from pi_hermes_memory.adapters.providers.command_llm import CHILD_ENV
from pi_hermes_memory.errors import BridgeError

__all__ = ["PROTOCOL_VERSION", "Bridge", "BridgeError", "serve"]

PROTOCOL_VERSION: Final = 1
#: the longest request line read (a larger one is answered with an error and skipped)
MAX_LINE_BYTES: Final = 4 * 1024 * 1024
#: seconds `shutdown` waits for background work unless the request says otherwise
SHUTDOWN_WAIT_S: Final = 10.0


def _text(params: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = params.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BridgeError("invalid_params", f"params.{key} must be a string")
    return value


class Bridge:
    """The state of one host session: the store (opened lazily) and its AgentSession."""

    def __init__(
        self,
        *,
        cwd: Path,
        environ: Mapping[str, str],
        opener: Callable[[Path], Any] | None = None,
    ) -> None:
        self._cwd = cwd
        self.child = bool(environ.get(CHILD_ENV))
        self._opener = opener or _open_store
        self._memory: Any = None
        self._session: Any = None
        self._system_prompt: str | None = None
        self.methods: dict[str, Callable[[Mapping[str, Any]], Any]] = {
            "hello": self.hello,
            "ping": lambda _params: {},
            "tools": self.tools,
            "call": self.call,
            "session_start": self.session_start,
            "before_agent_start": self.before_agent_start,
            "user_message": self.user_message,
            "assistant_message": self.assistant_message,
            "tool_call": self.tool_call,
            "agent_end": self.agent_end,
            "before_compact": self.before_compact,
            "shutdown": self.shutdown,
        }

    # -- the store ------------------------------------------------------------------------

    def memory(self) -> Any:
        if self._memory is None:
            try:
                self._memory = self._opener(self._cwd)
            except Exception as exc:  # any failure to open is the host's "unavailable"
                raise BridgeError(
                    "unavailable", f"cannot open the memory store: {type(exc).__name__}: {exc}"
                ) from exc
        return self._memory

    def session(self, session_id: str | None = None) -> Any:
        if self._session is None:
            self._session = self.memory().session(session_id or None)
        return self._session

    def _note_call(self) -> None:
        """Touch `<memory dir>/hooks/pi/last-call` once per turn: `doctor` shows when the
        extension last reached this library (best effort; a read-only folder only hides it)."""
        with contextlib.suppress(Exception):
            folder = Path(self.memory().config.memory_dir) / "hooks" / "pi"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "last-call").touch()

    def close(self) -> None:
        """End of input: the session ends as `shutdown` would, then the store closes."""
        if self._session is not None:
            self._session.shutdown(timeout=SHUTDOWN_WAIT_S)
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    # -- methods --------------------------------------------------------------------------

    def hello(self, _params: Mapping[str, Any]) -> dict[str, Any]:
        from pi_hermes_memory import __version__

        return {"version": __version__, "protocol": PROTOCOL_VERSION, "child": self.child}

    def tools(self, _params: Mapping[str, Any]) -> dict[str, Any]:
        if self.child:
            return {"tools": []}
        rendered = self.memory().tool_schemas("mcp")
        return {
            "tools": [
                {
                    "name": t["name"],
                    "label": t.get("title") or t["name"],
                    "description": t["description"],
                    "parameters": t["inputSchema"],
                }
                for t in rendered
            ]
        }

    def call(self, params: Mapping[str, Any]) -> Any:
        name = _text(params, "name")
        if self.child:
            raise BridgeError("unavailable", "memory tools are off inside a memory LLM child")
        return self.memory().call_tool(name, params.get("arguments", {}))

    def session_start(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session_id = _text(params, "session_id", required=False) or None
        cwd = _text(params, "cwd", required=False)
        if cwd and self._memory is None:
            self._cwd = Path(cwd)
        if self.child:
            return {"session_id": session_id, "project": None}
        if self._session is not None and session_id and session_id != self._session.session_id:
            self._session = self._session.new_session(session_id)
            self._system_prompt = None
        session = self.session(session_id)
        return {"session_id": session.session_id, "project": self.memory().project}

    def before_agent_start(self, params: Mapping[str, Any]) -> dict[str, Any]:
        prompt = _text(params, "prompt", required=False)
        if self.child:
            return {"system_prompt": "", "recall": None}
        session = self.session()
        self._note_call()
        # the memory block is frozen for the session (the seed's snapshot): built once
        if self._system_prompt is None:
            self._system_prompt = session.system_prompt()
        return {"system_prompt": self._system_prompt, "recall": session.before_turn(prompt)}

    def user_message(self, params: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(params, "text")
        if not self.child:
            self.session().user_message(text)
        return {}

    def assistant_message(self, params: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(params, "text")
        if not self.child:
            self.session().assistant_message(text)
        return {}

    def tool_call(self, params: Mapping[str, Any]) -> dict[str, Any]:
        name = _text(params, "name")
        if not self.child:
            self.session().tool_call(name)
        return {}

    def agent_end(self, params: Mapping[str, Any]) -> dict[str, Any]:
        user_text = _text(params, "user_text", required=False)
        assistant_text = _text(params, "assistant_text", required=False)
        success = params.get("success", True)
        if not isinstance(success, bool):
            raise BridgeError("invalid_params", "params.success must be true or false")
        if self.child:
            return {"captured": 0}
        outcomes = self.session().after_turn(user_text, assistant_text, success=success)
        return {"captured": len(outcomes)}

    def before_compact(self, _params: Mapping[str, Any]) -> dict[str, Any]:
        if self.child:
            return {"flushed": False}
        return {"flushed": bool(self.session().before_compact())}

    def shutdown(self, params: Mapping[str, Any]) -> dict[str, Any]:
        timeout = params.get("timeout", SHUTDOWN_WAIT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
            raise BridgeError("invalid_params", "params.timeout must be a number of seconds")
        if self.child or self._session is None:
            return {"finished": True}
        return {"finished": bool(self._session.shutdown(timeout=min(float(timeout), 60.0)))}

    # -- one request ----------------------------------------------------------------------

    def answer(self, line: bytes) -> dict[str, Any]:
        """The answer to one request line (never raises)."""
        request_id: Any = None
        try:
            try:
                request = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                raise BridgeError("parse_error", f"the line is not JSON: {exc}") from exc
            if not isinstance(request, dict):
                raise BridgeError("invalid_request", "a request is a JSON object")
            request_id = request.get("id")
            method = request.get("method")
            params = request.get("params", {})
            if params is None:
                params = {}
            if not isinstance(method, str):
                raise BridgeError("invalid_request", "request.method must be a string")
            if not isinstance(params, dict):
                raise BridgeError("invalid_params", "request.params must be a JSON object")
            handler = self.methods.get(method)
            if handler is None:
                raise BridgeError(
                    "unknown_method",
                    f"unknown method {method[:80]!r}; methods: {', '.join(self.methods)}",
                )
            return {"id": request_id, "result": handler(params)}
        except BridgeError as exc:
            return {"id": request_id, "error": {"code": exc.code, "message": exc.message}}
        except Exception as exc:  # the host gets an answer, never a dead bridge
            print(f"pi-hermes-memory bridge: {type(exc).__name__}: {exc}", file=sys.stderr)
            return {
                "id": request_id,
                "error": {"code": "internal", "message": f"{type(exc).__name__}: {exc}"},
            }


def _open_store(cwd: Path) -> Any:
    import pi_hermes_memory

    return pi_hermes_memory.open(cwd=str(cwd))


def serve(
    stdin: IO[bytes],
    stdout: IO[bytes],
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    opener: Callable[[Path], Any] | None = None,
) -> int:
    """Answer request lines from `stdin` on `stdout` until end of input; 0."""
    bridge = Bridge(
        cwd=cwd or Path.cwd(),
        environ=os.environ if environ is None else environ,
        opener=opener,
    )
    try:
        while True:
            line = stdin.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip the rest of the long line
                    line = stdin.readline(MAX_LINE_BYTES)
                reply: dict[str, Any] = {
                    "id": None,
                    "error": {
                        "code": "invalid_request",
                        "message": f"a request line is at most {MAX_LINE_BYTES} bytes",
                    },
                }
            elif not line.strip():
                continue
            else:
                reply = bridge.answer(line)
            stdout.write(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")
            stdout.flush()
    finally:
        bridge.close()
    return 0
