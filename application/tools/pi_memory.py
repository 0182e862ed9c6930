"""The second seed's memory tools over this library's store (ADR 0045).

`memory_recall`, `memory_store`, `memory_forget`, `memory_update`, `memory_stats` and
`memory_list`, with the seed's arguments and semantics, on the same documents, scopes, access
rules and content scanner as the `memory` tool. `Memory.tool_definitions()` offers them when
the configuration's `tools.sets` names "pi-memory".

Scopes: the seed's scope strings map onto this library's targets and namespaces:

    global          memory, the shared global layer (the default of memory_store)
    agent:<id>      memory, that agent's namespace (within the session's access map)
    custom:<name>   memory, that custom namespace
    user            user, the global profile
    user:<id>       user, that user's namespace
    project         project, the current project (project:<name> names it and must be it)

Reading tools without a scope see every row the session may see. The seed's `category`
(preference, fact, decision, entity, other) is the entry's `kind`; failure entries keep their
own failure category apart. Every result is a JSON object with `success`, `status` and
`message`; bad arguments give `invalid_arguments` and change nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.learning.noise import noise_problem
from pi_hermes_memory.domain.memory.model import (
    DEFAULT_IMPORTANCE,
    GLOBAL_NAMESPACE,
    MemoryKind,
    Target,
    importance_problem,
    normalize_text,
)
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.results import EntryView
from pi_hermes_memory.search.memory_search import MAX_LIMIT
from pi_hermes_memory.tools.registry import (
    ToolDefinition,
    ToolResult,
    json_object,
    present,
    write_result_json,
)

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory

__all__ = [
    "PI_MEMORY_TOOLS",
    "SCOPE_NAMES",
    "SeedScope",
    "parse_scope",
    "pi_memory_handlers",
    "scope_name",
]

_KINDS: Final = [k.value for k in MemoryKind]
RECALL_DEFAULT: Final = 5
RECALL_MAX: Final = 20
LIST_DEFAULT: Final = 20
LIST_MAX: Final = 100
#: how many search hits memory_forget offers as candidates
FORGET_CANDIDATES: Final = 5
SCOPE_NAMES: Final = "global, agent:<id>, custom:<name>, user, user:<id>, project"

_SCOPE: dict[str, Any] = {
    "type": "string",
    "description": f"Memory scope: {SCOPE_NAMES}.",
}
_CATEGORY: dict[str, Any] = {"type": "string", "enum": _KINDS}
_IMPORTANCE: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": "How important the memory is.",
}

RECALL_TOOL = ToolDefinition(
    name="memory_recall",
    title="Recall memories",
    description=(
        "Search long-term memories by meaning and keywords. Returns the best matches with id, "
        "text, scope, category, importance and score. Optional scope and category narrow it."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": RECALL_MAX,
                "default": RECALL_DEFAULT,
                "description": "How many memories to return.",
            },
            "scope": _SCOPE,
            "category": {**_CATEGORY, "description": "Only memories of this category."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    read_only=True,
    idempotent=True,
)
STORE_TOOL = ToolDefinition(
    name="memory_store",
    title="Store a memory",
    description=(
        "Save one durable fact, preference, decision or entity to long-term memory. Greetings, "
        "refusals and questions about memory are refused as noise; a text similar to an "
        "existing memory is refused with the candidates (change one with memory_update "
        "instead). Never store secrets."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The memory, one self-contained fact."},
            "importance": {**_IMPORTANCE, "default": DEFAULT_IMPORTANCE},
            "category": {**_CATEGORY, "description": "The kind of memory."},
            "scope": {**_SCOPE, "default": GLOBAL_NAMESPACE},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
)
FORGET_TOOL = ToolDefinition(
    name="memory_forget",
    title="Forget a memory",
    description=(
        "Delete one memory: by id, or by query when exactly one memory contains it; otherwise "
        "the candidates are returned and nothing is deleted."
    ),
    parameters={
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The memory's id."},
            "query": {"type": "string", "description": "A part of the memory's text."},
            "scope": _SCOPE,
        },
        "additionalProperties": False,
    },
    destructive=True,
)
UPDATE_TOOL = ToolDefinition(
    name="memory_update",
    title="Update a memory",
    description=(
        "Change a memory's text, importance or category by id. The memory gets a new id; the "
        "old version is kept as history."
    ),
    parameters={
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The memory's id."},
            "text": {"type": "string", "description": "The new text."},
            "importance": _IMPORTANCE,
            "category": {**_CATEGORY, "description": "The new category."},
        },
        "required": ["id"],
        "additionalProperties": False,
    },
    destructive=True,
)
STATS_TOOL = ToolDefinition(
    name="memory_stats",
    title="Memory statistics",
    description="Counts of the memories this session can see, by scope and by category.",
    parameters={
        "type": "object",
        "properties": {"scope": _SCOPE},
        "additionalProperties": False,
    },
    read_only=True,
    idempotent=True,
)
LIST_TOOL = ToolDefinition(
    name="memory_list",
    title="List memories",
    description="List memories, newest first, a page at a time; optional scope and category.",
    parameters={
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": LIST_MAX, "default": 20},
            "offset": {"type": "integer", "minimum": 0, "default": 0},
            "scope": _SCOPE,
            "category": _CATEGORY,
        },
        "additionalProperties": False,
    },
    read_only=True,
    idempotent=True,
)
PI_MEMORY_TOOLS: Final = (
    RECALL_TOOL,
    STORE_TOOL,
    FORGET_TOOL,
    UPDATE_TOOL,
    STATS_TOOL,
    LIST_TOOL,
)


# --- arguments --------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SeedScope:
    """A seed scope string as this library's target and namespace (None: the global layer)."""

    target: Target
    namespace: str | None = None

    @property
    def name(self) -> str:
        if self.target is Target.PROJECT:
            return "project"
        if self.target is Target.USER and self.namespace is None:
            return "user"
        return self.namespace or GLOBAL_NAMESPACE

    def holds(self, view: EntryView) -> bool:
        if view.target != self.target.value:
            return False
        return self.target is Target.PROJECT or view.scope == (self.namespace or GLOBAL_NAMESPACE)


