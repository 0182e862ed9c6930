"""The HTTP server: REST under /api/memory and MCP (streamable HTTP) at /mcp on one port
(ADR 0044). Loaded only by `pi-hermes-memory serve`; needs the `[server]` extra.

Every REST answer is the envelope `{"success": bool, "data": ..., "error": str | null}`.
One guard in front of every route: request size limit, Host and Origin checks (DNS
rebinding), API key (constant time), CORS only for an allowlist, one log line per request.
Stores are opened once per (project, agent) and kept in a small cache; each store's writes
run in a worker thread, one at a time (a `Memory` is not thread-safe: see StoreCache), and
its reads in a pool of reader processes beside it (`readers.py`, ADR 0083).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import os
import resource
import sys
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from datetime import date, datetime
from enum import Enum
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import attrs
from pi_hermes_memory.adapters.server import knowledge as server_knowledge
from pi_hermes_memory.adapters.server.config import StoreOptions
from pi_hermes_memory.adapters.server.readers import Answer
from pi_hermes_memory.config.settings import KNOWLEDGE_PATHS_ENV
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind
from pi_hermes_memory.errors import HermesMemoryError, ServeFailed, UnsafeBind
from pi_hermes_memory.tools.registry import _json_type

if TYPE_CHECKING:
    from pi_hermes_memory.adapters.server.readers import ReaderPool

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: deepest JSON nesting a request body may have
MAX_DEPTH = 32
#: stores kept open at once (one per (project, agent) pair)
CACHE_SIZE = 8
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
#: seconds a client may take to send a request body (a half-sent body is not held open)
BODY_TIMEOUT = 5.0
#: methods that change state; with /mcp they need JSON and, from a browser, an allowed Origin
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: outside the library's logger tree (the CLI sends that one to stderr at WARNING)
log = logging.getLogger("pi-hermes-memory.http")


@attrs.frozen(kw_only=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 9873
    api_key: str | None = attrs.field(default=None, repr=False)
    http: bool = True
    mcp: bool = True
    allowed_origins: tuple[str, ...] = ()
    max_body: int = 1024 * 1024
    #: seconds a request may take to send its whole body; slower gets 408 and is closed
    body_timeout: float = BODY_TIMEOUT
    project: str | None = None
    agent: str | None = None
    cwd: str | None = None
    cache_size: int = CACHE_SIZE
    #: reader processes for searches, listings and gets (None: the default, one where the
    #: server may use 2 CPUs or more, ADR 0117; 0: none, every call on the store's writer)
    readers: int | None = None
    #: embedding, reranker, agent root from openclaw.json and the environment (ADR 0047)
    store: StoreOptions = attrs.field(factory=StoreOptions)
    #: configuration warnings, printed at start
    warnings: tuple[str, ...] = ()


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(settings: ServerSettings) -> None:
    if not is_loopback(settings.host) and not settings.api_key:
        raise UnsafeBind(
            f"refusing to listen on {settings.host} without an API key: anyone who can reach "
            "it could read and change the memory. Set PI_MEMORY_API_KEY (or --api-key), or "
            "bind to 127.0.0.1"
        )


# -- stores ------------------------------------------------------------------------------


class ApiError(HermesMemoryError):
    """An error answered with the envelope and `status`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Store:
    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.lock = threading.Lock()
        self.closed = False


