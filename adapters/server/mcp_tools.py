"""MCP over the official SDK (ADR 0044): every tool of `Memory.tool_definitions()` becomes an
MCP tool (rendered by `tool_schemas(fmt="mcp")`, annotations included), so tools added to the
library appear here without a change. Calls go to `Memory.call_tool(name, arguments)`.

Tenancy: every tool takes two optional arguments more, `project` and `agent`, which choose
the store (removed before the library sees the arguments). Served over streamable HTTP at
/mcp (stateless, by `pi-hermes-memory serve`) and over stdio (`pi-hermes-memory mcp`).

Over stdio, a call without a `project` argument, on a server started without `--project`,
takes its project from the client's declared roots (`roots/list`, asked once per connection
and again after `notifications/roots/list_changed`): the name of the first `file://` root,
as the library derives a project from a working directory. A client that declares no roots,
or whose roots name no usable folder, falls back to the server's working directory (or
`--cwd`), and the first call that does says so in its result (`project_notice`: why, and which
project that gives) and on stderr (ADR 0092). Stateless
HTTP has no channel for the server to ask, so there the arguments and the server's own
project decide (ADR 0044 amendment in docs/server.md).
"""

from __future__ import annotations

import json
import warnings
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from pi_hermes_memory.adapters.server.app import (
    ApiError,
    ServerSettings,
    StoreCache,
    hidden_character,
    log,
)
from pi_hermes_memory.adapters.server.config import StoreOptions
from pi_hermes_memory.adapters.server.readers import READ_ONLY_TOOLS
from pi_hermes_memory.domain.memory.model import is_safe_project_name
from pi_hermes_memory.errors import ConfigError, InvalidArgument

#: the arguments the server takes for itself
TENANT_PROPERTIES = {
    "project": {
        "type": "string",
        "description": "The project whose memory to use (default: the server's project).",
    },
    "agent": {
        "type": "string",
        "description": "The agent id: selects the scopes this call may read and write.",
    },
}


def mcp_tools(memory: Any) -> list[Any]:
    """The store's tools as MCP `Tool`s, with the tenancy arguments added."""
    from mcp import types

    tools = []
    for schema in memory.tool_schemas("mcp"):
        schema = dict(schema)
        params = dict(schema["inputSchema"])
        # a tool's own `project` (session_search, memory_skill_stats: a filter) stays its own
        params["properties"] = {**TENANT_PROPERTIES, **params.get("properties", {})}
        schema["inputSchema"] = params
        tools.append(types.Tool.model_validate(schema))
    return tools


def own_tenant_arguments(memory: Any) -> dict[str, frozenset[str]]:
    """Tool name -> the tenancy argument names (project, agent) that are the tool's own
    parameters: those reach the tool and do not choose the store."""
    out: dict[str, frozenset[str]] = {}
    for definition in memory.tool_definitions():
        own = frozenset(TENANT_PROPERTIES) & set(definition.parameters.get("properties", {}))
        if own:
            out[definition.name] = own
    return out


def root_project(uris: list[str]) -> str | None:
    """The project a client's roots name: the last path segment of the first `file://` root
    that is a safe project name (None when no root qualifies)."""
    for uri in uris:
        parts = urlsplit(uri)
        if parts.scheme != "file":
            continue
        name = PurePosixPath(unquote(parts.path).rstrip("/")).name.strip()
        if is_safe_project_name(name):
            return name
    return None


class ClientRoots:
    """The project named by one connection's client roots, asked for once and again after
    the client says its roots changed. When the roots name no project, `fallback` says why,
    and the first call that falls back says so in its result (`notice`, once per connection)."""

    def __init__(self) -> None:
        self._known = False
        self._project: str | None = None
        self.fallback: str | None = None  # why the roots named no project
        self.noticed = False

    def forget(self) -> None:
        self._known = False

    async def project(self, ctx: Any) -> str | None:
        if self._known:
            return self._project
        from mcp import types

        with warnings.catch_warnings():  # roots are deprecated from protocol 2026-07-28 on
            warnings.simplefilter("ignore")
            declared = ctx.session.check_client_capability(
                types.ClientCapabilities(roots=types.RootsCapability())
            )
            project = None
            reason = "the client declares no MCP roots"
            if declared:
                try:
                    listed = await ctx.session.list_roots()
                    uris = [str(root.uri) for root in listed.roots]
                    project = root_project(uris)
                    reason = (
                        "the client's MCP roots name no project folder"
                        if uris
                        else "the client lists no MCP roots"
                    )
                except Exception as exc:  # a client that fails to answer: fall back
                    log.warning(json.dumps({"event": "mcp.roots_failed", "error": str(exc)}))
                    reason = "the client did not answer roots/list"
        self._project, self._known = project, True
        self.fallback = None if project is not None else reason
        return project


