"""The framework-neutral tool API: definitions with JSON Schemas and one dispatcher.

Every result is a JSON object with a boolean `success`, a machine-readable `status` from the
set documented in docs/tools.md and a `message` for the model. Bad arguments give
`success: false, status: "invalid_arguments"` with a precise message; no exception escapes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import ArgumentError

if TYPE_CHECKING:  # annotations: a search loads no write results (ADR 0105)
    from pi_hermes_memory.results import BatchResult, WriteResult

ToolResult = dict[str, Any]

_TARGETS = [t.value for t in Target]
_CATEGORIES = [c.value for c in FailureCategory]
_BATCH_TARGETS = ["memory", "user", "project"]
_ACTIONS = ["add", "replace", "remove", "promote", "demote", "purge"]
#: Operations in one batch: a batch is one transaction under the store lock (ADR 0024).
MAX_BATCH_OPERATIONS = 10_000

MEMORY_TOOL_DESCRIPTION = (
    "Save, update or delete durable memory that persists across sessions. Targets: 'user' "
    "(the user's profile, preferences, communication style, standing instructions), 'memory' "
    "(global facts, environment, cross-project lessons), 'project' (this project's "
    "architecture, commands, conventions, workflows), 'failure' (failures, corrections, "
    "insights, preferences, conventions, tool quirks; optional category). Actions: add "
    "(content), replace (old_text identifies the entry by a unique substring, or id by its id; "
    "content is the new text; the old text is kept as history), remove (old_text or id), "
    "promote (old_text or id; moves a current-project entry to global memory when it proved "
    "useful everywhere; no target), demote (old_text or id; moves a global entry into the "
    "current project; no target), purge (old_text or id: an entry id or a unique substring of "
    "any version; erases the entry and all its history for good, e.g. an accidentally saved "
    "secret; only when the user asks). Use 'operations' to apply "
    "several add/replace/remove steps to memory/user/project at once (not mixing project with "
    "memory/user). An add similar to an existing entry is refused with candidates: replace "
    "one of them, or repeat with force: true if it is a different fact. Save stable facts, "
    "not transient task state; never save secrets."
)

_OPERATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
        "target": {"type": "string", "enum": _BATCH_TARGETS},
        "content": {"type": "string"},
        "old_text": {"type": "string"},
        "id": {"type": "string"},
        "force": {"type": "boolean"},
        "scope": {"type": "string"},
    },
    "required": ["action", "target"],
    "additionalProperties": False,
}

MEMORY_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": _ACTIONS},
        "target": {
            "type": "string",
            "enum": _TARGETS,
            "description": "Required for add/replace/remove; not used by promote/demote.",
        },
        "content": {"type": "string", "description": "The entry text (add, replace)."},
        "old_text": {
            "type": "string",
            "description": "A unique substring of the entry to replace, remove or move (purge: "
            "also a part of a superseded or removed version).",
        },
        "id": {
            "type": "string",
            "description": "The id of the entry to replace, remove, move or purge (instead of "
            "old_text); ids are in search results and in every write result.",
        },
        "category": {
            "type": "string",
            "enum": _CATEGORIES,
            "description": "Only for target 'failure'.",
        },
        "force": {
            "type": "boolean",
            "description": "add/promote/demote: go ahead although similar entries exist.",
        },
        "scope": {
            "type": "string",
            "description": "memory/user only: global (default), agent:<id>, custom:<name> "
            "(memory) or user:<id> (user), as the session's access map allows.",
        },
        "operations": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_BATCH_OPERATIONS,
            "items": _OPERATION_SCHEMA,
        },
    },
    "additionalProperties": False,
}


@attrs.frozen(kw_only=True)
class ToolDefinition:
    """One tool, defined once; `pi_hermes_memory.tools.schemas` renders it for each ecosystem
    (ADR 0028). The hints are MCP's tool annotations: `read_only` (never changes the store),
    `destructive` (may delete or overwrite), `idempotent` (repeating a call changes nothing
    more); every tool here works on the local store only (MCP's openWorldHint false)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    title: str | None = None
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def as_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


MEMORY_TOOL = ToolDefinition(
    name="memory",
    title="Memory",
    description=MEMORY_TOOL_DESCRIPTION,
    parameters=MEMORY_TOOL_SCHEMA,
    destructive=True,  # replace and remove retire entries
)


def invalid(message: str) -> ToolResult:
    return {"success": False, "status": Status.INVALID_ARGUMENTS, "message": message}


def listing_json(result: Any, results: Callable[[], list[dict[str, Any]]]) -> ToolResult:
    """The JSON of a search-like result (`success`, `status`, `message`), with `results`
    unless the arguments were invalid."""
    out: ToolResult = {
        "success": result.success,
        "status": result.status,
        "message": result.message,
    }
    if result.status != "invalid_arguments":
        out["results"] = results()
    return out


def write_result_json(result: WriteResult) -> ToolResult:
    out: ToolResult = {
        "success": result.success,
        "status": result.status,
        "message": result.message,
    }
    for key in ("target", "action", "entry_id", "version_id", "version"):
        value = getattr(result, key)
        if value is not None:
            out[key] = value
    if result.candidates:
        out["candidates"] = [
            {"id": c.entry_id, "text": c.text, "score": c.score, "basis": c.basis}
            for c in result.candidates
        ]
    if result.matches:
        out["matches"] = list(result.matches)
    if result.evicted:
        out["evicted"] = result.evicted
    if result.warnings:
        out["warnings"] = list(result.warnings)
    return out


def batch_result_json(result: BatchResult) -> ToolResult:
    out: ToolResult = {
        "success": result.success,
        "status": result.status,
        "message": result.message,
        "results": [{"index": i, **write_result_json(r)} for i, r in enumerate(result.results)],
    }
    if result.warnings:
        out["warnings"] = list(result.warnings)
    return out


def json_object(arguments: Any) -> Mapping[str, Any]:
    """Tool arguments as a JSON object: a mapping as given, or a JSON text of one."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            raise ArgumentError(f"the arguments are not valid JSON: {exc}") from exc
    if not isinstance(arguments, Mapping):
        raise ArgumentError(f"the arguments must be a JSON object, got {_json_type(arguments)}")
    return arguments


def present(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments without those that are null: a null argument is an absent one (the strict
    schemas declare every optional argument nullable, ADR 0028)."""
    return {k: v for k, v in args.items() if v is not None}


def _string(args: Mapping[str, Any], key: str, where: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentError(f"{where}{key} must be a string, got {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return "string" if isinstance(value, str) else type(value).__name__


def _enum(args: Mapping[str, Any], key: str, allowed: list[str], where: str) -> str | None:
    value = _string(args, key, where)
    if value is not None and value not in allowed:
        raise ArgumentError(f"{where}{key} must be one of {', '.join(allowed)}; got {shown(value)}")
    return value


def _name(key: str) -> str:
    """An argument name as a message shows it: bare when it is a plain, clean identifier."""
    text = shown(key, 40)
    return key if key.isidentifier() and text == repr(key) else text


def _check_keys(args: Mapping[str, Any], allowed: set[str], where: str, *, alone: str = "") -> None:
    """Refuse arguments outside `allowed`, naming them and what is allowed; `alone` names one
    more argument that is only taken by itself (the memory tool's `operations`)."""
    unknown = sorted(set(args) - allowed)
    if unknown:
        names = ", ".join(_name(k) for k in unknown[:5])
        more = f" and {len(unknown) - 5:,} more" if len(unknown) > 5 else ""
        expected = f"allowed: {', '.join(sorted(allowed))}" if allowed else "it takes none"
        if alone:
            expected += f"; or {alone} alone"
        raise ArgumentError(f"{where}unknown argument(s): {names}{more}; {expected}")


@attrs.frozen(kw_only=True)
class MemoryCall:
    """One validated memory operation."""

    action: str
    target: str
    content: str | None = None
    old_text: str | None = None
    category: str | None = None
    force: bool = False
    scope: str | None = None
    old_id: str | None = None  # the entry by id, instead of old_text (ADR 0028)


def _old_id(args: Mapping[str, Any], action: str, where: str) -> tuple[str | None, str | None]:
    """(old_text, id) of replace/remove/promote/demote: exactly one of them, not empty."""
    old_text = _string(args, "old_text", where)
    old_id = _string(args, "id", where)
    if old_text is not None and old_id is not None:
        raise ArgumentError(f"{where}give old_text or id for {action}, not both")
    if old_id is not None:
        if not old_id.strip():
            raise ArgumentError(f"{where}id cannot be empty")
        return None, old_id.strip()
    if not (old_text and old_text.strip()):
        raise ArgumentError(f"{where}old_text (or id) is required for {action} and cannot be empty")
    return old_text, None


def parse_operation(args: Mapping[str, Any], *, where: str = "", batch: bool = False) -> MemoryCall:
    if not isinstance(args, Mapping):
        raise ArgumentError(f"{where.rstrip(': ') or 'arguments'} must be an object")
    args = present(args)
    allowed = (
        set(_OPERATION_SCHEMA["properties"])
        if batch
        else set(MEMORY_TOOL_SCHEMA["properties"]) - {"operations"}
    )
    if batch and args.get("action") in ("promote", "demote"):
        raise ArgumentError(
            f"{where}{args['action']} cannot run inside operations; call it on its own"
        )
    _check_keys(args, allowed, where, alone="" if batch else "operations")
    actions = ["add", "replace", "remove"] if batch else _ACTIONS
    action = _enum(args, "action", actions, where)
    if action is None:
        raise ArgumentError(f"{where}action is required ({', '.join(actions)})")
    if action in ("promote", "demote"):
        return _parse_move(args, action)
    targets = _BATCH_TARGETS if batch else _TARGETS
    target = _enum(args, "target", targets, where)
    if target is None:
        raise ArgumentError(f"{where}target is required ({', '.join(targets)})")
    content = _string(args, "content", where)
    old_text = _string(args, "old_text", where)
    old_id = None
    if action in ("replace", "remove", "purge"):
        old_text, old_id = _old_id(args, action, where)
    category = _enum(args, "category", _CATEGORIES, where) if not batch else None
    force = args.get("force", False)
    if not isinstance(force, bool):
        raise ArgumentError(f"{where}force must be a boolean, got {_json_type(force)}")
    if category is not None and target != "failure":
        raise ArgumentError(f"{where}category applies only to target 'failure'")
    if force and action != "add":
        raise ArgumentError(f"{where}force applies only to actions add, promote and demote")
    if action in ("add", "replace") and not (content and content.strip()):
        raise ArgumentError(f"{where}content is required for {action} and cannot be empty")
    if action == "add" and (old_text is not None or "id" in args):
        raise ArgumentError(
            f"{where}{'old_text' if old_text is not None else 'id'} is not used by add; use "
            "replace to change an entry"
        )
    if action in ("remove", "purge") and content is not None:
        raise ArgumentError(f"{where}content is not used by {action}")
    scope = _string(args, "scope", where)
    if scope is not None and target not in ("memory", "user"):
        raise ArgumentError(
            f"{where}scope applies only to targets memory and user; project rows are scoped by "
            "the current project"
        )
    return MemoryCall(
        action=action,
        target=target,
        content=content,
        old_text=old_text,
        category=category,
        force=force,
        scope=scope,
        old_id=old_id,
    )


def _parse_move(args: Mapping[str, Any], action: str) -> MemoryCall:
    """promote/demote: the direction is implied, so no target; old_text locates the entry."""
    if "target" in args:
        raise ArgumentError(
            f"{action} takes no target: promote moves a current-project entry to global "
            "memory, demote moves a global memory entry to the current project"
        )
    for unused in ("content", "category", "scope"):
        if unused in args:
            raise ArgumentError(f"{unused} is not used by {action}; the text moves unchanged")
    old_text, old_id = _old_id(args, action, "")
    force = args.get("force", False)
    if not isinstance(force, bool):
        raise ArgumentError(f"force must be a boolean, got {_json_type(force)}")
    return MemoryCall(action=action, target="", old_text=old_text, force=force, old_id=old_id)


def parse_memory_arguments(args: object) -> MemoryCall | list[MemoryCall | ArgumentError]:
    """Validate the memory tool's arguments: one call, or a batch with per-op errors."""
    if not isinstance(args, Mapping):
        raise ArgumentError(f"arguments must be a JSON object, got {_json_type(args)}")
    args = present(args)
    if "operations" not in args:
        return parse_operation(args)
    others = sorted(set(args) - {"operations"})
    if others:
        raise ArgumentError(
            f"operations cannot be combined with {', '.join(others)}; put them in each operation"
        )
    ops = args["operations"]
    if not isinstance(ops, list) or not ops:
        raise ArgumentError("operations must be a non-empty array of operation objects")
    if len(ops) > MAX_BATCH_OPERATIONS:
        raise ArgumentError(
            f"operations holds {len(ops):,} operations, more than the {MAX_BATCH_OPERATIONS:,} "
            "one batch may hold; nothing was applied. Split it into several batches."
        )
    parsed: list[MemoryCall | ArgumentError] = []
    for i, op in enumerate(ops):
        try:
            parsed.append(parse_operation(op, where=f"operations[{i}].", batch=True))
        except ArgumentError as exc:
            parsed.append(exc)
    groups = {
        ("project" if c.target == "project" else "global")
        for c in parsed
        if isinstance(c, MemoryCall)
    }
    if len(groups) > 1:
        raise ArgumentError(
            "one batch cannot mix project operations with memory/user operations; send two batches"
        )
    return parsed


Dispatcher = Callable[[str, Any], ToolResult]
