"""The knowledge REST routes and MCP tools on a real `pi-hermes-memory serve` process
(ADR 0048)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.memory_server import RunningServer, running


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kb") / "docs"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "runbook.md").write_text("# Runbook\n\n## Restart\n\nRestart the pager.\n")
    (root / "notes.txt").write_text("The pager rotation starts Monday.\n")
    return root


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, docs: Path) -> Iterator[RunningServer]:
    env = {"PI_MEMORY_KNOWLEDGE_PATHS": json.dumps([str(docs)])}
    with running(tmp_path_factory.mktemp("kbsrv"), env=env) as s:
        yield s


def _envelope(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"success", "data", "error"}
    assert body["success"] is (200 <= status < 300)
    if not body["success"]:
        assert isinstance(body["error"], str) and "Traceback" not in body["error"]
    return body


def test_index_search_stats_over_rest(srv: RunningServer, docs: Path) -> None:
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        report = _envelope(c.post("/api/knowledge/index", json={}), 200)["data"]
        assert (report["files_new"], report["roots"]) == (2, [str(docs)])
        assert _envelope(c.post("/api/knowledge/index", json={}), 200)["data"]["bytes_read"] == 0
        found = _envelope(c.post("/api/knowledge/search", json={"query": "pager"}), 200)["data"]
        assert {r["relative_path"] for r in found["results"]} == {"ops/runbook.md", "notes.txt"}
        assert found["untrusted"] and "<knowledge-results>" in found["message"]
        one = _envelope(
            c.post("/api/knowledge/search", json={"query": "pager", "path": "ops/", "limit": 1}),
            200,
        )["data"]["results"]
        assert [
            (r["relative_path"], r["start_line"], r["end_line"], r["heading"]) for r in one
        ] == [("ops/runbook.md", 3, 5, "Runbook > Restart")]
        stats = _envelope(c.get("/api/knowledge/stats"), 200)["data"]
        assert (stats["files"], stats["chunks"]) == (2, 3)  # "# Runbook" is a chunk too
        health = _envelope(c.get("/api/status"), 200)["data"]
        assert health["knowledge"] == {"folders": 1} and "pager" not in json.dumps(health)
        for bad in ({"query": 5}, {}, {"query": "x", "limit": 0}, {"query": "x", "extra": 1}):
            _envelope(c.post("/api/knowledge/search", json=bad), 400)
        _envelope(c.post("/api/knowledge/index", json={"force": True}), 400)
        _envelope(c.get("/api/knowledge/search"), 405)
        spec = c.get("/openapi.json").json()
        assert {"/api/knowledge/search", "/api/knowledge/index", "/api/knowledge/stats"} <= set(
            spec["paths"]
        )


def test_mcp_lists_the_knowledge_tools_with_their_hints(srv: RunningServer) -> None:
    async def main() -> tuple[dict[str, Any], Any]:
        async with (
            streamable_http_client(f"{srv.url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            found = await session.call_tool("knowledge_search", {"query": "rotation"})
            return tools, found

    tools, found = anyio.run(main)
    hints = {
        name: (tools[name].annotations.read_only_hint, tools[name].annotations.idempotent_hint)
        for name in ("knowledge_search", "knowledge_index", "knowledge_stats")
        if tools[name].annotations is not None
    }
    assert hints == {
        "knowledge_search": (True, True),
        "knowledge_index": (False, True),
        "knowledge_stats": (True, True),
    }
    assert not found.is_error
    result = json.loads(found.content[0].text)
    assert [r["relative_path"] for r in result["results"]] == ["notes.txt"]


def test_without_folders_the_routes_answer_503(tmp_path: Path) -> None:
    with running(tmp_path) as s, httpx.Client(base_url=s.url, timeout=30) as c:
        for response in (
            c.post("/api/knowledge/search", json={"query": "x"}),
            c.post("/api/knowledge/index", json={}),
            c.get("/api/knowledge/stats"),
        ):
            error = _envelope(response, 503)["error"]
            assert "no knowledge folders are configured" in error