def fallback_notice(reason: str, project: str | None, cwd: str) -> str:
    """What the first call of a connection without a roots project says about its project."""
    where = f"project {project!r}" if project else "no project (project memory is refused)"
    return (
        f"{reason}: this connection uses {where}, from the server's working directory {cwd}. "
        "Pass a `project` argument, or give the server --project NAME or --cwd DIR in the "
        "client's entry (`pi-hermes-memory setup CLIENT --project` writes one for a project)."
    )


async def _fallback_notice(stores: StoreCache, agent: str | None, reason: str) -> str:
    """The notice for a connection whose roots name no project, naming the project the
    server's working directory gives (also logged, on stderr)."""
    import os

    cwd = stores.settings.cwd or os.getcwd()
    try:
        project = await stores.call(None, agent, lambda m: m.config.project)
    except Exception:  # the call itself reports a store that cannot open
        project = None
    log.warning(json.dumps({"event": "mcp.roots_fallback", "reason": reason, "cwd": cwd}))
    return fallback_notice(reason, project, cwd)


def build_server(stores: StoreCache, *, roots: ClientRoots | None = None) -> Any:
    """The SDK's low-level server, answering tools/list and tools/call from the stores.
    With `roots`, a call without a project argument takes the client's roots' project."""
    from mcp import types
    from mcp.server.lowlevel import Server
    from pi_hermes_memory import __version__

    async def roots_changed(ctx: Any, params: Any) -> None:
        if roots is not None:
            roots.forget()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await stores.call(None, None, mcp_tools)
        return types.ListToolsResult(tools=tools)

    owned: dict[str, frozenset[str]] = {}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if not owned:
            owned.update(await stores.call(None, None, own_tenant_arguments) or {"": frozenset()})
        arguments = dict(params.arguments or {})
        own = owned.get(params.name, frozenset())
        project = None if "project" in own else arguments.pop("project", None)
        agent = None if "agent" in own else arguments.pop("agent", None)
        hidden = [
            f"{label} {problem}"
            for label, value in (("project", project), ("agent", agent))
            if isinstance(value, str) and (problem := hidden_character(value)) is not None
        ]
        if not all(isinstance(v, str | None) for v in (project, agent)) or hidden:
            result: dict[str, Any] = {
                "success": False,
                "status": "invalid_arguments",
                "message": hidden[0] if hidden else "project and agent must be strings",
            }
        else:
            notice = None
            if project is None and roots is not None and stores.settings.project is None:
                project = await roots.project(ctx)
                if project is None and roots.fallback is not None and not roots.noticed:
                    roots.noticed = True
                    notice = await _fallback_notice(stores, agent, roots.fallback)
            try:
                if params.name in READ_ONLY_TOOLS:  # in a reader process (ADR 0083)
                    answer = await stores.read(project, agent, "tool", params.name, arguments)
                    result = dict(answer.value())
                else:
                    result = dict(
                        await stores.call(
                            project, agent, lambda m: m.call_tool(params.name, arguments)
                        )
                    )
            except (InvalidArgument, ConfigError) as exc:  # a bad project or agent name
                result = {"success": False, "status": "invalid_arguments", "message": str(exc)}
            except ApiError as exc:  # said by a reader process
                status = "invalid_arguments" if exc.status == 400 else "error"
                result = {"success": False, "status": status, "message": str(exc)}
            except Exception as exc:  # opening the store failed: a result, not a crash
                result = {"success": False, "status": "error", "message": str(exc)}
            if notice is not None:
                result["project_notice"] = notice
        text = json.dumps(result, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=json.loads(text),
            is_error=not result.get("success", False),
        )

    with warnings.catch_warnings():  # the roots notification is deprecated from 2026-07-28 on
        warnings.simplefilter("ignore")
        return Server(
            "pi-hermes-memory",
            version=__version__,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_roots_list_changed=roots_changed if roots is not None else None,
        )


