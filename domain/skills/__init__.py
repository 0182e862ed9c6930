"""The Skill aggregate: SKILL.md folders, their decisions, events, hand edits and promotion
rules."""