class StoreCache:
    """Opened stores keyed by (project, agent), least recently used closed beyond `size`.

    A `Memory` keeps in-memory state (documents read, caches) next to its SQLite
    connection and is not safe to use from two threads at once; every call on a store holds
    that store's lock, and runs in a worker thread (`call`) so the event loop never blocks
    on SQLite, an fsync or an embedding request. Different stores work in parallel; they
    coordinate through the library's own file locks and SQLite transactions, as separate
    processes would.
    """

    def __init__(self, settings: ServerSettings) -> None:
        self._settings = settings
        self._stores: OrderedDict[tuple[str | None, str | None], _Store] = OrderedDict()
        self._guard = threading.Lock()
        self._shared: dict[str, Any] = {}  # the embedder and reranker, built on first use
        self._closers: list[Callable[[], None]] = []
        self._readers: ReaderPool | None = None

    def start_readers(self) -> None:
        """Answer reads in reader processes from now on (the server does; a reader process's
        own cache and the stdio MCP server do not, ADR 0083)."""
        from pi_hermes_memory.adapters.server.readers import ReaderPool, default_readers

        size = self._settings.readers
        size = default_readers() if size is None else size
        if size > 0 and self._readers is None:
            self._readers = ReaderPool(self._settings, size)

    def warm_readers(self) -> None:
        """Start the reader processes now, in the event loop, once the server listens: they
        import the library while the first reads are answered on the writer (ADR 0117).
        Without this call (an app served by another ASGI server) the first read starts them."""
        if self._readers is not None:
            self._readers.start()

    def reader_state(self) -> dict[str, int]:
        """Reader processes asked for (`size`), answering reads now (`ready`), and the reads
        they answered since the server started (`answered`; the rest ran on the writer)."""
        pool = self._readers
        if pool is None:
            return {"size": 0, "ready": 0, "answered": 0}
        return {"size": pool.size, "ready": pool.ready, "answered": pool.answered}

    @property
    def settings(self) -> ServerSettings:
        return self._settings

    def _providers(self) -> dict[str, Any]:
        """The embedder and reranker of `settings.store`, shared by every store (called
        under the guard)."""
        options = self._settings.store
        if options.embedding is not None and options.embedding.enabled and not self._shared:
            # built where open() builds its own (one provider wiring, ADR 0057)
            from pi_hermes_memory.bootstrap import build_embedder, build_reranker

            embedder, close = build_embedder(options.embedding, log)
            self._shared["embedder"] = embedder
            if close is not None:
                self._closers.append(close)
            if options.rerank is not None and options.rerank.enabled:
                reranker, close = build_reranker(options.rerank, log)
                self._shared["reranker"] = reranker
                if close is not None:
                    self._closers.append(close)
        return self._shared

    def _open(self, project: str | None, agent: str | None) -> _Store:
        import pi_hermes_memory

        environ = None
        if self._settings.store.knowledge_paths:  # ADR 0048: the server's folders win
            environ = dict(os.environ)
            environ[KNOWLEDGE_PATHS_ENV] = json.dumps(list(self._settings.store.knowledge_paths))
        memory = pi_hermes_memory.open(
            project=project,
            agent_id=agent,
            cwd=self._settings.cwd,
            environ=environ,
            retrieval=self._settings.store.retrieval,
            # the openclaw.json keys (ADR 0075); dbPath is the memoryDir among them
            overrides=self._settings.store.settings,
            **self._providers(),
        )
        for warning in memory.warnings:
            log.warning(json.dumps({"event": "store.warning", "warning": warning}))
        return _Store(memory)

    def _get(self, project: str | None, agent: str | None) -> _Store:
        key = (project or self._settings.project, agent or self._settings.agent)
        with self._guard:
            store = self._stores.get(key)
            if store is not None:
                self._stores.move_to_end(key)
                return store
            store = self._open(*key)
            self._stores[key] = store
            evicted = []
            while len(self._stores) > self._settings.cache_size:
                evicted.append(self._stores.popitem(last=False)[1])
        for old in evicted:
            self._close(old)
        return store

    def _is_open(self, project: str | None, agent: str | None) -> bool:
        key = (project or self._settings.project, agent or self._settings.agent)
        with self._guard:
            return key in self._stores

    @staticmethod
    def _close(store: _Store) -> None:
        with store.lock:
            store.closed = True
            store.memory.close()

    def run(self, project: str | None, agent: str | None, work: Callable[[Any], Any]) -> Any:
        """`work(memory)` on the store of (project, agent), holding its lock (blocking)."""
        while True:
            store = self._get(project, agent)
            with store.lock:
                if not store.closed:  # else evicted meanwhile: open it again
                    return work(store.memory)

    async def call(self, project: str | None, agent: str | None, work: Callable[[Any], Any]) -> Any:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.run, project, agent, work)

    async def read(self, project: str | None, agent: str | None, op: str, *args: Any) -> Any:
        """The `Answer` of the read-only operation `op` of `readers.OPERATIONS`: in a reader
        process when there are readers and the store needs no write first, else on the
        store's writer (which imports a hand edit first), as `call` does."""
        from pi_hermes_memory.adapters.server.readers import OPERATIONS, WRITER

        # a store the writer has not opened yet is opened there first: opening finishes an
        # interrupted render, imports hand edits and migrates the schema (writes all)
        if self._readers is not None and self._is_open(project, agent):
            answer = await self._readers.read(project, agent, op, args)
            if answer[0] == "ok":
                return answer[1]
            if answer[0] == "error":
                _, status, message, kind = answer
                if status == 500:
                    log.error(json.dumps({"event": "request.failed", "error": kind}))
                    message = f"the server failed ({kind}); details are in its log"
                raise ApiError(status, message)
            assert answer[0] == WRITER
        operation = OPERATIONS[op]
        return await self.call(project, agent, lambda m: Answer(operation(m, *args)))

    def states(self) -> list[dict[str, Any]]:
        with self._guard:
            items = list(self._stores.items())
        return [
            {
                "project": project,
                "agent": agent,
                "read_only": s.memory.read_only is not None,
                "embeddings": _embedding_state(s.memory.embeddings),
            }
            for (project, agent), s in items
        ]

    def provider_state(self) -> dict[str, Any]:
        """The embedding and rerank settings the server passes to every store (no key, no
        URL): None for a section neither the config file nor the environment sets."""
        options = self._settings.store
        embedding = options.embedding
        rerank = options.rerank
        return {
            "embedding": None
            if embedding is None
            else {
                "enabled": embedding.enabled,
                "model": embedding.model,
                "dimensions": embedding.dimensions,
                "disabled_reason": _name(embedding.disabled_reason),
            },
            "rerank": None
            if rerank is None
            else {"enabled": rerank.enabled, "model": rerank.model},
        }

    def close(self) -> None:
        with self._guard:
            stores = list(self._stores.values())
            self._stores.clear()
            closers, self._closers = self._closers, []
            self._shared = {}
            readers, self._readers = self._readers, None
        if readers is not None:
            readers.close()
        for store in stores:
            self._close(store)
        for close in closers:
            close()