def session_manager(stores: StoreCache, *, max_body: int) -> Any:
    """Streamable HTTP, stateless, JSON answers. Host, Origin, Content-Type, the size limit
    and the body timeout are checked for every route by the server's guard
    (adapters/server/app.py), which hands the SDK a body already read, so the SDK's own
    checks are not repeated (its size limit stays as a backstop)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    return StreamableHTTPSessionManager(
        app=build_server(stores),
        stateless=True,
        json_response=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=max_body,
    )


#: seconds the stdio server keeps answering after the client closed stdin (at most)
DRAIN_SECONDS = 300.0


async def run_draining(server: Any, read: Any, write: Any) -> None:
    """`server.run` over (read, write), except that the end of the input waits until every
    request read so far is answered (at most DRAIN_SECONDS): a client that writes its last
    request and closes stdin at once gets that answer. The SDK ends the connection at end
    of input and drops the calls still running ("Connection closed"). A request the server
    sends the client (roots/list) that can no longer be answered, because the input ended,
    gets an error at once, so the call that asked goes on (roots fall back to the working
    directory)."""
    import math

    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import (
        CONNECTION_CLOSED,
        ErrorData,
        JSONRPCError,
        JSONRPCNotification,
        JSONRPCRequest,
        JSONRPCResponse,
    )

    pending: set[str | int] = set()  # the client's requests not answered yet
    asked: set[str | int] = set()  # the server's requests to the client not answered yet
    ended = [False]  # the client closed its input
    drained = anyio.Event()
    to_server, server_reads = anyio.create_memory_object_stream[Any](math.inf)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](0)

    def unanswerable(request_id: str | int) -> SessionMessage:
        error = ErrorData(code=CONNECTION_CLOSED, message="the client closed its input")
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))

    async def relay_in() -> None:
        async with to_server:
            async for item in read:
                message = getattr(item, "message", None)
                if isinstance(message, JSONRPCRequest):
                    pending.add(message.id)
                elif isinstance(message, JSONRPCResponse | JSONRPCError):
                    if message.id is not None:
                        asked.discard(message.id)
                elif isinstance(message, JSONRPCNotification) and (
                    message.method == "notifications/cancelled"
                ):
                    pending.discard((message.params or {}).get("requestId"))
                await to_server.send(item)
            ended[0] = True
            for request_id in sorted(asked, key=str):
                await to_server.send(unanswerable(request_id))
            asked.clear()
            if pending:
                with anyio.move_on_after(DRAIN_SECONDS):
                    await drained.wait()

    async def relay_out() -> None:
        async with write, from_server:
            async for item in from_server:
                message = item.message
                if isinstance(message, JSONRPCRequest):
                    if ended[0]:  # the client can no longer answer
                        await to_server.send(unanswerable(message.id))
                        continue
                    asked.add(message.id)
                if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
                    pending.discard(message.id)
                await write.send(item)
                if ended[0] and not pending:
                    drained.set()

    async with anyio.create_task_group() as group:
        group.start_soon(relay_in)
        group.start_soon(relay_out)
        await server.run(server_reads, server_writes, server.create_initialization_options())


def serve_stdio(
    *,
    project: str | None,
    agent: str | None,
    cwd: str | None,
    store: StoreOptions | None = None,
) -> None:
    """MCP over stdin/stdout until the client closes it. `store`: the store settings of the
    environment and openclaw.json (ADR 0047), as `serve` uses them."""
    import anyio
    from mcp.server.stdio import stdio_server

    settings = ServerSettings(project=project, agent=agent, cwd=cwd, store=store or StoreOptions())
    stores = StoreCache(settings)
    server = build_server(stores, roots=ClientRoots())

    async def main() -> None:
        async with stdio_server() as (read, write):
            await run_draining(server, read, write)

    try:
        anyio.run(main)
    finally:
        stores.close()