def parse_scope(value: str, project: str | None) -> SeedScope:
    """The target and namespace of a seed scope string (see the module); ArgumentError else."""
    if value == GLOBAL_NAMESPACE:
        return SeedScope(target=Target.MEMORY)
    if value == "user":
        return SeedScope(target=Target.USER)
    kind, colon, name = value.partition(":")
    if value == "project" or (kind == "project" and colon):
        if project is None:
            raise ArgumentError("scope project needs a current project; this session has none")
        if colon and name != project:
            raise ArgumentError(
                f"scope {shown(value)} is not this session's project; use project "
                f"(the current project, {shown(project)})"
            )
        return SeedScope(target=Target.PROJECT)
    if colon and kind in ("agent", "custom"):
        return SeedScope(target=Target.MEMORY, namespace=value)
    if colon and kind == "user":
        return SeedScope(target=Target.USER, namespace=value)
    raise ArgumentError(f"scope must be one of {SCOPE_NAMES}; got {shown(value)}")


def _check(args: Mapping[str, Any], allowed: set[str], required: Sequence[str] = ()) -> None:
    unknown = sorted(set(args) - allowed)
    if unknown:
        names = ", ".join(shown(k, 40) for k in unknown[:5])
        expected = f"allowed: {', '.join(sorted(allowed))}" if allowed else "it takes none"
        raise ArgumentError(f"unknown argument(s): {names}; {expected}")
    for key in required:
        if key not in args:
            raise ArgumentError(f"{key} is required")


