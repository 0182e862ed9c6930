"""Tool definitions rendered for each ecosystem, from the one `ToolDefinition` (ADR 0028).

    openai            Chat Completions: {"type": "function", "function": {name, description,
                      parameters[, strict]}}
    openai-responses  Responses API: flat {"type": "function", name, description, parameters,
                      strict} (strict is always written: the Responses API defaults it to true)
    anthropic         Messages API: {name, description, input_schema}
    mcp               tools/list: {name, title, description, inputSchema, annotations}

`strict=True` rewrites every schema into the subset OpenAI's strict mode accepts (see
`strict_schema`); the dispatcher treats a null argument as an absent one, so a strict caller
that fills every optional argument with null is served exactly like one that leaves it out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.tools.registry import ToolDefinition

FORMATS = ("openai", "openai-responses", "anthropic", "mcp")

#: the keywords a strict schema keeps; everything else (default, minimum, maxItems, minLength,
#: pattern, …) is dropped, and the dispatcher still enforces it (ADR 0028)
STRICT_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "description"}
)


def _described(schema: Mapping[str, Any]) -> str | None:
    """The description, plus the constraints strict mode cannot say (so the model still
    reads them)."""
    notes = []
    if "minimum" in schema and "maximum" in schema:
        notes.append(f"From {schema['minimum']} to {schema['maximum']}.")
    if "maxItems" in schema:
        notes.append(f"At most {schema['maxItems']:,} items.")
    if "default" in schema:
        notes.append(f"Default: {json.dumps(schema['default'])}.")
    text = " ".join([schema["description"], *notes] if "description" in schema else notes)
    return text or None


def strict_schema(schema: Mapping[str, Any], *, optional: bool = False) -> dict[str, Any]:
    """`schema` in OpenAI's strict subset: every object lists all its properties as required
    and forbids others; an optional property becomes nullable (type [T, "null"], and null
    joins its enum); keywords outside STRICT_KEYWORDS are dropped."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            required = set(schema.get("required", ()))
            out["properties"] = {
                name: strict_schema(sub, optional=name not in required)
                for name, sub in value.items()
            }
            out["required"] = list(value)
        elif key == "items":
            out["items"] = strict_schema(value)
        elif key in STRICT_KEYWORDS and key not in ("required", "description"):
            out[key] = value
    description = _described(schema)
    if description is not None:
        out["description"] = description
    if out.get("type") == "object":
        out["additionalProperties"] = False
        out.setdefault("properties", {})
        out.setdefault("required", [])
    if optional:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def _parameters(tool: ToolDefinition, strict: bool) -> dict[str, Any]:
    # a deep copy through JSON: the result is the caller's to change
    params: dict[str, Any] = json.loads(json.dumps(tool.parameters))
    return strict_schema(params) if strict else params


def render(tool: ToolDefinition, fmt: str = "openai", *, strict: bool = False) -> dict[str, Any]:
    """One tool in the format `fmt` (one of FORMATS)."""
    params = _parameters(tool, strict)
    if fmt == "openai":
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": params,
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}
    if fmt == "openai-responses":
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": params,
            "strict": strict,
        }
    if fmt == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": params}
    if fmt == "mcp":
        return {
            "name": tool.name,
            "title": tool.title or tool.name,
            "description": tool.description,
            "inputSchema": params,
            "annotations": {
                "title": tool.title or tool.name,
                "readOnlyHint": tool.read_only,
                "destructiveHint": tool.destructive,
                "idempotentHint": tool.idempotent,
                "openWorldHint": False,
            },
        }
    raise InvalidArgument(f"format must be one of {', '.join(FORMATS)}; got {shown(fmt, 40)}")


def render_all(
    tools: Iterable[ToolDefinition], fmt: str = "openai", *, strict: bool = False
) -> list[dict[str, Any]]:
    return [render(t, fmt, strict=strict) for t in tools]


def strict_problems(schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Why `schema` would not pass OpenAI's strict mode (the rules `strict_schema` follows);
    [] when it passes. Used by the tests and by anyone adding a tool."""
    problems = [f"{path}: keyword {k!r} is not allowed" for k in schema if k not in STRICT_KEYWORDS]
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds:
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            problems.append(f"{path}: an object needs properties")
            props = {}
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        if list(schema.get("required", ())) != list(props):
            problems.append(f"{path}: every property must be required")
        for name, sub in props.items():
            problems += strict_problems(sub, f"{path}.{name}")
    if "array" in kinds:
        items = schema.get("items")
        if not isinstance(items, Mapping):
            problems.append(f"{path}: an array needs items")
        else:
            problems += strict_problems(items, f"{path}[]")
    if "enum" in schema and "null" in kinds and None not in schema["enum"]:
        problems.append(f"{path}: a nullable enum must list null")
    if kind is None:
        problems.append(f"{path}: every schema needs a type")
    return problems


__all__ = ["FORMATS", "STRICT_KEYWORDS", "render", "render_all", "strict_problems", "strict_schema"]
