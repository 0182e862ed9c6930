"""The HTTP server: REST under /api/memory, MCP at /mcp, its settings and OpenAPI document."""