def _embedding_state(service: Any) -> dict[str, Any] | None:
    """An open store's embedding state: the model and dimension it embeds with, or None
    (embeddings off)."""
    if service is None:
        return None
    return {"model": service.model_id, "dimension": service.dimension}


def _name(value: Enum | None) -> str | None:
    return None if value is None else str(value.value)


# -- JSON --------------------------------------------------------------------------------


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | frozenset | set):
        return list(value)
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    return json.dumps(value, default=_default, ensure_ascii=False).encode()


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def parse_body(body: bytes) -> dict[str, Any]:
    if not body:
        raise ApiError(400, "the request body must be a JSON object")
    try:
        value = json.loads(body)
    except RecursionError:
        raise ApiError(400, f"the JSON body is nested too deeply (at most {MAX_DEPTH})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ApiError(400, f"the body must be a JSON object, got {_json_type(value)}")
    if _depth(value) > MAX_DEPTH:
        raise ApiError(400, f"the JSON body is nested too deeply (at most {MAX_DEPTH})")
    return value


# -- results -> status codes ---------------------------------------------------------------

_STATUS_CODES = {
    "invalid_arguments": 400,
    "invalid": 400,
    "blocked": 400,
    "unknown_tool": 400,
    "forbidden": 403,
    "not_found": 404,
    "gone": 404,
    "superseded": 409,
    "near_duplicate": 409,
    "ambiguous": 409,
    "capacity_exceeded": 409,
    "needs_consolidation": 409,
    "conflict": 409,
    "duplicate": 409,
    "busy": 503,
    "error": 503,
}


def result_status(result: Mapping[str, Any]) -> int:
    if result.get("success"):
        return 200
    return _STATUS_CODES.get(str(result.get("status")), 400)


def error_status(exc: BaseException) -> int:
    """The HTTP status for a library error."""
    from pi_hermes_memory.errors import (
        ConfigError,
        DomainError,
        InvalidArgument,
        StorageFailed,
    )

    if isinstance(exc, InvalidArgument | ConfigError):
        return 400
    if isinstance(exc, DomainError):
        return 409
    if isinstance(exc, StorageFailed | HermesMemoryError):
        return 503
    return 500


def _write_json(result: Any) -> dict[str, Any]:
    from pi_hermes_memory.tools.registry import write_result_json

    return dict(write_result_json(result))


# -- REST handlers -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Request:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    body: bytes

    def tenant(self) -> tuple[str | None, str | None]:
        project = _utf8(self.headers.get("x-project")) or _first(self.query, "project")
        agent = _utf8(self.headers.get("x-agent")) or _first(self.query, "agent")
        for name, value in (("X-Project", project), ("X-Agent", agent)):
            problem = hidden_character(value or "")
            if problem is not None:
                raise ApiError(400, f"{name} {problem}")
        return project or None, agent or None


def hidden_character(name: str) -> str | None:
    """Why a project or agent name is refused for an invisible or reordering character
    (bidi controls such as U+202E, direction marks, zero-width and other format
    characters, controls, private-use, unassigned): the text names the code point, never
    the value, which could be made to read as something else. None when the name is clean."""
    for ch in name:
        category = unicodedata.category(ch)
        if category in _HIDDEN_CATEGORIES:
            kind = "a bidirectional control" if ch in _BIDI else "an invisible character"
            return (
                f"contains {kind} (U+{ord(ch):04X}); project and agent names may not hold "
                "bidirectional controls or other invisible characters"
            )
    return None


#: Cf (format: bidi controls, marks, zero-width, tags), Cc, Co, Cs, Cn
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Co", "Cs", "Cn"})
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _utf8(header: str | None) -> str | None:
    """A header value (decoded as latin-1, as ASGI bytes are) read as the UTF-8 clients send:
    `X-Project: 项目` names the project 项目, not its bytes as latin-1 letters."""
    if header is None:
        return None
    try:
        return header.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return header


def _first(query: Mapping[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = _first(request.query, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be an integer, got {shown(raw, 40)}") from None
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be between {low} and {high}, got {value}")
    return value


_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"", "0", "false", "no"})


def _bool_param(request: Request, name: str) -> bool:
    """A boolean query parameter: absent, or one of `_TRUE`/`_FALSE` (any case); anything
    else is a 400, not a silent false."""
    raw = _first(request.query, name)
    if raw is None or raw.lower() in _FALSE:
        return False
    if raw.lower() in _TRUE:
        return True
    raise ApiError(400, f"{name} must be true or false (1/0, yes/no), got {shown(raw, 40)}")


def _str_field(body: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise ApiError(400, f"{name} is required (a string)")
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string, got {_json_type(value)}")
    return value


def _check_keys(body: Mapping[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise ApiError(
            400,
            f"unknown field(s): {', '.join(e[:40] for e in extra[:5])}; allowed: "
            f"{', '.join(sorted(allowed))}",
        )


#: the second seed's fields a write may carry besides the text (ADR 0045)
_SEED_FIELDS = ("category", "importance", "kind")
_KINDS = tuple(k.value for k in MemoryKind)
_FAILURE_CATEGORIES = tuple(c.value for c in FailureCategory)
#: `category` of a listing: a failure category or a second-seed category ("preference": both)
_CATEGORIES = tuple(dict.fromkeys((*_FAILURE_CATEGORIES, *_KINDS)))


def _seed_fields(body: Mapping[str, Any], *, failure: bool) -> tuple[str | None, Any, str | None]:
    """(failure category, importance, kind) of a write. The second seed's `category`
    (preference, fact, decision, entity, other) is the entry's kind except on a failure
    entry, whose `category` is its failure category; `kind` names the seed's category
    explicitly. Values are checked by the library (400 with its message)."""
    category = _str_field(body, "category")
    kind = _str_field(body, "kind")
    importance = body.get("importance")
    if category is not None and not failure and category in _KINDS:
        if kind is not None and kind != category:
            raise ApiError(400, "category and kind name different categories")
        category, kind = None, category
    return category, importance, kind


def _text_field(body: Mapping[str, Any]) -> str:
    """The entry's text: `content`, or `text` (the memory_store tool's name, the second
    seed's); one of them, not both."""
    if body.get("content") is not None and body.get("text") is not None:
        raise ApiError(400, "give the text as content or as text, not both")
    name = "text" if body.get("text") is not None else "content"
    value = _str_field(body, name)
    if value is None:
        raise ApiError(400, "content (or text) is required (a string)")
    return value


def _narrowed_search(memory: Any, body: Mapping[str, Any], scope: str | None) -> dict[str, Any]:
    """memory_search narrowed to a second-seed scope and/or category (a kind): the search
    runs at its largest limit, the hits outside the scope or of another kind are left out,
    then `limit` applies. Bad arguments answer as memory_search's do."""
    from pi_hermes_memory.search.memory_search import DEFAULT_LIMIT, MAX_LIMIT
    from pi_hermes_memory.tools.pi_memory import parse_scope

    args = {k: v for k, v in body.items() if k != "scope"}
    limit = args.get("limit", DEFAULT_LIMIT)
    kind = args.pop("category", None) if args.get("category") in _KINDS else None
    where = None
    if scope is not None:
        try:
            where = parse_scope(scope, memory.project)
        except HermesMemoryError as exc:
            return {"success": False, "status": "invalid_arguments", "message": str(exc)}
        target = args.get("target")
        if target is not None and target != where.target.value:
            message = f"scope {shown(scope, 40)} is in target {where.target.value}, not {target}"
            return {"success": False, "status": "invalid_arguments", "message": message}
        args["target"] = where.target.value
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        message = f"limit must be an integer between 1 and {MAX_LIMIT}, got {shown(limit, 40)}"
        return {"success": False, "status": "invalid_arguments", "message": message}
    result = dict(memory.call_tool("memory_search", {**args, "limit": MAX_LIMIT}))
    if not result.get("success"):  # invalid arguments, said by the tool itself
        return result
    views = {v.id: v for v in memory.entries(include_history=True)}

    def keep(hit: Mapping[str, Any]) -> bool:
        view = views.get(hit["id"])
        if kind is not None and (view is None or kind not in (view.kind, view.category)):
            return False
        return where is None or (view is not None and where.holds(view))

    hits = [h for h in result.get("results", []) if keep(h)][:limit]
    result["results"] = hits
    result["status"] = "ok" if hits else "no_results"
    result["message"] = f"Found {len(hits)} memor{'y' if len(hits) == 1 else 'ies'}."
    return result


class Plain:
    """A REST answer sent as it is, not in the envelope (the OpenAPI document)."""

    def __init__(self, value: Any) -> None:
        self.value = value


Handler = Callable[["Rest", Request, str | None], Awaitable[tuple[int, Any]]]


class Rest:
    """The REST routes over the store cache."""

    def __init__(self, stores: StoreCache, settings: ServerSettings) -> None:
        self.stores = stores
        self.settings = settings

    async def health(self, request: Request, _: str | None) -> tuple[int, Any]:
        """Liveness: the status and version only, answered without the API key (ADR 0076)."""
        from pi_hermes_memory import __version__

        return 200, {"status": "ok", "version": __version__}

    async def status(self, request: Request, _: str | None) -> tuple[int, Any]:
        """What /health said before ADR 0076 (memory use, open stores, embedding and rerank
        settings, knowledge folders), behind the API key like every route but /health."""
        from pi_hermes_memory import __version__

        rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return 200, {
            "status": "ok",
            "version": __version__,
            "pid": os.getpid(),
            "max_rss_bytes": rss_kb * (1 if sys.platform == "darwin" else 1024),
            "rss_bytes": _current_rss(),
            "http": self.settings.http,
            "mcp": self.settings.mcp,
            "stores": self.stores.states(),
            "readers": self.stores.reader_state(),
            "knowledge": {"folders": len(self.settings.store.knowledge_paths)},
            **self.stores.provider_state(),
        }

    async def search(self, request: Request, _: str | None) -> tuple[int, Any]:
        """The memory_search tool's arguments, plus the second seed's `scope` (global,
        agent:<id>, custom:<name>, user, user:<id>, project) and its `category` (preference,
        fact, decision, entity, other: the entry's kind), which narrow the hits."""
        body = parse_body(request.body)
        scope = _str_field(body, "scope")
        category = body.get("category")
        by_kind = (
            isinstance(category, str) and category in _KINDS and body.get("target") != "failure"
        )
        if scope is None and not by_kind:
            result = await self._read(request, "tool", "memory_search", body)
            return result_status(result), result
        result = await self._read(request, "narrowed_search", body, scope)
        return result_status(result), result

    async def store(self, request: Request, _: str | None) -> tuple[int, Any]:
        body = parse_body(request.body)
        _check_keys(body, {"content", "text", *_SEED_FIELDS, "target", "scope", "force"})
        content = _text_field(body)
        target = _str_field(body, "target") or "memory"
        scope = _str_field(body, "scope")
        force = body.get("force", False)
        if not isinstance(force, bool):
            raise ApiError(400, f"force must be a boolean, got {_json_type(force)}")
        category, importance, kind = _seed_fields(body, failure=target == "failure")

        def add(memory: Any) -> dict[str, Any]:
            return _write_json(
                memory.add(
                    content,
                    target=target,
                    category=category,
                    force=force,
                    scope=scope,
                    importance=importance,
                    kind=kind,
                )
            )

        result = await self._call(request, add)
        status = result_status(result)
        return (201 if status == 200 and result.get("status") == "added" else status), result

    async def list(self, request: Request, _: str | None) -> tuple[int, Any]:
        limit = _int_param(request, "limit", 50, 1, 1000)
        offset = _int_param(request, "offset", 0, 0, 10**9)
        target = _first(request.query, "target")
        scope = _first(request.query, "scope")
        history = _bool_param(request, "history")
        category = _first(request.query, "category")
        if category is not None and category not in _CATEGORIES:
            raise ApiError(
                400, f"category must be one of {', '.join(_CATEGORIES)}, got {shown(category, 40)}"
            )

        return 200, await self._read(
            request, "list", target, history, scope, category, limit, offset
        )

    async def stats(self, request: Request, _: str | None) -> tuple[int, Any]:
        """The object `pi-hermes-memory stats --json` prints (targets, scopes, projects,
        vectors)."""
        return 200, await self._read(request, "stats")

    async def get(self, request: Request, entry_id: str | None) -> tuple[int, Any]:
        """The entry with this id. Without a project (no X-Project header, no `project`
        parameter) and not in the server's own project, the projects the store knows are
        tried in turn: an id names one entry whatever project holds it."""
        view = await self._read(request, "get", entry_id)
        project, agent = request.tenant()
        if view.null and project is None:
            overview = await self.stores.call(None, agent, lambda m: m.project_overview())
            for count in overview.projects:
                if count.project == overview.current:
                    continue
                try:
                    view = await self.stores.read(count.project, agent, "get", entry_id)
                except HermesMemoryError:  # a project whose store cannot open: not there
                    continue
                if not view.null:
                    break
        if view.null:
            raise ApiError(404, f"no entry with id {shown(str(entry_id), 40)}")
        return 200, view

    async def delete(self, request: Request, entry_id: str | None) -> tuple[int, Any]:
        result = await self._call(request, lambda m: _write_json(m.delete(entry_id)))
        return result_status(result), result

    async def patch(self, request: Request, entry_id: str | None) -> tuple[int, Any]:
        body = parse_body(request.body)
        _check_keys(body, {"content", *_SEED_FIELDS})
        content = _str_field(body, "content")
        if content is None and not any(body.get(k) is not None for k in _SEED_FIELDS):
            raise ApiError(400, "give content, category, importance or kind to change")

        def update(memory: Any) -> dict[str, Any]:
            current = memory.get(entry_id)
            failure = current is not None and current.target == "failure"
            category, importance, kind = _seed_fields(body, failure=failure)
            text = content if content is not None else (current.text if current else "")
            return _write_json(
                memory.update(entry_id, text, category=category, importance=importance, kind=kind)
            )

        result = await self._call(request, update)
        return result_status(result), result

    async def openapi(self, request: Request, _: str | None) -> tuple[int, Any]:
        from pi_hermes_memory.adapters.server.openapi import document

        return 200, Plain(document())

    async def _call(self, request: Request, work: Callable[[Any], Any]) -> Any:
        project, agent = request.tenant()
        return await self.stores.call(project, agent, work)

    call = _call  # for the routes of other modules (server_knowledge)

    async def _read(self, request: Request, op: str, *args: Any) -> Any:
        project, agent = request.tenant()
        return await self.stores.read(project, agent, op, *args)


def _current_rss() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


_ROUTES: dict[tuple[str, str], Handler] = {
    ("GET", "/health"): Rest.health,
    ("GET", "/api/status"): Rest.status,
    ("GET", "/openapi.json"): Rest.openapi,
    ("POST", "/api/memory/search"): Rest.search,
    ("POST", "/api/memory/store"): Rest.store,
    ("GET", "/api/memory/list"): Rest.list,
    ("GET", "/api/memory/stats"): Rest.stats,
    ("POST", "/api/knowledge/search"): server_knowledge.search,
    ("POST", "/api/knowledge/index"): server_knowledge.index,
    ("GET", "/api/knowledge/stats"): server_knowledge.stats,
}
_BY_ID: dict[str, Handler] = {"GET": Rest.get, "DELETE": Rest.delete, "PATCH": Rest.patch}
_PREFIX = "/api/memory/"


def route(method: str, path: str) -> tuple[Handler | None, str | None, bool]:
    """(handler, entry id, path known): a known path with another method is a 405."""
    handler = _ROUTES.get((method, path))
    if handler is not None:
        return handler, None, True
    if any(p == path for _, p in _ROUTES):
        return None, None, True
    if path.startswith(_PREFIX):
        entry_id = path[len(_PREFIX) :]
        if entry_id and "/" not in entry_id and entry_id not in ("search", "store"):
            return _BY_ID.get(method), entry_id, True
    return None, None, False


# -- the guard and the ASGI app --------------------------------------------------------------


class _TooLarge(HermesMemoryError):
    """A streamed body went over the limit (answered 413)."""


def _host_ok(host: str, settings: ServerSettings) -> bool:
    """DNS rebinding: on a loopback bind, only loopback names in Host (a page of
    attacker.example whose name now resolves to 127.0.0.1 sends `Host: attacker.example`)."""
    if not is_loopback(settings.host):
        return True
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if host.startswith("["):
        name = host[: host.find("]") + 1]
    return name.lower() in LOOPBACK_NAMES


def own_origins(server: tuple[str, int] | None, settings: ServerSettings) -> frozenset[str]:
    """The origins of this server: `http://` + the address and port a connection reached
    (ASGI `scope["server"]`), and on a loopback address the other loopback names with
    that port (a page at http://localhost:P is this server's own)."""
    if server is None:
        return frozenset()
    host, port = server[0], server[1]
    names = {host}
    if is_loopback(host) or is_loopback(settings.host):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return frozenset(
        f"http://{f'[{n}]' if ':' in n and not n.startswith('[') else n}:{port}" for n in names
    )


def origin_ok(origin: str | None, settings: ServerSettings, own: frozenset[str]) -> bool:
    """Absent (not a browser), this server's own origin, or one on the allowlist. Another
    port on loopback is another origin: any local web page (a dev server on :3000) is
    refused unless allowlisted."""
    if origin is None:
        return True
    return origin.lower().rstrip("/") in own or origin in settings.allowed_origins


def is_json(content_type: str | None) -> bool:
    """`application/json`, with or without parameters (`; charset=utf-8`)."""
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def has_body(headers: Mapping[str, str]) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() != "0")


def write_refusal(method: str, path: str, headers: Mapping[str, str]) -> tuple[int, str] | None:
    """(status, error) refusing a state-changing request a web page could send, else None.

    A browser sends a "simple" cross-site POST (text/plain, a form, no Content-Type)
    without asking first (no CORS preflight); requiring `application/json` makes every
    browser write a preflighted one, which this server answers only for an allowlisted
    origin. A bodiless DELETE is never simple (browsers preflight DELETE), so it needs no
    Content-Type. `Sec-Fetch-Site` (sent by browsers, not by curl or SDKs) catches a
    cross-site request whose Origin was left out."""
    if method not in WRITE_METHODS:  # GET /mcp is a 405; an OPTIONS preflight is answered before
        return None
    if headers.get("origin") is None and headers.get("sec-fetch-site", "").strip().lower() in (
        "cross-site",
        "same-site",
    ):
        return 403, "a request from another site (Sec-Fetch-Site) may not change the memory"
    content_type = headers.get("content-type")
    if method == "DELETE" and content_type is None and not has_body(headers):
        return None
    if not is_json(content_type):
        return 415, (
            "a request that changes the memory must send Content-Type: application/json "
            "(a web page cannot send that without the server's consent)"
        )
    return None


def key_ok(headers: Mapping[str, str], key: str) -> bool:
    """Bearer or X-API-Key, compared in constant time on bytes (any header bytes)."""
    given = headers.get("x-api-key")
    auth = headers.get("authorization")
    if given is None and auth is not None and auth[:7].lower() == "bearer ":
        given = auth[7:].strip()
    if not given or not key:  # an empty key never matches, whatever was configured
        return False
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), key.encode("utf-8", "surrogateescape")
    )


async def _send_json(
    send: Send, status: int, payload: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await _send_body(send, status, dumps(payload), extra)


async def _send_body(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


#: a refusal that leaves the body unread closes the connection (it cannot be reused)
_CLOSE = [(b"connection", b"close")]


def envelope(success: bool, data: Any = None, error: str | None = None) -> dict[str, Any]:
    return {"success": success, "data": data, "error": error}


#: JSON-RPC error codes of /mcp refusals: -32001 (the code MCP servers use for a missing or
#: wrong credential) for 401, Invalid Request for the rest, as the MCP SDK's own refusals
RPC_UNAUTHORIZED = -32001
RPC_INVALID_REQUEST = -32600


def rpc_error(request_id: str | int | None, status: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error answer for a refused /mcp request (the HTTP status says the same)."""
    code = RPC_UNAUTHORIZED if status == 401 else RPC_INVALID_REQUEST
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": {"status": status}},
    }


def _rpc_id(body: bytes) -> str | int | None:
    """The id of a JSON-RPC request body (None for a notification, a batch, or no JSON)."""
    try:
        value = json.loads(body)
    except (RecursionError, UnicodeDecodeError, ValueError):
        return None
    found = value.get("id") if isinstance(value, dict) else None
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    return found


async def _read_body(receive: Receive, limit: int, timeout: float) -> bytes | None:
    """The whole body: _TooLarge past `limit` bytes (counted as it streams: a chunked body
    has no Content-Length), None when it is not complete within `timeout` seconds (408)."""
    import anyio

    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(timeout) as deadline:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body"):
                break
    return None if deadline.cancelled_caught else b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the body already read (and checked) to the MCP transport in
    one message, then waits on the connection as the original does (a disconnect)."""
    sent = [False]

    async def replayed() -> dict[str, Any]:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


class App:
    """The ASGI application: the guard, then REST or MCP."""

    def __init__(self, settings: ServerSettings, stores: StoreCache) -> None:
        self.settings = settings
        self.stores = stores
        self.rest = Rest(stores, settings)
        self.mcp: Any = None  # the SDK's session manager, built by `build_app`

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        status_box = [0]

        async def logged_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
            await send(message)

        try:
            await self._http(scope, receive, logged_send)
        finally:
            log.info(
                json.dumps(
                    {
                        "event": "request",
                        "method": scope.get("method"),
                        "path": scope.get("path", "")[:200],
                        "status": status_box[0],
                        "ms": round((time.perf_counter() - started) * 1000, 2),
                    }
                )
            )

    def _cors(self, origin: str | None) -> list[tuple[bytes, bytes]]:
        if origin is None or origin not in self.settings.allowed_origins:
            return []
        return [
            (b"access-control-allow-origin", origin.encode()),
            (b"vary", b"Origin"),
        ]

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        origin = headers.get("origin")
        method, path = scope.get("method", "GET"), scope.get("path", "/")
        mcp = path == "/mcp" or path.startswith("/mcp/")
        # a refusal before the body is read leaves it unread: the connection cannot carry
        # another request, so it is closed (and a half-sent body is not waited for)
        close = _CLOSE if has_body(headers) else []

        async def refuse(status: int, error: str, extra: list[tuple[bytes, bytes]]) -> None:
            """The envelope; on /mcp a JSON-RPC error, with the request's id when its body
            is small enough to read (ADR 0076)."""
            if not mcp:
                await _send_json(send, status, envelope(False, error=error), extra)
                return
            request_id, read = await self._request_id(headers, receive)
            if read:  # the body was read: the connection may carry the next request
                extra = [h for h in extra if h not in _CLOSE]
            await _send_json(send, status, rpc_error(request_id, status, error), extra)

        if not _host_ok(headers.get("host", ""), self.settings):
            await refuse(403, "this Host is not allowed", close)
            return
        if not origin_ok(origin, self.settings, own_origins(scope.get("server"), self.settings)):
            error = (
                "this Origin is not allowed: only this server's own origin and the origins "
                "configured with --allow-origin / PI_MEMORY_ALLOWED_ORIGINS may call it"
            )
            await refuse(403, error, close)
            return
        allowed = self._cors(origin)
        cors = [*close, *allowed]
        if method == "OPTIONS" and allowed:  # a preflight from an allowlisted origin
            cors += [
                (b"access-control-allow-methods", b"GET, POST, PATCH, DELETE"),
                (
                    b"access-control-allow-headers",
                    b"authorization, x-api-key, content-type, x-project, x-agent, "
                    b"mcp-protocol-version, mcp-session-id",
                ),
            ]
            await send({"type": "http.response.start", "status": 204, "headers": cors})
            await send({"type": "http.response.body", "body": b""})
            return
        public = method == "GET" and path == "/health"  # liveness needs no key (ADR 0076)
        if self.settings.api_key and not public and not key_ok(headers, self.settings.api_key):
            await refuse(
                401,
                "an API key is required (Authorization: Bearer or X-API-Key)",
                [(b"www-authenticate", b"Bearer"), *cors],
            )
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.settings.max_body):
            await refuse(413, f"the body is larger than {self.settings.max_body} bytes", cors)
            return
        handler, entry_id, known = route(method, path)
        if not mcp and (handler is None or (not self.settings.http and path != "/health")):
            known = known and (self.settings.http or path == "/health")
            status = 405 if known else 404
            error = f"{method} is not allowed here" if known else f"no route {shown(path, 100)}"
            await _send_json(send, status, envelope(False, error=error), cors)
            return
        refusal = write_refusal(method, path, headers)
        if refusal is not None:
            await refuse(refusal[0], refusal[1], cors)
            return
        try:
            body = await _read_body(receive, self.settings.max_body, self.settings.body_timeout)
        except _TooLarge:
            error = f"the body is larger than {self.settings.max_body} bytes"
            payload = rpc_error(None, 413, error) if mcp else envelope(False, error=error)
            await _send_json(send, 413, payload, [*_CLOSE, *allowed])
            return
        if body is None:
            error = (
                f"the request body did not arrive within {self.settings.body_timeout:g} "
                "seconds; the connection is closed"
            )
            payload = rpc_error(None, 408, error) if mcp else envelope(False, error=error)
            await _send_json(send, 408, payload, [*_CLOSE, *allowed])
            return
        cors = allowed  # the body is read: the connection may carry the next request
        if mcp:
            if self.mcp is None:
                error = "MCP is off (--no-mcp)"
                await _send_json(send, 404, rpc_error(_rpc_id(body), 404, error), cors)
                return
            if method == "GET":
                # stateless: no session, so a server-to-client SSE stream would stay open and
                # empty forever; the MCP specification lets the server answer 405 instead
                error = "GET /mcp: this server is stateless and offers no SSE stream; use POST"
                await _send_json(
                    send, 405, rpc_error(None, 405, error), [(b"allow", b"POST"), *cors]
                )
                return
            await self.mcp.handle_request(scope, _replay(body, receive), send)
            return
        assert handler is not None
        await self._rest(handler, entry_id, method, path, scope, body, send, cors)

    async def _request_id(
        self, headers: Mapping[str, str], receive: Receive
    ) -> tuple[str | int | None, bool]:
        """(the JSON-RPC id of a refused /mcp request, whether its body was read): the body
        is read only when its declared length is within the limit (never a chunked one),
        and only for as long as the body timeout."""
        length = headers.get("content-length", "")
        if not length.isdigit():
            return None, False
        if int(length) == 0:
            return None, True
        if int(length) > self.settings.max_body:
            return None, False
        try:
            body = await _read_body(receive, self.settings.max_body, self.settings.body_timeout)
        except _TooLarge:
            return None, False
        if body is None:
            return None, False
        return _rpc_id(body), True

    async def _rest(
        self,
        handler: Handler,
        entry_id: str | None,
        method: str,
        path: str,
        scope: Scope,
        body: bytes,
        send: Send,
        cors: list[tuple[bytes, bytes]],
    ) -> None:
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        request = Request(
            method=method,
            path=path,
            query=parse_qs(scope.get("query_string", b"").decode("utf-8", "replace")),
            headers=headers,
            body=body,
        )
        try:
            status, data = await handler(self.rest, request, entry_id)
        except ApiError as exc:
            await _send_json(send, exc.status, envelope(False, error=str(exc)), cors)
            return
        except Exception as exc:
            status = error_status(exc)
            if status == 500:
                log.error(json.dumps({"event": "request.failed", "error": type(exc).__name__}))
                error = f"the server failed ({type(exc).__name__}); details are in its log"
            else:
                error = str(exc)
            await _send_json(send, status, envelope(False, error=error), cors)
            return
        if isinstance(data, Plain):
            await _send_json(send, status, data.value, cors)
            return
        ok = 200 <= status < 300
        if isinstance(data, Answer):  # serialised where it was computed (ADR 0083)
            message = None if ok else str(data.get("message", ""))
            body = b'{"success": %s, "data": %s, "error": %s}' % (
                b"true" if ok else b"false",
                data.body,
                dumps(message),
            )
            await _send_body(send, status, body, cors)
            return
        message = None if ok or not isinstance(data, dict) else str(data.get("message", ""))
        await _send_json(send, status, envelope(ok, data, message), cors)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        async with contextlib.AsyncExitStack() as stack:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    try:
                        if self.mcp is not None:
                            await stack.enter_async_context(self.mcp.run())
                    except Exception as exc:
                        await send({"type": "lifespan.startup.failed", "message": str(exc)})
                        return
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await stack.aclose()
                    self.stores.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return


def build_app(settings: ServerSettings) -> App:
    stores = StoreCache(settings)
    stores.start_readers()
    app = App(settings, stores)
    if settings.mcp:
        from pi_hermes_memory.adapters.server.mcp_tools import session_manager

        app.mcp = session_manager(stores, max_body=settings.max_body)
    return app


def serve(settings: ServerSettings) -> None:
    """Run until interrupted. Raises UnsafeBind for a non-loopback bind without a key."""
    check_bind(settings)
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    # httpx logs every request's full URL at INFO: an embedding base URL may hold a tenant or
    # a token in its path (ADR 0047)
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # the SDK logs each stateless MCP request in plain text at INFO ("Terminating session");
    # the request log is one JSON line per request
    logging.getLogger("mcp").setLevel(logging.WARNING)
    app = build_app(settings)
    for warning in settings.warnings:
        print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=5,
        limit_concurrency=256,
    )

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # said once the port is really bound
                # readers start once the port is ours (a busy port starts none, ADR 0117)
                app.stores.warm_readers()
                print(
                    f"pi-hermes-memory: serving on http://{settings.host}:{settings.port} "
                    f"(REST {'on' if settings.http else 'off'}, "
                    f"MCP {'on' if settings.mcp else 'off'})",
                    file=sys.stderr,
                    flush=True,
                )

    server = Server(config)
    try:
        server.run()
    except SystemExit:  # uvicorn's start-up failure (its reason is logged just above)
        pass
    except KeyboardInterrupt:
        pass
    if not server.started:
        raise ServeFailed(
            f"could not serve on {settings.host}:{settings.port} (the reason is above: a port "
            "in use, an address this machine does not have, or a name that does not resolve)"
        )
