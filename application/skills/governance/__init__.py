"""Skill governance (ADR 0031): status, curation jobs, explain, promote, demote, restore."""
