"""Agent-framework front ends over the public API, each behind its own optional extra
(issue 31, ADR 0095). Nothing here is imported by `import pi_hermes_memory`."""
