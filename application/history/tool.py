"""The `session_search` tool: one name, two variants (`sessionSearch.variant`), JSON Schemas,
argument checks with precise messages, and the JSON results (ADR 0021)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.history.request import (
    DEFAULT_ANCHOR_LIMIT,
    MAX_ANCHOR_LIMIT,
    parse_anchor_request,
)
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import AnchorRequestError, ArgumentError
from pi_hermes_memory.history.search import (
    ALL_PROJECTS,
    MAX_SESSIONS,
    ROLES,
    AnchorResult,
    SessionSearchResult,
    SessionSearchService,
    anchor_json,
    hit_json,
)
from pi_hermes_memory.ports.history import DEFAULT_SESSIONS
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

LEGACY_DESCRIPTION = (
    "Search the history of earlier agent sessions (past conversations with the user, indexed "
    "from the session files): what was asked, decided, tried or explained before. query: "
    "keywords or a short question, in any language (Chinese/Japanese/Korean text matches by "
    "character pairs); sessions with a turn matching every word come first. Results are "
    "grouped by session (id, project, working directory, start) with the best matching turns "
    "and the turn before and after each. The current project's sessions come first; project "
    f"limits the search to one project's sessions ('{ALL_PROJECTS}': all projects, none "
    "first); role keeps only turns written by the user, the assistant or the system. "
    f"limit: sessions, 1-{MAX_SESSIONS} (default {DEFAULT_SESSIONS}). Tool output is not "
    "indexed. Read-only."
)

LEGACY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "Words to look for; punctuation and operators are ignored.",
        },
        "project": {
            "type": "string",
            "minLength": 1,
            "description": f"Only sessions of this project ('{ALL_PROJECTS}': every project). "
            "Default: every project, the current one first.",
        },
        "role": {
            "type": "string",
            "enum": list(ROLES),
            "description": "Only turns of this role.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SESSIONS,
            "default": DEFAULT_SESSIONS,
            "description": "Maximum number of sessions.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

ANCHORS_DESCRIPTION = (
    "Find where something happened in earlier agent sessions and get the exact lines to read: "
    "the answer is JSONL, one source range per line: path (the session's JSONL file), "
    "startLine and endLine (1-based, inclusive), sessionId, cwd, startTime, endTime, score and "
    "reason (which terms matched). Read those lines of the file for the full turns, tool calls "
    "and tool output. request: one small Markdown document; every field is optional but at "
    "least one term or from/to/cwd is needed:\n"
    "from: 2026-01-05\n"
    "to: 2026-01-07 18:00\n"
    "cwd: /home/me/proj\n"
    f"limit: 20\n"
    "all:\n- flock\n- timeout\n"
    "any:\n- sqlite\n- apsw\n"
    "exclude:\n- test\n"
    "from/to: a UTC date or date and time (both inclusive; a date covers the whole day). cwd: "
    "sessions started in that directory or below it. all: every term must appear in a turn; "
    "any: at least one; exclude: none. A term of several words needs all of them (CJK: all "
    "its character pairs). Adjacent matching turns are merged into one range. limit: ranges, "
    f"1-{MAX_ANCHOR_LIMIT} (default {DEFAULT_ANCHOR_LIMIT}). Read-only."
)

ANCHORS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "request": {
            "type": "string",
            "minLength": 1,
            "description": "The Markdown request (fields from, to, cwd, limit; lists all, any, "
            "exclude with '- term' items).",
        }
    },
    "required": ["request"],
    "additionalProperties": False,
}

SESSION_SEARCH_LEGACY_TOOL = ToolDefinition(
    name="session_search",
    description=LEGACY_DESCRIPTION,
    parameters=LEGACY_SCHEMA,
    title="Session search",
    read_only=True,
    idempotent=True,
)
SESSION_SEARCH_ANCHORS_TOOL = ToolDefinition(
    name="session_search",
    description=ANCHORS_DESCRIPTION,
    parameters=ANCHORS_SCHEMA,
    title="Session search",
    read_only=True,
    idempotent=True,
)


def session_tool(variant: str) -> ToolDefinition:
    return SESSION_SEARCH_ANCHORS_TOOL if variant == "anchors" else SESSION_SEARCH_LEGACY_TOOL


def _object(args: object) -> Mapping[str, Any]:
    if not isinstance(args, Mapping):
        raise ArgumentError(f"arguments must be a JSON object, got {_json_type(args)}")
    return present(args)  # null is absent (ADR 0028)


def run_legacy_tool(search: SessionSearchService, arguments: object) -> ToolResult:
    """Validate, search, answer JSON (ArgumentError propagates to the dispatcher)."""
    args = _object(arguments)
    _check_keys(args, set(LEGACY_SCHEMA["properties"]), "")
    query = _string(args, "query", "")
    if query is None:
        raise ArgumentError("query is required: the words to search for")
    project = _string(args, "project", "")
    if project is not None and not project.strip():
        raise ArgumentError(f"project must be a project name or '{ALL_PROJECTS}', got ''")
    role = _enum(args, "role", list(ROLES), "")
    limit = args.get("limit", DEFAULT_SESSIONS)
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ArgumentError(f"limit must be an integer, got {_json_type(limit)}")
    if not 1 <= limit <= MAX_SESSIONS:
        raise ArgumentError(f"limit must be between 1 and {MAX_SESSIONS}, got {shown(limit)}")
    return legacy_json(search.search(query, project=project, role=role, limit=limit))


def run_anchors_tool(search: SessionSearchService, arguments: object) -> ToolResult:
    args = _object(arguments)
    _check_keys(args, set(ANCHORS_SCHEMA["properties"]), "")
    request = _string(args, "request", "")
    if request is None:
        raise ArgumentError(
            "request is required: a Markdown request such as 'all:\\n- flock' (see the tool "
            "description)"
        )
    return anchors_json(run_anchor_request(search, request))


def run_anchor_request(search: SessionSearchService, request: str) -> AnchorResult:
    """Parse a Markdown request and run it; a parse error is an invalid_arguments result."""
    try:
        parsed = parse_anchor_request(request)
    except AnchorRequestError as exc:
        return AnchorResult(success=False, status=Status.INVALID_ARGUMENTS, message=str(exc))
    return search.anchors(parsed)


def legacy_json(result: SessionSearchResult) -> ToolResult:
    return listing_json(result, lambda: [hit_json(h) for h in result.hits])


def anchors_json(result: AnchorResult) -> ToolResult:
    return listing_json(result, lambda: [anchor_json(r) for r in result.ranges])


__all__ = [
    "SESSION_SEARCH_ANCHORS_TOOL",
    "SESSION_SEARCH_LEGACY_TOOL",
    "anchors_json",
    "legacy_json",
    "run_anchor_request",
    "run_anchors_tool",
    "run_legacy_tool",
    "session_tool",
]
