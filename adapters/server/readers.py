"""Reader processes: read-only REST and MCP calls answered beside the store's writer (ADR 0083).

A `Memory` is not thread-safe and a search is mostly Python (measured: two threads with a
`Memory` each reach 1.14x one thread's CPU, the GIL), so concurrent reads need processes. A
small pool of spawned processes, shared by every store, each keeps its own `StoreCache` (one
`Memory` and SQLite connection per (project, agent), least recently used closed) and answers
one read at a time over its own pipe, which the event loop watches (no thread in between:
half the server CPU per call of a `ProcessPoolExecutor`, 75 vs 158 us measured).

The server's own `StoreCache` stays the only writer: before a read, a reader asks its store
whether it is `settled` (a stat per Markdown file); a hand edit to import sends the read back
to the writer, which imports it and answers. A read started after a write was acknowledged
sees it: the write committed before its answer was sent, and a reader reads the journal and
the search tables on a fresh SQLite snapshot.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import multiprocessing
import pickle
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_hermes_memory.adapters.server.app import ServerSettings, StoreCache


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the platform has one (a
    container or `taskset` may allow fewer than the machine has), else the machine's count."""
    import os

    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def default_readers(cpus: int | None = None) -> int:
    """One reader where the server may use 2 CPUs or more, none on one (ADR 0117, superseding
    ADR 0087's default). Measured on a quiet 2-core machine, one reader costs a single client
    nothing and takes 16 clients from ~1.4x to ~2x one client's search throughput; on one
    CPU a reader can only take turns with the server."""
    return 1 if (usable_cpus() if cpus is None else cpus) >= 2 else 0


class Answer:
    """A read's answer as the JSON bytes the server sends (serialised once, where it was
    computed), with the fields the server's status mapping looks at."""

    __slots__ = ("body", "message", "status", "success")

    def __init__(self, value: Any) -> None:
        from pi_hermes_memory.adapters.server.app import dumps

        self.body: bytes = dumps(value)
        head = value if isinstance(value, dict) else {}
        self.success: Any = head.get("success")
        self.status: Any = head.get("status")
        self.message: Any = head.get("message")

    def __getstate__(self) -> tuple[bytes, Any, Any, Any]:
        return self.body, self.success, self.status, self.message

    def __setstate__(self, state: tuple[bytes, Any, Any, Any]) -> None:
        self.body, self.success, self.status, self.message = state

    def get(self, key: str, default: Any = None) -> Any:
        """`success`, `status` or `message`, as on the result mapping (`result_status`)."""
        value = {"success": self.success, "status": self.status, "message": self.message}.get(key)
        return default if value is None else value

    @property
    def null(self) -> bool:
        return self.body == b"null"

    def value(self) -> Any:
        return json.loads(self.body)


def _tool(memory: Any, name: str, arguments: dict[str, Any]) -> Any:
    return dict(memory.call_tool(name, arguments))


def _narrowed(memory: Any, body: dict[str, Any], scope: str | None) -> Any:
    from pi_hermes_memory.adapters.server.app import _narrowed_search

    return _narrowed_search(memory, body, scope)


def _page(
    memory: Any,
    target: str | None,
    history: bool,
    scope: str | None,
    category: str | None,
    limit: int,
    offset: int,
) -> Any:
    views = memory.entries(target, include_history=history, scope=scope)
    if category is not None:
        views = [v for v in views if category in (v.category, v.kind)]
    return {
        "entries": views[offset : offset + limit],
        "total": len(views),
        "limit": limit,
        "offset": offset,
    }


def _stats(memory: Any) -> Any:
    from pi_hermes_memory.memory.porting import stats

    return stats(memory)


def _get(memory: Any, entry_id: str) -> Any:
    view = memory.get(entry_id)
    return view


#: the read-only operations, by name (a name pickles; a closure does not)
OPERATIONS: dict[str, Callable[..., Any]] = {
    "tool": _tool,
    "narrowed_search": _narrowed,
    "list": _page,
    "stats": _stats,
    "get": _get,
}

#: MCP tools a reader may answer (the tools whose schema says readOnlyHint and that touch
#: only the memory tables)
READ_ONLY_TOOLS = frozenset({"memory_search"})

# -- in a reader process -------------------------------------------------------------------

_cache: StoreCache | None = None

