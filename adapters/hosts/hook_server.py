"""The warm per-user hook server: answers Claude Code's hooks with open stores (ADR 0096).

    python -m pi_hermes_memory.adapters.hosts.hook_server --build ID [--cwd DIR] [--idle-s N]

Started detached by `hook_client` (`spawn`) when no server answers; people need not run it.
One per agent root (the socket and lock named in `hook_client.Place`). It:

- takes the lock first (before any heavy import; waits up to `LOCK_WAIT_S` for a leaving
  server), so only one runs; a socket file left by a killed server is removed and bound anew;
- answers each request on its own thread with the same code as the in-process hook
  (`claude_hooks.run_hook`), the `Memory` of each (project, environment) kept open and reopened
  when the configuration it was opened with changed; requests for one store run one at a time;
- answers `restart` and leaves when a client's build id (version + the package's files)
  differs from its own: the client answers in-process and a new server starts;
- leaves after `idle` seconds without a request (default 600, `$PI_HERMES_MEMORY_HOOK_IDLE_S`),
  when its socket file is gone or replaced, or when its agent root is gone.

Other processes' writes are visible to the next request: the store's caches are checked
against `PRAGMA data_version` on every read (adapters/sqlite/search.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pi_hermes_memory.adapters.hosts.hook_client import (
    CHILD_ENV,
    MAX_STDIN_BYTES,
    PROTOCOL,
    Place,
    socket_place,
)

__all__ = ["IDLE_ENV", "serve", "spawn"]

IDLE_ENV: Final = "PI_HERMES_MEMORY_HOOK_IDLE_S"
DEFAULT_IDLE_S: Final = 600.0
LOCK_WAIT_S: Final = 5.0
#: how often the accept loop looks at its flags (stop, idle, socket file)
TICK_S: Final = 1.0
MAX_STORES: Final = 8
#: environment variables that differ between calls of one session without changing the store
_VOLATILE: Final = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
_MODULE: Final = "pi_hermes_memory.adapters.hosts.hook_server"


def spawn(place: Place, raw: bytes, environ: dict[str, str], build: str) -> None:
    """Start a server detached (its own session; stdout and stderr on the hook log); return
    at once. Nothing is started when the configuration cannot be read (the in-process hook
    logs that)."""
    import subprocess

    from pi_hermes_memory.adapters.files.config_file import load_config
    from pi_hermes_memory.adapters.hosts.claude_hooks import hooks_dir, log_line

    cwd = _payload_cwd(raw)
    try:
        config, _ = load_config(environ=environ, cwd=Path(cwd) if cwd else None)
    except Exception:
        return
    folder = hooks_dir(Path(config.memory_dir))
    argv = [sys.executable, "-m", _MODULE, "--build", build]
    if cwd:
        argv += ["--cwd", cwd]
    env = {k: v for k, v in environ.items() if k != CHILD_ENV}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "hook.log", "ab") as log:
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=place.folder,
                start_new_session=True,
                close_fds=True,
            )
    except OSError as exc:
        log_line(folder, f"hook server: cannot start: {exc}")


def _payload_cwd(raw: bytes) -> str | None:
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) else None


class _Store:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.memory: Any = None
        self.used = time.monotonic()


class Server:
    """The accept loop's state and the open stores."""

    def __init__(self, place: Place, build: str, idle_s: float) -> None:
        self.place = place
        self.build = build
        self.idle_s = idle_s
        self.started = time.time()
        self.last = time.monotonic()
        self.requests = 0
        self.opens = 0
        self.active = 0
        self.stopping = ""
        self.stores: dict[tuple[Any, ...], _Store] = {}
        self.guard = threading.Lock()
        self.log_folder: Path | None = None
        self.inode = -1

    # -- the stores -----------------------------------------------------------------------------

    def _store(self, key: tuple[Any, ...]) -> _Store:
        with self.guard:
            store = self.stores.get(key)
            if store is None:
                store = self.stores[key] = _Store()
                self._evict()
            store.used = time.monotonic()
            return store

    def _evict(self) -> None:
        """Close the least recently used stores beyond MAX_STORES (under `guard`)."""
        while len(self.stores) > MAX_STORES:
            key, old = min(self.stores.items(), key=lambda kv: kv[1].used)
            if not old.lock.acquire(blocking=False):
                return  # in use: try again next time
            try:
                del self.stores[key]
                _close(old.memory)
            finally:
                old.lock.release()

    def _memory_for(self, store: _Store) -> Any:
        def memory_for(cwd: Path | None, environ: Mapping[str, str], config: Any) -> Any:
            if store.memory is not None and store.memory.config != config:
                _close(store.memory)  # the configuration changed since it was opened
                store.memory = None
            if store.memory is None:
                from pi_hermes_memory.bootstrap import open_memory

                store.memory = open_memory(cwd=cwd, environ=environ)
                with self.guard:
                    self.opens += 1
            return store.memory

        return memory_for

    # -- one request ----------------------------------------------------------------------------

    def handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(30)
            header, body = _read_request(conn)
            reply = self._reply(header, body)
            conn.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8"))
        except Exception as exc:
            self.log(f"hook server: request failed: {type(exc).__name__}: {exc}")
        finally:
            conn.close()
            with self.guard:
                self.active -= 1
                self.last = time.monotonic()

    def _reply(self, header: dict[str, Any], body: bytes) -> dict[str, Any]:
        from pi_hermes_memory.adapters.hosts.claude_hooks import run_hook

        if header.get("op") == "status":
            return self.status()
        if header.get("op") != "hook":
            return {"ok": False, "reason": "unknown op"}
        if header.get("protocol") != PROTOCOL or header.get("build") != self.build:
            self.stop(f"a client of other code asked ({header.get('build')}; mine {self.build})")
            return {"ok": False, "restart": True}
        if header.get("agent_root") != self.place.agent_root:
            return {"ok": False, "reason": "another agent root"}
        env = header.get("env")
        environ = (
            {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else dict(os.environ)
        )
        cwd = _payload_cwd(body)
        key = (cwd, frozenset((k, v) for k, v in environ.items() if k not in _VOLATILE))
        store = self._store(key)
        with store.lock:
            answer = run_hook(
                str(header.get("event", "")), body, environ, memory_for=self._memory_for(store)
            )
        with self.guard:
            self.requests += 1
        return {"ok": True, "answer": answer}

    def status(self) -> dict[str, Any]:
        with self.guard:
            return {
                "pid": os.getpid(),
                "build": self.build,
                "started_at": self.started,
                "requests": self.requests,
                "stores": len(self.stores),
                "opens": self.opens,
            }

    def stop(self, why: str) -> None:
        with self.guard:
            if self.stopping:
                return
            self.stopping = why
        self._unlink_socket()  # new clients start a new server at once

    def _unlink_socket(self) -> None:
        with contextlib.suppress(OSError):
            if os.stat(self.place.socket).st_ino == self.inode:
                os.unlink(self.place.socket)

    def log(self, line: str) -> None:
        from pi_hermes_memory.adapters.hosts.claude_hooks import log_line

        log_line(self.log_folder, f"{line} [pid {os.getpid()}]")

    # -- the loop -------------------------------------------------------------------------------

    def run(self, listener: socket.socket) -> str:
        self.inode = os.stat(self.place.socket).st_ino
        listener.settimeout(TICK_S)
        while not self.stopping:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                with self.guard:
                    idle = self.active == 0 and time.monotonic() - self.last >= self.idle_s
                if idle:
                    self.stop(f"idle for {self.idle_s:g} s")
                elif not self._socket_is_mine():
                    self.stop("its socket file is gone or replaced")
                elif not os.path.isdir(self.place.agent_root):
                    self.stop("its agent root is gone")
                continue
            with self.guard:
                self.active += 1
                self.last = time.monotonic()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
        listener.close()
        deadline = time.monotonic() + 30
        while self.active and time.monotonic() < deadline:  # let answers in flight finish
            time.sleep(0.05)
        for store in list(self.stores.values()):
            with store.lock:
                _close(store.memory)
        return self.stopping

    def _socket_is_mine(self) -> bool:
        try:
            return os.stat(self.place.socket).st_ino == self.inode
        except OSError:
            return False


def _close(memory: Any) -> None:
    if memory is not None:
        with contextlib.suppress(Exception):
            memory.close()


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], bytes]:
    chunks: list[bytes] = []
    size = 0
    limit = MAX_STDIN_BYTES + (1 << 20)  # the payload and the header (its environment)
    while size <= limit:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    line, _, body = data.partition(b"\n")
    header = json.loads(line.decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("the request header is not a JSON object")
    return header, body


def _take_lock(path: str) -> int | None:
    """The server lock's descriptor (held until exit), or None when another server keeps it
    past LOCK_WAIT_S."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    waited_until = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() >= waited_until:
                os.close(fd)
                return None
            time.sleep(0.1)


def _option(argv: list[str], name: str) -> str | None:
    if name in argv:
        at = argv.index(name)
        if at + 1 < len(argv):
            return argv[at + 1]
    return None


def serve(argv: list[str]) -> int:
    environ = os.environ
    place, refusal = socket_place(environ)
    if place is None:
        print(f"pi-hermes-memory hook server: {refusal}", file=sys.stderr)
        return 0
    lock = _take_lock(place.lock)
    if lock is None:
        return 0  # another server runs
    build = _option(argv, "--build") or ""
    try:
        idle_s = float(_option(argv, "--idle-s") or environ.get(IDLE_ENV) or DEFAULT_IDLE_S)
    except ValueError:
        idle_s = DEFAULT_IDLE_S
    cwd = _option(argv, "--cwd")
    server = Server(place, build, idle_s)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(place.socket)  # we hold the lock: a socket file here is a dead server's
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        listener.bind(place.socket)
    finally:
        os.umask(old)
    listener.listen(64)
    _warm(server, cwd, dict(environ))
    server.log(f"hook server: listening on {place.socket} (build {build})")
    why = server.run(listener)
    server.log(f"hook server: leaving: {why}; {server.requests} requests answered")
    os.close(lock)
    return 0


def _warm(server: Server, cwd: str | None, environ: dict[str, str]) -> None:
    """Import what the hooks use and open the starting client's store, so the next hook
    (the starting one answers in-process) finds it open."""
    try:
        from pi_hermes_memory.adapters.files.config_file import load_config
        from pi_hermes_memory.adapters.hosts.claude_hooks import hooks_dir
        from pi_hermes_memory.domain.learning import corrections  # noqa: F401
        from pi_hermes_memory.lifecycle import auto_memory, session  # noqa: F401

        path = Path(cwd) if cwd else None
        config, _ = load_config(environ=environ, cwd=path)
        server.log_folder = hooks_dir(Path(config.memory_dir))
        key = (cwd, frozenset((k, v) for k, v in environ.items() if k not in _VOLATILE))
        store = server._store(key)
        with store.lock:
            server._memory_for(store)(path, environ, config)
    except Exception as exc:  # a hook opens it (and reports) on its own
        server.log(f"hook server: warm-up failed: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
