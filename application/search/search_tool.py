"""The memory_search tool: its definition, its arguments and its JSON answer (the service is
`pi_hermes_memory.search.memory_search`). Moved out of that module so that opening a store and
searching do not load the tool registry (issue 29, ADR 0110)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.ports.search import DEFAULT_LIMIT
from pi_hermes_memory.search.memory_search import (
    MAX_LIMIT,
    SearchResult,
    SearchService,
    hit_json,
)
from pi_hermes_memory.tools.registry import (
    ToolDefinition,
    ToolResult,
    _check_keys,
    _enum,
    _json_type,
    _string,
    listing_json,
    present,
)

#: the seed's three values first; `project` is ours (narrows to the project layer)
_TARGETS = [Target.MEMORY.value, Target.USER.value, Target.FAILURE.value, Target.PROJECT.value]
_CATEGORIES = [c.value for c in FailureCategory]


def search_result_json(result: SearchResult) -> ToolResult:
    return listing_json(result, lambda: [hit_json(h) for h in result.hits])


# --- the tool ---------------------------------------------------------------------------------

MEMORY_SEARCH_TOOL_DESCRIPTION = (
    "Search durable memory saved in earlier sessions: user preferences, global facts, this "
    "project's notes, and past failures and lessons. Use it before answering when something "
    "may already be known (commands, conventions, preferences, earlier mistakes). query: "
    "keywords or a short question, in any language (Chinese/Japanese/Korean text matches by "
    "character pairs); rows are ranked by how much of the query they hold (score 0-1), rows "
    "holding too little of it are left out; words like 'what' or 'the' never match on their "
    "own, and English words also match their other forms (deploy: deploys, deployed, "
    "deployment). "
    "Results are this project's entries plus global ones (other projects' only when project "
    "memory sharing is on). target narrows the search: memory (global and this project's "
    "memory), user (the user profile), failure (failures and lessons), or project (this "
    "project's memory only); category narrows failure entries (implies target "
    "failure); include_superseded also returns replaced old versions, marked with what "
    f"replaced them and when. limit: 1-{MAX_LIMIT} (default {DEFAULT_LIMIT}). Read-only."
)

MEMORY_SEARCH_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "Words to look for; punctuation and operators are ignored.",
        },
        "target": {
            "type": "string",
            "enum": _TARGETS,
            "description": "memory: global and this project's memory; user: the user "
            "profile; failure: failures and lessons; project: this project's memory only "
            "(default: all of them).",
        },
        "category": {
            "type": "string",
            "enum": _CATEGORIES,
            "description": "Only failure entries of this category (target failure or none).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
            "description": "Maximum number of results.",
        },
        "include_superseded": {
            "type": "boolean",
            "default": False,
            "description": "Also return replaced (superseded) old versions as history.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

MEMORY_SEARCH_TOOL = ToolDefinition(
    name="memory_search",
    description=MEMORY_SEARCH_TOOL_DESCRIPTION,
    parameters=MEMORY_SEARCH_TOOL_SCHEMA,
    title="Memory search",
    read_only=True,
    idempotent=True,
)


@attrs.frozen(kw_only=True)
class SearchCall:
    """Validated memory_search arguments."""

    query: str
    target: Target | None = None
    category: FailureCategory | None = None
    limit: int = DEFAULT_LIMIT
    include_superseded: bool = False


def parse_search_arguments(args: object) -> SearchCall:
    """Validate memory_search's JSON arguments; raise ArgumentError saying what is wrong."""
    if not isinstance(args, Mapping):
        raise ArgumentError(f"arguments must be a JSON object, got {_json_type(args)}")
    args = present(args)  # null is absent (ADR 0028)
    _check_keys(args, set(MEMORY_SEARCH_TOOL_SCHEMA["properties"]), "")
    query = _string(args, "query", "")
    if query is None:
        raise ArgumentError("query is required: the words to search for")
    target = _enum(args, "target", _TARGETS, "")
    category = _enum(args, "category", _CATEGORIES, "")
    if category is not None and target not in (None, "failure"):
        raise ArgumentError(
            "category applies only to failure entries: use target 'failure' or no target"
        )
    limit = args.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ArgumentError(f"limit must be an integer, got {_json_type(limit)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ArgumentError(f"limit must be between 1 and {MAX_LIMIT}, got {shown(limit)}")
    history = args.get("include_superseded", False)
    if not isinstance(history, bool):
        raise ArgumentError(f"include_superseded must be a boolean, got {_json_type(history)}")
    return SearchCall(
        query=query,
        target=Target(target) if target is not None else None,
        category=FailureCategory(category) if category is not None else None,
        limit=limit,
        include_superseded=history,
    )


def run_search_tool(search: SearchService, arguments: object) -> ToolResult:
    """The memory_search tool: validate, search, answer JSON (ArgumentError propagates)."""
    call = parse_search_arguments(arguments)
    return search_result_json(
        search.search(
            call.query,
            target=call.target,
            category=call.category,
            limit=call.limit,
            include_superseded=call.include_superseded,
        )
    )


__all__ = [
    "MEMORY_SEARCH_TOOL",
    "MEMORY_SEARCH_TOOL_DESCRIPTION",
    "MEMORY_SEARCH_TOOL_SCHEMA",
    "SearchCall",
    "parse_search_arguments",
    "run_search_tool",
    "search_result_json",
]
