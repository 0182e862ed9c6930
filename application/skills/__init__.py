"""Procedural skills: the skill service and tool, statistics, curation and governance."""
