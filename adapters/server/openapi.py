"""The OpenAPI 3.1 document of the REST API (served at /openapi.json, ADR 0044)."""

from __future__ import annotations

from typing import Any

_ENVELOPE = {
    "type": "object",
    "required": ["success", "data", "error"],
    "properties": {
        "success": {"type": "boolean"},
        "data": {},
        "error": {"type": ["string", "null"]},
    },
}
_TENANT = [
    {"name": "X-Project", "in": "header", "required": False, "schema": {"type": "string"}},
    {"name": "X-Agent", "in": "header", "required": False, "schema": {"type": "string"}},
    {"name": "project", "in": "query", "required": False, "schema": {"type": "string"}},
    {"name": "agent", "in": "query", "required": False, "schema": {"type": "string"}},
]
_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "the memory's id (kept by every update: its current version), ID@N for "
    "version N, or a version's own id (ADR 0074)",
}
_KINDS = ["preference", "fact", "decision", "entity", "other"]
_CATEGORY = {
    "type": "string",
    "description": "a failure entry's category (failure, correction, insight, preference, "
    "convention, tool-quirk); on other entries the second seed's category (its kind)",
}
_IMPORTANCE = {"type": "number", "minimum": 0, "maximum": 1}
_SCOPE = {
    "type": "string",
    "description": "global, agent:<id>, custom:<name>, user, user:<id> or project",
}
_RPC_ERROR = {
    "type": "object",
    "required": ["jsonrpc", "id", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        },
    },
}
_KIND = {"type": "string", "enum": _KINDS, "description": "the second seed's category"}


def _answers(*codes: int) -> dict[str, Any]:
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Envelope"}}}}
    out = {str(c): {"description": "the envelope", **ref} for c in codes}
    for c in (401, 403, 408, 413, 415):
        out[str(c)] = {"description": "refused by the guard", **ref}
    return out


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def document() -> dict[str, Any]:
    from pi_hermes_memory import __version__

    strings = {"type": "string"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "pi-hermes-memory", "version": __version__},
        "components": {
            "schemas": {"Envelope": _ENVELOPE},
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            },
        },
        "security": [{"bearer": []}, {"apiKey": []}],
        "paths": {
            "/health": {
                "get": {
                    "summary": "liveness: status and version only; needs no API key",
                    "security": [],
                    "responses": _answers(200),
                }
            },
            "/api/status": {
                "get": {
                    "summary": "status, version, memory use, open stores, reader processes, "
                    "embedding and rerank settings, knowledge folder count",
                    "responses": _answers(200),
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "this document (plain OpenAPI, not in the envelope)",
                    "responses": {
                        "200": {
                            "description": "the OpenAPI document",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **_answers(),
                    },
                }
            },
            "/mcp": {
                "post": {
                    "summary": "MCP over streamable HTTP (stateless, JSON answers): a JSON-RPC "
                    "request; refusals (key, Origin, Host, size) are JSON-RPC errors",
                    "requestBody": _body({"type": "object"}),
                    "responses": {
                        "200": {
                            "description": "the JSON-RPC answer",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        "202": {"description": "a notification, accepted"},
                        **{
                            str(c): {
                                "description": "refused: a JSON-RPC error",
                                "content": {"application/json": {"schema": _RPC_ERROR}},
                            }
                            for c in (401, 403, 404, 408, 413, 415)
                        },
                    },
                }
            },
            "/api/memory/search": {
                "post": {
                    "summary": "full-text search (the memory_search tool's arguments)",
                    "parameters": _TENANT,
                    "requestBody": _body(
                        {
                            "type": "object",
                            "required": ["query"],
                            "additionalProperties": False,
                            "properties": {
                                "query": strings,
                                "target": strings,
                                "category": _CATEGORY,
                                "scope": _SCOPE,
                                "limit": {"type": "integer", "minimum": 1},
                                "include_superseded": {"type": "boolean"},
                            },
                        }
                    ),
                    "responses": _answers(200, 400, 503),
                }
            },
            "/api/memory/store": {
                "post": {
                    "summary": "add an entry",
                    "parameters": _TENANT,
                    "requestBody": _body(
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "description": "the text as content or as text (one of them)",
                            "properties": {
                                "content": strings,
                                "text": {
                                    "type": "string",
                                    "description": "the text (the memory_store tool's name)",
                                },
                                "target": strings,
                                "category": _CATEGORY,
                                "importance": _IMPORTANCE,
                                "kind": _KIND,
                                "scope": strings,
                                "force": {"type": "boolean"},
                            },
                        }
                    ),
                    "responses": _answers(201, 200, 400, 409, 503),
                }
            },
            "/api/memory/list": {
                "get": {
                    "summary": "active entries, paginated",
                    "parameters": [
                        *_TENANT,
                        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                        {"name": "offset", "in": "query", "schema": {"type": "integer"}},
                        {"name": "target", "in": "query", "schema": strings},
                        {"name": "scope", "in": "query", "schema": strings},
                        {"name": "category", "in": "query", "schema": _CATEGORY},
                        {"name": "history", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "responses": _answers(200, 400),
                }
            },
            "/api/memory/stats": {
                "get": {
                    "summary": "what `pi-hermes-memory stats --json` prints: counts per "
                    "target, scope and project, characters against limits, vectors",
                    "parameters": _TENANT,
                    "responses": _answers(200),
                }
            },
            "/api/knowledge/search": {
                "post": {
                    "summary": "search the knowledge base (the knowledge_search tool's arguments)",
                    "parameters": _TENANT,
                    "requestBody": _body(
                        {
                            "type": "object",
                            "required": ["query"],
                            "additionalProperties": False,
                            "properties": {
                                "query": {"type": "string", "minLength": 1},
                                "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                                "path": {"type": "string", "minLength": 1},
                            },
                        }
                    ),
                    "responses": _answers(200, 400, 503),
                }
            },
            "/api/knowledge/index": {
                "post": {
                    "summary": "index new and changed files of the knowledge folders",
                    "parameters": _TENANT,
                    "requestBody": _body({"type": "object", "additionalProperties": False}),
                    "responses": _answers(200, 400, 503),
                }
            },
            "/api/knowledge/stats": {
                "get": {
                    "summary": "knowledge folders, files, chunks and the last run",
                    "parameters": _TENANT,
                    "responses": _answers(200, 503),
                }
            },
            "/api/memory/{id}": {
                "get": {
                    "summary": "one entry; without a project, any project's entry",
                    "parameters": [_ID, *_TENANT],
                    "responses": _answers(200, 404),
                },
                "delete": {
                    "summary": "remove an entry (restorable)",
                    "parameters": [_ID, *_TENANT],
                    "responses": _answers(200, 404),
                },
                "patch": {
                    "summary": "replace an entry's text, category, importance or kind (the old "
                    "version stays as history)",
                    "parameters": [_ID, *_TENANT],
                    "requestBody": _body(
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "content": strings,
                                "category": _CATEGORY,
                                "importance": _IMPORTANCE,
                                "kind": _KIND,
                            },
                        }
                    ),
                    "responses": _answers(200, 400, 404, 409),
                },
            },
        },
    }