def _text(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentError(f"{key} must be a string")
    if not value.strip():
        raise ArgumentError(f"{key} cannot be empty")
    return value


def _integer(args: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = args.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ArgumentError(f"{key} must be an integer from {low} to {high}; got {shown(value)}")
    return value


def _importance(args: Mapping[str, Any]) -> float | None:
    value = args.get("importance")
    if value is None:
        return None
    problem = importance_problem(value)
    if problem is not None:
        raise ArgumentError(f"{problem}; got {shown(value)}")
    return float(value)


def _kind(args: Mapping[str, Any]) -> MemoryKind | None:
    value = args.get("category")
    if value is None:
        return None
    if not isinstance(value, str) or value not in _KINDS:
        raise ArgumentError(f"category must be one of {', '.join(_KINDS)}; got {shown(value)}")
    return MemoryKind(value)


def _scope(args: Mapping[str, Any], memory: Memory) -> SeedScope | None:
    value = args.get("scope")
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentError("scope must be a string")
    return parse_scope(value, memory.project)


# --- results ----------------------------------------------------------------------------------


def scope_name(view: EntryView) -> str:
    """The seed scope string of a row (global, agent:<id>, custom:<name>, user, user:<id>,
    project)."""
    if view.target == Target.PROJECT.value:
        return "project"
    if view.target == Target.USER.value and view.scope == GLOBAL_NAMESPACE:
        return "user"
    return view.scope


def _memory_json(view: EntryView) -> dict[str, Any]:
    return {
        "id": view.id,
        "text": view.text,
        "scope": scope_name(view),
        "category": view.kind,
        "importance": DEFAULT_IMPORTANCE if view.importance is None else view.importance,
        "created": view.created.isoformat(),
        "version": view.version,  # ADR 0074: `id` is the same for every version
    }


def _visible(memory: Memory, scope: SeedScope | None) -> list[EntryView]:
    """The active rows of memory, user and project (or of `scope`) this session may see."""
    targets = [Target.MEMORY, Target.USER] + ([Target.PROJECT] if memory.project else [])
    if scope is not None:
        targets = [scope.target]
    views = [v for t in targets for v in memory.entries(t)]
    return views if scope is None else [v for v in views if scope.holds(v)]


# --- handlers ---------------------------------------------------------------------------------


def _recall(memory: Memory, arguments: Any) -> ToolResult:
    args = present(json_object(arguments))
    _check(args, {"query", "limit", "scope", "category"}, ("query",))
    query = _text(args, "query")
    assert query is not None
    limit = _integer(args, "limit", RECALL_DEFAULT, 1, RECALL_MAX)
    scope, kind = _scope(args, memory), _kind(args)

    rows = {v.id: v for v in _visible(memory, scope)}
    targets = [scope.target] if scope is not None else [None]
    hits = []
    for target in targets:
        searched = memory.search(query, target=target, limit=MAX_LIMIT)
        if searched.status is Status.INVALID_ARGUMENTS:
            raise ArgumentError(searched.message)
        hits += [h for h in searched.hits if h.id in rows and h.target is not Target.FAILURE]
    hits.sort(key=lambda h: -h.score)
    found = [
        {**_memory_json(rows[h.id]), "score": round(h.score, 6)}
        for h in hits
        if kind is None or rows[h.id].kind == kind.value
    ][:limit]
    status = Status.OK if found else Status.NO_RESULTS
    message = f"Found {len(found)} memor{'y' if len(found) == 1 else 'ies'}."
    return {"success": True, "status": status, "message": message, "results": found}


def _store(memory: Memory, arguments: Any) -> ToolResult:
    args = present(json_object(arguments))
    _check(args, {"text", "importance", "category", "scope"}, ("text",))
    text = _text(args, "text")
    assert text is not None
    importance, kind = _importance(args), _kind(args)
    scope = _scope(args, memory) or SeedScope(target=Target.MEMORY)
    noise = noise_problem(text)
    if noise is not None:
        return {
            "success": False,
            "status": Status.INVALID,
            "reason": "noise",
            "message": f"Not stored: {noise}.",
        }
    result = memory.add(
        text,
        target=scope.target,
        scope=scope.namespace,
        importance=DEFAULT_IMPORTANCE if importance is None else importance,
        kind=kind or MemoryKind.OTHER,
    )
    out = write_result_json(result)
    if result.status is Status.NEAR_DUPLICATE:
        out["message"] = (
            "Not stored: similar memories already exist. Change one of them with memory_update "
            "(by its id) or forget it first if this replaces it."
        )
    if result.success and result.entry_id is not None:
        out["id"] = result.entry_id
    return out


def _forget(memory: Memory, arguments: Any) -> ToolResult:
    args = present(json_object(arguments))
    _check(args, {"id", "query", "scope"})
    entry_id, query = _text(args, "id"), _text(args, "query")
    if (entry_id is None) == (query is None):
        raise ArgumentError("give id or query (exactly one of them)")
    scope = _scope(args, memory)
    if entry_id is not None:
        view = memory.get(entry_id.strip())
        if view is not None and scope is not None and not scope.holds(view):
            return {
                "success": False,
                "status": Status.NOT_FOUND,
                "message": f"No memory {shown(entry_id)} in scope {scope.name}.",
            }
        return write_result_json(memory.delete(entry_id.strip()))
    assert query is not None
    rows = _visible(memory, scope)
    needle = normalize_text(query).casefold()
    strong = [v for v in rows if needle in normalize_text(v.text).casefold()]
    if len(strong) == 1:
        out = write_result_json(memory.delete(strong[0].id))
        out["id"] = strong[0].id
        return out
    candidates = strong or _recall_rows(memory, query, scope)
    if not candidates:
        return {
            "success": False,
            "status": Status.NOT_FOUND,
            "message": "No memory matches the query; nothing was deleted.",
        }
    return {
        "success": False,
        "status": Status.AMBIGUOUS,
        "message": (
            f"{len(candidates)} memories match; nothing was deleted. Call memory_forget again "
            "with the id of the one to delete."
        ),
        "candidates": [_memory_json(v) for v in candidates[:FORGET_CANDIDATES]],
    }


def _recall_rows(memory: Memory, query: str, scope: SeedScope | None) -> list[EntryView]:
    found = _recall(
        memory,
        {"query": query, "limit": FORGET_CANDIDATES, **({"scope": scope.name} if scope else {})},
    )
    rows = {v.id: v for v in _visible(memory, scope)}
    return [rows[r["id"]] for r in found.get("results", ()) if r["id"] in rows]


def _update(memory: Memory, arguments: Any) -> ToolResult:
    args = present(json_object(arguments))
    _check(args, {"id", "text", "importance", "category"}, ("id",))
    entry_id, text = _text(args, "id"), _text(args, "text")
    assert entry_id is not None
    importance, kind = _importance(args), _kind(args)
    if text is None and importance is None and kind is None:
        raise ArgumentError("give text, importance or category to change")
    current = memory.get(entry_id.strip())
    content = text if text is not None else (current.text if current is not None else "")
    result = memory.update(entry_id.strip(), content, importance=importance, kind=kind)
    out = write_result_json(result)
    if result.status is Status.REPLACED and result.entry_id is not None:
        out["id"] = result.entry_id
        out["message"] = f"Updated; the memory keeps its id {result.entry_id}."
    return out


def _stats(memory: Memory, arguments: Any) -> ToolResult:
    args = present(json_object(arguments))
    _check(args, {"scope"})
    views = _visible(memory, _scope(args, memory))
    by_scope: dict[str, int] = {}
    by_category: dict[str, int] = {}
    for view in views:
        name = scope_name(view)
        by_scope[name] = by_scope.get(name, 0) + 1
        category = view.kind or "unset"
        by_category[category] = by_category.get(category, 0) + 1
    return {
        "success": True,
        "status": Status.OK,
        "message": f"{len(views)} memor{'y' if len(views) == 1 else 'ies'}.",
        "total": len(views),
        "by_scope": dict(sorted(by_scope.items())),
        "by_category": dict(sorted(by_category.items())),
    }


def _list(memory: Memory, arguments: Any) -> ToolResult:
    args = present(json_object(arguments))
    _check(args, {"limit", "offset", "scope", "category"})
    limit = _integer(args, "limit", LIST_DEFAULT, 1, LIST_MAX)
    offset = _integer(args, "offset", 0, 0, 2**31)
    scope, kind = _scope(args, memory), _kind(args)
    views = [v for v in _visible(memory, scope) if kind is None or v.kind == kind.value]
    views.sort(key=lambda v: (v.created, v.id), reverse=True)
    page = views[offset : offset + limit]
    return {
        "success": True,
        "status": Status.OK if page else Status.NO_RESULTS,
        "message": f"{len(page)} of {len(views)} memories from offset {offset}.",
        "total": len(views),
        "offset": offset,
        "limit": limit,
        "results": [_memory_json(v) for v in page],
    }


_HANDLERS: Final[dict[str, Callable[[Memory, Any], ToolResult]]] = {
    RECALL_TOOL.name: _recall,
    STORE_TOOL.name: _store,
    FORGET_TOOL.name: _forget,
    UPDATE_TOOL.name: _update,
    STATS_TOOL.name: _stats,
    LIST_TOOL.name: _list,
}


def pi_memory_handlers(
    memory: Memory,
) -> dict[str, tuple[ToolDefinition, Callable[[Any], ToolResult]]]:
    """The second seed's tools bound to `memory`: name -> (definition, handler)."""
    return {d.name: (d, functools.partial(_HANDLERS[d.name], memory)) for d in PI_MEMORY_TOOLS}