#: the answer when a read needs a write first (a hand edit to import, a render to finish)
WRITER = "writer"
#: a reader's first message: imported and ready to answer (reads go to the writer before)
READY = ("ready",)
#: the request that opens a store in a reader before reads of it are sent there, and its answer
WARM = "warm"


def _read(project: str | None, agent: str | None, op: str, args: tuple[Any, ...]) -> Any:
    """("ok", value), (WRITER,) or ("error", status, message, error type): never raises, so
    that no library exception has to pickle."""
    from pi_hermes_memory.adapters.server.app import ApiError, error_status

    assert _cache is not None

    def work(memory: Any) -> Any:
        if op == WARM:  # opened (a hand edit saved meanwhile imported, as any process would)
            return (WARM,)
        if not memory.settled():
            return (WRITER,)
        return ("ok", Answer(OPERATIONS[op](memory, *args)))

    try:
        return _cache.run(project, agent, work)
    except ApiError as exc:
        return ("error", exc.status, str(exc), type(exc).__name__)
    except Exception as exc:
        return ("error", error_status(exc), str(exc), type(exc).__name__)


def _serve(conn: Connection, settings: ServerSettings) -> None:
    """A reader process: answer requests from `conn` one at a time until the server closes
    its end (or dies: the pipe then reads as closed too)."""
    global _cache
    import signal

    from pi_hermes_memory.adapters.server.app import StoreCache

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which closes us
    _cache = StoreCache(settings)
    try:
        import pi_hermes_memory.bootstrap  # noqa: F401  (what opening a store needs first)

        try:
            conn.send_bytes(pickle.dumps(READY, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # the server is gone already
            return
        while True:
            try:
                request = conn.recv_bytes()
            except (EOFError, OSError):
                return
            answer = _read(*pickle.loads(request))
            try:
                conn.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                return
    finally:
        _cache.close()


# -- in the server ---------------------------------------------------------------------------


class _Reader:
    """One reader process, the server's end of its pipe, and the reads sent to it whose
    answers have not come back yet (answered in the order they were sent)."""

    def __init__(self, settings: ServerSettings) -> None:
        context = multiprocessing.get_context("spawn")  # the server holds threads and SQLite
        self.conn, theirs = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(theirs, settings), name="pi-hermes-memory-reader", daemon=True
        )
        self.process.start()
        theirs.close()  # so that the reader reads end-of-file once the server closes its end
        self.pending: collections.deque[asyncio.Future[Any]] = collections.deque()
        #: READY arrived: the reader imported the library (reads go to the writer before,
        #: so that no read waits for an interpreter to start)
        self.ready = False
        #: the pipe closed or broke: the reader is gone
        self.dead = False
        #: stores this reader opened (WARM answered): reads of them are sent here; reads of
        #: any other store go to the writer while the reader opens it
        self.stores: set[tuple[str | None, str | None]] = set()
        self.warming: set[tuple[str | None, str | None]] = set()
        asyncio.get_running_loop().add_reader(self.conn.fileno(), self._answers)
        self.watched = True

    def send(self, request: bytes) -> asyncio.Future[Any]:
        """Send one pickled read; the future gets its answer. The next read may be sent before
        this one is answered, so that the reader never waits for the event loop between two."""
        self.conn.send_bytes(request)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        return future

    def _answers(self) -> None:
        """Every answer that arrived, to the reads waiting for them (a read cancelled
        meanwhile drops its answer); a closed pipe fails them all (the reader died)."""
        try:
            while self.conn.poll(0):
                answer = pickle.loads(self.conn.recv_bytes())  # EOFError once the reader died
                if not self.ready:
                    self.ready = answer == READY  # its first message, before any read
                    continue
                if not self.pending:
                    continue  # nothing waits for it (never sent: a reader answers requests)
                future = self.pending.popleft()
                if not future.done():
                    future.set_result(answer)
        except (EOFError, OSError) as exc:  # also stops watching a dead pipe (no busy loop)
            self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        self.dead = True
        self.unwatch()
        while self.pending:
            future = self.pending.popleft()
            if not future.done():
                future.set_exception(EOFError(str(exc)))

    def unwatch(self) -> None:
        if self.watched:
            self.watched = False
            with contextlib.suppress(Exception):  # no loop any more, or the pipe is closed
                asyncio.get_running_loop().remove_reader(self.conn.fileno())

    @property
    def alive(self) -> bool:
        return not self.conn.closed and self.process.is_alive()

    def close(self, timeout: float | None = None) -> None:
        """Close the pipe: the reader finishes what it does, closes its stores and exits."""
        self.unwatch()
        self.conn.close()
        if timeout is not None:
            self.process.join(timeout)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join(timeout)


#: reads sent to one reader before their answers came back: the next is there as soon as
#: the reader finishes one, whatever the event loop is doing
DEPTH = 4
#: a larger request is sent only to an idle reader: DEPTH small ones fit in the pipe's buffer
#: (64 KiB on Linux), so sending never blocks the event loop while the reader is itself
#: blocked writing an answer the loop has not read yet
SMALL = 8 * 1024


class ReaderPool:
    """`size` reader processes shared by every store, started when the server starts
    listening (`start`), or on the first read where nothing called it. A read goes to the
    ready reader with the fewest reads in flight, at most DEPTH each; while none is ready
    (still importing, or started again after it died) the store's writer answers."""

    def __init__(self, settings: ServerSettings, size: int) -> None:
        self._settings = settings
        self._size = size
        self._readers: list[_Reader] = []
        self._slots: asyncio.Semaphore | None = None
        #: reads the readers answered (not sent back to the writer)
        self.answered = 0

    def start(self) -> None:
        """Start the missing readers (in the event loop): they import the library while the
        server answers its first reads on the writer."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._size * DEPTH)
        for reader in [r for r in self._readers if r.dead]:
            self._readers.remove(reader)
            reader.close(timeout=1)  # reaped, not left a zombie
        while len(self._readers) < self._size:
            self._readers.append(_Reader(self._settings))

    def _pick(self, key: tuple[str | None, str | None]) -> _Reader | None:
        """The ready reader with `key` open and the fewest reads in flight; None when no
        reader has it open yet (each ready one is asked to open it: the writer answers
        meanwhile, so that no read waits for a reader to open a store)."""
        self.start()
        ready = [r for r in self._readers if r.ready and not r.dead]
        warm = [r for r in ready if key in r.stores]
        if not warm:
            for reader in ready:
                self._warm(reader, key)
            return None
        return min(warm, key=lambda r: len(r.pending))

    def _warm(self, reader: _Reader, key: tuple[str | None, str | None]) -> None:
        if key in reader.warming or key in reader.stores:
            return
        request = pickle.dumps((*key, WARM, ()), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            future = reader.send(request)
        except OSError as exc:  # it died: the next read starts another
            reader.fail(exc)
            return
        reader.warming.add(key)

        def opened(done: asyncio.Future[Any]) -> None:
            reader.warming.discard(key)
            if not done.cancelled() and done.exception() is None and done.result() == (WARM,):
                reader.stores.add(key)

        future.add_done_callback(opened)

    @property
    def size(self) -> int:
        return self._size

    @property
    def ready(self) -> int:
        """Readers that answer reads now."""
        return sum(r.ready and not r.dead for r in self._readers)

    async def read(
        self, project: str | None, agent: str | None, op: str, args: tuple[Any, ...]
    ) -> Any:
        """The reader's answer tuple, or (WRITER,) when no reader has the store open yet or
        its reader died (it is started again; the store's writer answers)."""
        key = (project, agent)
        if self._pick(key) is None:
            return (WRITER,)
        request = pickle.dumps((project, agent, op, args), protocol=pickle.HIGHEST_PROTOCOL)
        assert self._slots is not None
        async with self._slots:
            reader = self._pick(key)
            while reader is not None and len(request) > SMALL and reader.pending:
                await asyncio.sleep(0.002)  # rare: a body over 8 KiB waits for an idle reader
                reader = self._pick(key)
            if reader is None:  # it died meanwhile
                return (WRITER,)
            try:
                answer = await reader.send(request)
            except (EOFError, OSError) as exc:
                if reader in self._readers:
                    self._readers.remove(reader)
                    reader.fail(exc)
                    reader.close(timeout=1)  # reaped, not left a zombie
                return (WRITER,)
            if answer[0] != WRITER:
                self.answered += 1
            return answer

    def close(self) -> None:
        readers, self._readers, self._slots = self._readers, [], None
        for reader in readers:
            reader.unwatch()
            reader.conn.close()
        for reader in readers:
            reader.close(timeout=10)
