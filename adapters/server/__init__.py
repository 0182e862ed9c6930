"""The HTTP server: REST under /api/memory, MCP at /mcp, its settings and OpenAPI document."""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # the old flat module's names, for one release (ADR 0055)
    from pi_hermes_memory._moved import forward_attributes

    __getattr__ = forward_attributes(__name__, "pi_hermes_memory.adapters.server.app")
    del forward_attributes
