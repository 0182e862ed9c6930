"""The thin Claude Code hook: ask the warm hook server, else answer in-process (ADR 0096).

    python -m pi_hermes_memory.adapters.hosts.hook_client EVENT [--deadline-ms N]
    python -m pi_hermes_memory.adapters.hosts.hook_client --status

`setup claude-code` writes this command. It imports only the standard library (json, os,
socket, sys, time; fcntl on the fallback path) until it must answer in-process: a hook that
the server answers costs one interpreter start, not the CLI's imports and a store open.

1. `PI_HERMES_MEMORY_CHILD` set (an LLM child of this library): exit 0 at once.
2. The socket of this agent root (`socket_place`): `$XDG_RUNTIME_DIR/pi-hermes-memory/`, else
   `<tmp>/pi-hermes-memory-<uid>/`, a folder we own with no group/other access (anything else
   is refused: the hook answers in-process and logs why); the file is named by a hash of the
   resolved agent root.
3. Connected: the request (event, the client's version and build id, its environment, the raw
   stdin) and the answer, all within the event's deadline (`DEADLINES`; `--deadline-ms` or
   `$PI_HERMES_MEMORY_HOOK_DEADLINE_MS`). Past the deadline (a stuck or busy server): print
   nothing, exit 0 (the server still finishes the request: a count or capture is not lost).
4. No server (no socket, a stale one, a refused folder) or a server of other code ("restart":
   it exits): answer in-process with `claude_hooks.run_hook` exactly as `pi-hermes-memory hook
   EVENT` does, after starting a server detached when none is starting (its lock is free). No
   call waits for a server to start.

Exit status is always 0; nothing here may fail the user's turn.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any, Final

#: same value as claude_hooks.CHILD_ENV (not imported: that module is not light)
CHILD_ENV: Final = "PI_HERMES_MEMORY_CHILD"
DEADLINE_ENV: Final = "PI_HERMES_MEMORY_HOOK_DEADLINE_MS"
AGENT_DIR_ENV: Final = "PI_CODING_AGENT_DIR"
PROTOCOL: Final = 1
MAX_STDIN_BYTES: Final = 4 << 20
MAX_REPLY_BYTES: Final = 16 << 20
#: AF_UNIX paths are limited to 108 bytes (with the terminating NUL) on Linux
MAX_SOCKET_PATH: Final = 100
#: milliseconds a hook waits for the server, per event: recall is the issue's budget (300 ms
#: p95); SessionStart's answer (the policy block) matters more than speed and may open a store
DEADLINES: Final[dict[str, int]] = {
    "UserPromptSubmit": 250,
    "PostToolUse": 250,
    "SessionStart": 5000,
    "PreCompact": 1000,
    "Stop": 1000,
    "SessionEnd": 1000,
}
DEFAULT_DEADLINE_MS: Final = 1000
EXIT_OK: Final = 0


class Place:
    """Where the server of one agent root listens: its socket and its lock file."""

    def __init__(self, folder: str, agent_root: str) -> None:
        name = f"hook-{_fnv1a(agent_root):016x}"
        self.folder = folder
        self.agent_root = agent_root
        self.socket = os.path.join(folder, name + ".sock")
        self.lock = os.path.join(folder, name + ".lock")


def _fnv1a(text: str) -> int:
    """A stable 64-bit hash (hashlib costs a few ms to import; the server checks the agent
    root it is asked about, so a collision could only cost an in-process answer)."""
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def agent_root(environ: dict[str, str] | os._Environ[str]) -> str:
    """The resolved agent root, as `resolve_agent_root` finds it (the process's cwd for a
    relative `$PI_CODING_AGENT_DIR`; setup writes an absolute one)."""
    home = environ.get("HOME", "")
    override = environ.get(AGENT_DIR_ENV, "")
    if override.strip():
        if home and (override == "~" or override.startswith("~/")):
            override = os.path.join(home, override[2:])
        root = os.path.join(os.getcwd(), os.path.expanduser(override))
    else:
        root = os.path.join(home or os.path.expanduser("~"), ".pi", "agent")
    return os.path.realpath(root)


def socket_place(environ: dict[str, str] | os._Environ[str]) -> tuple[Place | None, str]:
    """The server's place, or None and why it is refused. The folder is created 0700; one
    that is not a real folder of ours, or that others may enter, is refused (a socket there
    could be someone else's)."""
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        folder = os.path.join(runtime, "pi-hermes-memory")
    else:
        tmp = environ.get("TMPDIR", "")
        base = tmp if tmp and os.path.isabs(tmp) else "/tmp"
        folder = os.path.join(base, f"pi-hermes-memory-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return None, f"cannot create the socket folder {folder}: {exc}"
    try:
        st = os.lstat(folder)
    except OSError as exc:
        return None, f"cannot read the socket folder {folder}: {exc}"
    if (st.st_mode & 0o170000) != 0o040000:  # S_ISDIR of lstat: a symlink is not
        return None, f"socket folder {folder} is not a folder (a symlink?); refused"
    if st.st_uid != os.getuid():
        return None, f"socket folder {folder} is owned by uid {st.st_uid}, not us; refused"
    if st.st_mode & 0o077:
        return None, f"socket folder {folder} is open to others ({st.st_mode & 0o777:o}); refused"
    try:
        place = Place(folder, agent_root(environ))
    except (OSError, ValueError) as exc:
        return None, f"no agent root: {exc}"
    if len(place.socket.encode()) > MAX_SOCKET_PATH:
        return None, f"socket path {place.socket} is too long for a Unix socket"
    return place, ""


def build_id() -> str:
    """This code's identity: the package's version, the interpreter, and the path, size and
    mtime of every Python file of the package (an upgrade or an edit changes it). About 3 ms
    for the ~300 files."""
    import pi_hermes_memory

    root = os.path.dirname(os.path.abspath(pi_hermes_memory.__file__))
    value = _fnv1a(f"{pi_hermes_memory.__version__}|{sys.version}|{root}")
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                mixed = (value ^ _fnv1a(name)) + st.st_mtime_ns + st.st_size
                value = (mixed * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{pi_hermes_memory.__version__}+{value:016x}"


# --- talking to the server ------------------------------------------------------------------------

#: what `ask` returns besides a reply
NO_SERVER: Final = "no-server"
TIMED_OUT: Final = "timed-out"


def ask(place: Place, header: dict[str, Any], body: bytes, deadline: float) -> Any:
    """The server's reply (a dict), NO_SERVER (nobody listens: no socket, a stale one, the
    connection dropped before a reply) or TIMED_OUT (`deadline`, a monotonic time, passed)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            conn.connect(place.socket)
        except (FileNotFoundError, ConnectionRefusedError):
            return NO_SERVER
        line = json.dumps(header, ensure_ascii=False).encode("utf-8") + b"\n"
        _timed(conn, deadline)
        conn.sendall(line + body)
        conn.shutdown(socket.SHUT_WR)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_REPLY_BYTES:
            _timed(conn, deadline)
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except TimeoutError:
        return TIMED_OUT
    except OSError:
        return NO_SERVER  # reset or broken: the server went away
    finally:
        conn.close()
    try:
        reply = json.loads(b"".join(chunks).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return NO_SERVER
    return reply if isinstance(reply, dict) else NO_SERVER


def _timed(conn: socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    conn.settimeout(left)


def _deadline_ms(event: str, argv: list[str], environ: os._Environ[str]) -> int:
    text = environ.get(DEADLINE_ENV, "")
    if "--deadline-ms" in argv:
        at = argv.index("--deadline-ms")
        text = argv[at + 1] if at + 1 < len(argv) else ""
    try:
        value = int(text)
    except ValueError:
        return DEADLINES.get(event, DEFAULT_DEADLINE_MS)
    return value if value > 0 else DEADLINES.get(event, DEFAULT_DEADLINE_MS)


def _write(answer: object) -> None:
    if isinstance(answer, str) and answer:
        try:
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def _server_free(place: Place) -> bool:
    """True when no server holds the lock (none runs or starts): ours to start one."""
    import fcntl

    try:
        fd = os.open(place.lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases the lock
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    environ = os.environ
    if environ.get(CHILD_ENV):
        return EXIT_OK
    if args[:1] == ["--status"]:
        return _status(environ)
    event = args[0] if args and not args[0].startswith("-") else ""
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES)
    except (OSError, ValueError):
        return EXIT_OK
    started = time.monotonic()
    deadline = started + _deadline_ms(event, args, environ) / 1000
    place, refusal = socket_place(environ)
    build = ""
    start_server = False
    if place is not None:
        build = build_id()
        header = {
            "op": "hook",
            "protocol": PROTOCOL,
            "event": event,
            "build": build,
            "agent_root": place.agent_root,
            "env": dict(environ),
        }
        reply = ask(place, header, raw, deadline)
        if reply == TIMED_OUT:
            return EXIT_OK  # never block the turn: the server finishes the work on its own
        if isinstance(reply, dict) and reply.get("ok") is True:
            _write(reply.get("answer"))
            return EXIT_OK
        # one of other code is leaving (ours waits for its lock), or none answers: start
        # ours unless one holds the lock (it is starting)
        restart = isinstance(reply, dict) and reply.get("restart") is True
        start_server = restart or _server_free(place)
    return _in_process(event, raw, environ, place if start_server else None, build, refusal)


def _in_process(
    event: str,
    raw: bytes,
    environ: os._Environ[str],
    start: Place | None,
    build: str,
    refusal: str,
) -> int:
    """The old way (one process does the work), after starting a server when `start`."""
    from pi_hermes_memory.adapters.hosts import claude_hooks

    if start is not None:
        from pi_hermes_memory.adapters.hosts.hook_server import spawn

        spawn(start, raw, dict(environ), build)
    note = f"hook server not used: {refusal}" if refusal else None
    _write(claude_hooks.run_hook(event, raw, environ, note=note))
    return EXIT_OK


def _status(environ: os._Environ[str]) -> int:
    """The server's status as JSON (`{"running": false}` when none answers)."""
    place, refusal = socket_place(environ)
    if place is None:
        print(json.dumps({"running": False, "refused": refusal}))
        return EXIT_OK
    reply = ask(place, {"op": "status", "protocol": PROTOCOL}, b"", time.monotonic() + 2)
    if isinstance(reply, dict):
        print(json.dumps({"running": True, "socket": place.socket, **reply}))
    else:
        print(json.dumps({"running": False, "socket": place.socket, "reason": reply}))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
