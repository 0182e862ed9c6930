"""Reader processes: read-only REST and MCP calls answered beside the store's writer (ADR 0083).

A `Memory` is not thread-safe and a search is mostly Python (measured: two threads with a
`Memory` each reach 1.14x one thread's CPU, the GIL), so concurrent reads need processes. A
small pool of spawned processes, shared by every store, each keeps its own `StoreCache` (one
`Memory` and SQLite connection per (project, agent), least recently used closed) and answers
one read at a time. The server's own `StoreCache` stays the only writer: before a read, a
reader asks its store whether it is `settled` (a stat per Markdown file); a hand edit to
import sends the read back to the writer, which imports it and answers. A read started after
a write was acknowledged sees it: the write committed before its answer was sent, and a
reader reads the journal and the search tables on a fresh SQLite snapshot.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_hermes_memory.adapters.server.app import ServerSettings, StoreCache

#: reader processes at most (more than the cores only adds resident memory)
MAX_READERS = 4


def default_readers() -> int:
    """One reader per core, at most MAX_READERS."""
    return max(1, min(MAX_READERS, os.cpu_count() or 1))


def _plain(value: Any) -> Any:
    """JSON values only, so that the answer pickles whatever the library returned."""
    from pi_hermes_memory.adapters.server.app import dumps

    return json.loads(dumps(value))


def _tool(memory: Any, name: str, arguments: dict[str, Any]) -> Any:
    return _plain(dict(memory.call_tool(name, arguments)))


def _narrowed(memory: Any, body: dict[str, Any], scope: str | None) -> Any:
    from pi_hermes_memory.adapters.server.app import _narrowed_search

    return _plain(_narrowed_search(memory, body, scope))


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
    return _plain(
        {
            "entries": views[offset : offset + limit],
            "total": len(views),
            "limit": limit,
            "offset": offset,
        }
    )


def _stats(memory: Any) -> Any:
    from pi_hermes_memory.memory.porting import stats

    return _plain(stats(memory))


def _get(memory: Any, entry_id: str) -> Any:
    view = memory.get(entry_id)
    return None if view is None else _plain(view)


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


def _start(settings: ServerSettings) -> None:
    global _cache
    from pi_hermes_memory.adapters.server.app import StoreCache

    _cache = StoreCache(settings)


#: the answer when a read needs a write first (a hand edit to import, a render to finish)
WRITER = "writer"


def _read(project: str | None, agent: str | None, op: str, args: tuple[Any, ...]) -> Any:
    """("ok", value), (WRITER,) or ("error", status, message): never raises, so that no
    library exception has to pickle."""
    from pi_hermes_memory.adapters.server.app import ApiError, error_status

    assert _cache is not None

    def work(memory: Any) -> Any:
        if not memory.settled():
            return (WRITER,)
        return ("ok", OPERATIONS[op](memory, *args))

    try:
        return _cache.run(project, agent, work)
    except ApiError as exc:
        return ("error", exc.status, str(exc), type(exc).__name__)
    except Exception as exc:
        return ("error", error_status(exc), str(exc), type(exc).__name__)


# -- in the server ---------------------------------------------------------------------------


class ReaderPool:
    """`size` spawned reader processes shared by every store, started on the first read."""

    def __init__(self, settings: ServerSettings, size: int) -> None:
        self._settings = settings
        self._size = size
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: the server holds SQLite connections and threads a fork would copy
            self._pool = ProcessPoolExecutor(
                max_workers=self._size,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start,
                initargs=(self._settings,),
            )
        return self._pool

    async def read(
        self, project: str | None, agent: str | None, op: str, args: tuple[Any, ...]
    ) -> Any:
        """The reader's answer tuple, or (WRITER,) when the pool cannot answer (it broke:
        it is started again for the next read)."""
        try:
            future = self._executor().submit(_read, project, agent, op, args)
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            broken, self._pool = self._pool, None
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)
            return (WRITER,)

    def pids(self) -> list[int]:
        pool = self._pool
        processes = getattr(pool, "_processes", None) or {}
        return sorted(processes)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
