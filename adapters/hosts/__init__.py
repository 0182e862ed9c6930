"""Host programs this library plugs into (issue 30): Pi, Claude Code and MCP clients.

Each host module exposes one object satisfying `pi_hermes_memory.adapters.hosts.base.Host`:
what `setup <host>` detects, and the file changes it would make (or undo). `setup` itself
(`pi_hermes_memory.adapters.cli.setup`) shows, applies and reports those changes; a host never
writes a file itself.
"""
