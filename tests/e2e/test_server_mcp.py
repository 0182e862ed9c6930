"""MCP with the official SDK's client: streamable HTTP at /mcp of a real server process, and
stdio (`pi-hermes-memory mcp`) (ADR 0044)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pi_hermes_memory
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.memory_server import RunningServer, environment, running


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running(tmp_path_factory.mktemp("mcp")) as s:
        yield s


async def _exercise(session: ClientSession) -> dict[str, Any]:
    await session.initialize()
    listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert {"memory", "memory_search"} <= set(tools)
    assert tools["memory_search"].annotations is not None
    assert tools["memory_search"].annotations.read_only_hint is True
    assert tools["memory"].annotations is not None
    assert tools["memory"].annotations.read_only_hint is False
    assert "project" in tools["memory"].input_schema["properties"]
    added = await session.call_tool(
        "memory",
        {"action": "add", "target": "memory", "content": "MCP clients reach the store zmcp"},
    )
    assert not added.is_error, added.content
    found = await session.call_tool("memory_search", {"query": "zmcp"})
    assert not found.is_error
    result: dict[str, Any] = json.loads(found.content[0].text)  # type: ignore[union-attr]
    assert any("zmcp" in hit["text"] for hit in result["results"])
    bad = await session.call_tool("memory_search", {"query": 5})
    assert bad.is_error
    return result


def test_streamable_http(srv: RunningServer) -> None:
    async def main() -> None:
        async with (
            streamable_http_client(f"{srv.url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await _exercise(session)
            # tenancy: a project chosen by the tool arguments
            args = {
                "action": "add",
                "target": "project",
                "content": "mcp gamma fact",
                "project": "gamma",
            }
            assert not (await session.call_tool("memory", args)).is_error

    anyio.run(main)
    page = httpx.get(f"{srv.url}/api/memory/list", params={"project": "gamma", "target": "project"})
    assert [e["text"] for e in page.json()["data"]["entries"]] == ["mcp gamma fact"]


def test_every_library_tool_is_an_mcp_tool_with_its_annotations(srv: RunningServer) -> None:
    async def listed() -> list[Any]:
        async with (
            streamable_http_client(f"{srv.url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return list((await session.list_tools()).tools)

    tools = {t.name: t for t in anyio.run(listed)}
    with pi_hermes_memory.open(agent_root=srv.root, cwd=srv.root.parent / "work") as memory:
        definitions = memory.tool_definitions()
    assert set(tools) == {d.name for d in definitions}
    for d in definitions:
        hints = tools[d.name].annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            d.read_only,
            d.destructive,
            d.idempotent,
        )
        schema = tools[d.name].input_schema
        assert set(schema["properties"]) == {*d.parameters["properties"], "project", "agent"}


def _stdio_server(tmp_path: Path) -> StdioServerParameters:
    """`pi-hermes-memory mcp` as a desktop client starts it, in an empty working directory."""
    (tmp_path / "work").mkdir()
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pi_hermes_memory.adapters.cli.app", "mcp"],
        env=environment(tmp_path / "agent"),
        cwd=str(tmp_path / "work"),
    )


def test_stdio(tmp_path: Path) -> None:
    params = _stdio_server(tmp_path)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await _exercise(session)

    anyio.run(main)


def _project_entries(agent_root: Path, project: str) -> list[str]:
    with pi_hermes_memory.open(project=project, agent_root=agent_root) as memory:
        return [view.text for view in memory.entries("project")]


def test_stdio_takes_the_project_from_the_client_roots(tmp_path: Path) -> None:
    """A desktop client runs the server in some folder of its own; the repository the user
    works in is the client's root, and a call without a project argument lands there; after
    the client announces new roots, the next call follows them."""
    import warnings

    from mcp import types

    roots = [tmp_path / "repos" / "alpha-repo"]
    params = _stdio_server(tmp_path)

    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[types.Root(uri=root.as_uri()) for root in roots]  # type: ignore[arg-type]
        )

    async def add(session: ClientSession, text: str, **more: str) -> None:
        done = await session.call_tool(
            "memory", {"action": "add", "target": "project", "content": text, **more}
        )
        assert not done.is_error, done.content
        assert "project_notice" not in done.content[0].text  # type: ignore[union-attr]

    async def main() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, list_roots_callback=list_roots) as session,
        ):
            await session.initialize()
            await add(session, "Alpha builds with make release")
            await add(session, "Explicit argument wins over roots", project="named")
            roots[0] = tmp_path / "repos" / "beta-repo"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await session.send_roots_list_changed()
            await add(session, "Beta builds with cargo")

    anyio.run(main)
    agent = tmp_path / "agent"
    assert _project_entries(agent, "alpha-repo") == ["Alpha builds with make release"]
    assert _project_entries(agent, "beta-repo") == ["Beta builds with cargo"]
    assert _project_entries(agent, "named") == ["Explicit argument wins over roots"]
    assert _project_entries(agent, "work") == []


def test_stdio_without_client_roots_uses_the_working_directory(tmp_path: Path) -> None:
    params = _stdio_server(tmp_path)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            done = await session.call_tool(
                "memory", {"action": "add", "target": "project", "content": "Work uses tox"}
            )
            assert not done.is_error, done.content

    anyio.run(main)
    assert _project_entries(tmp_path / "agent", "work") == ["Work uses tox"]


def test_stdio_without_client_roots_says_so_once(tmp_path: Path) -> None:
    """The fallback is not silent (ADR 0092): the first call that falls back to the working
    directory says why and which project that gives; the later calls do not repeat it. A
    client whose roots name no project folder is told so too."""
    from mcp import types

    async def calls(session: ClientSession) -> list[dict[str, Any]]:
        await session.initialize()
        out = []
        for text in ("Work uses tox", "Work uses ruff"):
            done = await session.call_tool(
                "memory", {"action": "add", "target": "project", "content": text}
            )
            assert not done.is_error, done.content
            out.append(json.loads(done.content[0].text))  # type: ignore[union-attr]
        return out

    async def no_roots() -> list[dict[str, Any]]:
        params = _stdio_server(tmp_path)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await calls(session)

    async def root_of_slash(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///")])  # type: ignore[arg-type]

    async def useless_roots() -> list[dict[str, Any]]:
        params = _stdio_server(tmp_path / "second")
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, list_roots_callback=root_of_slash) as session,
        ):
            return await calls(session)

    first, second = anyio.run(no_roots)
    notice = first["project_notice"]
    assert "declares no MCP roots" in notice and "project 'work'" in notice, notice
    assert str(tmp_path / "work") in notice
    assert "project_notice" not in second
    (tmp_path / "second").mkdir()
    first, second = anyio.run(useless_roots)
    assert "roots name no project folder" in first["project_notice"]
    assert "project_notice" not in second
    assert _project_entries(tmp_path / "agent", "work") == ["Work uses tox", "Work uses ruff"]


def test_stdio_reads_the_store_settings_of_the_environment_and_openclaw_json(
    tmp_path: Path,
) -> None:
    """`pi-hermes-memory mcp` in a desktop client's config with `"env": {"PI_MEMORY_DB_PATH":
    ...}` uses that store, as `serve` does; a bad openclaw.json stops it with exit 2."""
    params = _stdio_server(tmp_path)
    elsewhere = tmp_path / "db-path"
    params.env = {**(params.env or {}), "PI_MEMORY_DB_PATH": str(elsewhere)}

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            done = await session.call_tool(
                "memory", {"action": "add", "target": "memory", "content": "Lives in DB_PATH"}
            )
            assert not done.is_error, done.content

    anyio.run(main)
    # PI_MEMORY_DB_PATH is the database's folder, this library's memoryDir (ADR 0075)
    assert (elsewhere / "sessions.db").is_file()
    with pi_hermes_memory.open(
        agent_root=tmp_path / "agent", overrides={"memoryDir": str(elsewhere)}
    ) as memory:
        assert [v.text for v in memory.entries("memory")] == ["Lives in DB_PATH"]
    assert not list((tmp_path / "agent").rglob("sessions.db"))
    bad = tmp_path / "openclaw.json"
    bad.write_text("{broken")
    done = subprocess.run(
        [params.command, *params.args, "--config", str(bad)],
        env=params.env,
        cwd=params.cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "not valid JSON" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_tools_own_project_argument_reaches_the_tool(srv: RunningServer) -> None:
    """session_search and memory_skill_stats have a `project` of their own (a filter, '*' for
    every project): the server must pass it to the tool, not take it as the store's project."""

    async def main() -> list[dict[str, Any]]:
        async with (
            streamable_http_client(f"{srv.url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            results = []
            for name, args in (
                ("memory_skill_stats", {"project": "web"}),
                ("session_search", {"query": "deploy", "project": "*"}),
            ):
                done = await session.call_tool(name, args)
                assert not done.is_error, done.content
                results.append(json.loads(done.content[0].text))  # type: ignore[union-attr]
            return results

    stats, sessions = anyio.run(main)
    assert "in project web" in stats["message"], stats["message"]
    assert sessions["success"] is True
    health = httpx.get(f"{srv.url}/api/status").json()["data"]
    assert all(store["project"] not in ("*", "web") for store in health["stores"])


def test_a_bad_tenant_name_is_invalid_arguments_and_the_log_is_json_lines(
    srv: RunningServer,
) -> None:
    async def main() -> list[dict[str, Any]]:
        async with (
            streamable_http_client(f"{srv.url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out = []
            for tenant in ({"project": "../etc"}, {"agent": "bad agent!"}):
                done = await session.call_tool("memory_search", {"query": "x", **tenant})
                assert done.is_error
                out.append(json.loads(done.content[0].text))  # type: ignore[union-attr]
            return out

    for result in anyio.run(main):
        assert result["status"] == "invalid_arguments", result
    # the request log is one JSON object per line (the SDK's plain-text INFO lines are off)
    lines = [line for line in srv.log.read_text().splitlines() if line.startswith("{")]
    assert any('"/mcp"' in line for line in lines)
    assert "Terminating session" not in srv.log.read_text()


def test_get_on_mcp_is_405_not_a_stream_that_never_ends(srv: RunningServer) -> None:
    """Stateless streamable HTTP has no session to push to: a GET would hold an empty SSE
    stream (and a connection slot) open forever; the specification allows 405."""
    answer = httpx.get(f"{srv.url}/mcp", headers={"accept": "text/event-stream"}, timeout=10)
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    assert answer.json()["error"]["code"] == -32600
