"""Stable memory ids (ADR 0074) on a real `pi-hermes-memory serve` process: REST PATCH and
DELETE and MCP `memory_update` keep working with the id the store call returned."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.memory_server import RunningServer, command, environment, running


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("ids")
    (tmp / "agent").mkdir()
    (tmp / "agent" / "hermes-memory-config.json").write_text(
        '{"tools": {"sets": ["hermes", "pi-memory"]}}'
    )
    with running(tmp) as s:
        yield s


def _data(response: httpx.Response, status: int) -> Any:
    assert response.status_code == status, response.text
    return response.json()["data"]


def test_rest_patch_twice_and_delete_with_the_same_id(srv: RunningServer) -> None:
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        added = _data(
            client.post("/api/memory/store", json={"content": "Deploys use bin/ship"}), 201
        )
        entry_id = added["entry_id"]
        assert added["version"] == 1 and added["version_id"] == entry_id
        for n, text in ((2, "Deploys use bin/go"), (3, "Deploys use bin/launch")):
            patched = _data(client.patch(f"/api/memory/{entry_id}", json={"content": text}), 200)
            assert (patched["status"], patched["entry_id"], patched["version"]) == (
                "replaced",
                entry_id,
                n,
            )
        current = _data(client.get(f"/api/memory/{entry_id}"), 200)
        assert (current["id"], current["version"], current["text"]) == (
            entry_id,
            3,
            "Deploys use bin/launch",
        )
        first = _data(client.get(f"/api/memory/{entry_id}@1"), 200)
        assert first["text"] == "Deploys use bin/ship" and first["superseded_by"] is not None
        second = _data(client.get(f"/api/memory/{first['superseded_by']}"), 200)
        assert (second["id"], second["version"]) == (entry_id, 2)
        hits = _data(client.post("/api/memory/search", json={"query": "deploys launch"}), 200)
        assert [(h["id"], h["version"]) for h in hits["results"]] == [(entry_id, 3)]
        listed = _data(client.get("/api/memory/list"), 200)["entries"]
        assert [e["id"] for e in listed] == [entry_id]
        # an old version's id (or ID@N) still answers 409 superseded, naming the memory's id
        stale = client.patch(f"/api/memory/{entry_id}@2", json={"content": "Deploys use x"})
        assert stale.status_code == 409 and entry_id in stale.json()["error"]
        deleted = _data(client.delete(f"/api/memory/{entry_id}"), 200)
        assert deleted["status"] == "removed" and deleted["entry_id"] == entry_id
        assert client.delete(f"/api/memory/{entry_id}").status_code == 404
        assert client.get(f"/api/memory/{entry_id}").status_code == 404


def test_mcp_memory_update_twice_with_the_same_id(srv: RunningServer) -> None:
    async def main() -> list[dict[str, Any]]:
        async with (
            streamable_http_client(f"{srv.url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            outs: list[dict[str, Any]] = []
            stored = await session.call_tool("memory_store", {"text": "Lint with ruff 0.5"})
            outs.append(json.loads(stored.content[0].text))  # type: ignore[union-attr]
            memory_id = outs[0]["id"]
            for text in ("Lint with ruff 0.6", "Lint with ruff 0.7"):
                updated = await session.call_tool("memory_update", {"id": memory_id, "text": text})
                assert not updated.is_error, updated.content
                outs.append(json.loads(updated.content[0].text))  # type: ignore[union-attr]
            listed = await session.call_tool("memory_list", {})
            outs.append(json.loads(listed.content[0].text))  # type: ignore[union-attr]
            return outs

    stored, first, second, listed = anyio.run(main)
    memory_id = stored["id"]
    assert first["success"] and first["id"] == memory_id and first["version"] == 2
    assert second["success"] and second["id"] == memory_id and second["version"] == 3
    rows = [m for m in listed["results"] if m["id"] == memory_id]
    assert [(m["text"], m["version"]) for m in rows] == [("Lint with ruff 0.7", 3)], listed


def test_the_cli_history_and_version_reads_see_the_server_writes(srv: RunningServer) -> None:
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        entry_id = _data(
            client.post("/api/memory/store", json={"content": "Cache lives in /var/cache/zq"}), 201
        )["entry_id"]
        _data(
            client.patch(f"/api/memory/{entry_id}", json={"content": "Cache lives in /srv/zq"}), 200
        )
    env = environment(srv.root)
    work = srv.root.parent / "work"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command(*args), cwd=work, env=env, capture_output=True, text=True, timeout=120
        )

    history = run("history", entry_id, "--json")
    assert history.returncode == 0, history.stderr
    assert [(e["id"], e["version"]) for e in json.loads(history.stdout)] == [
        (entry_id, 1),
        (entry_id, 2),
    ]
    old = json.loads(run("get", f"{entry_id}@1", "--json").stdout)
    assert old["text"] == "Cache lives in /var/cache/zq"
