"""PostgreSQL adapters: the shared organisation store of many hosts (issue 16, ADR 0050)."""
