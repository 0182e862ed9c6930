"""The knowledge-base REST routes (ADR 0048): `POST /api/knowledge/search`,
`POST /api/knowledge/index`, `GET /api/knowledge/stats`, with the server's
`{"success", "data", "error"}` envelope. Without configured folders each answers 503 with the
error saying how to configure them (`KnowledgeNotConfigured`); bad arguments are 400."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_hermes_memory.adapters.server.app import Request, Rest


async def search(rest: Rest, request: Request, _: str | None) -> tuple[int, Any]:
    from pi_hermes_memory.adapters.server.app import parse_body
    from pi_hermes_memory.knowledge.tool import parse_knowledge_search, search_json

    query, limit, path = parse_knowledge_search(parse_body(request.body))

    def work(memory: Any) -> dict[str, Any]:
        return search_json(query, memory.knowledge.search(query, limit=limit, path=path))

    return 200, await rest.call(request, work)


async def index(rest: Rest, request: Request, _: str | None) -> tuple[int, Any]:
    from pi_hermes_memory.adapters.server.app import ApiError, parse_body

    if request.body.strip() and parse_body(request.body):
        raise ApiError(400, "knowledge index takes no fields (send {} or no body)")
    return 200, await rest.call(request, lambda m: m.knowledge.index().to_json())


async def stats(rest: Rest, request: Request, _: str | None) -> tuple[int, Any]:
    return 200, await rest.call(request, lambda m: m.knowledge.stats().to_json())


__all__ = ["index", "search", "stats"]
