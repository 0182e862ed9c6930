"""What the system prompt gets from memory (issue 13 §2, ADR 0037).

`build_context` assembles, for the session's mode and style:

- `policy-only` (default): the `<memory-policy>` block of `memoryPolicyStyle` (none: nothing);
- `legacy-inject`: the same policy block, then `<memory-context>` with global memory, the user
  profile, the current project's entries and the recent visible failures;
- in every mode and style: `<standing-instructions>` from the user's STANDING.md files
  (`<memoryDir>/STANDING.md`, then `<projectsMemoryDir>/<project>/STANDING.md`), when they
  hold any entry.

The files are only read here. No tool, import, sync, purge or consolidation knows their name,
so none can write them: they are the one place where a person states hard constraints that
no model can rewrite.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Any, Final

import attrs
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.prompt.blocks import (
    CONTEXT_TAG,
    MAX_STANDING_CHARS,
    MAX_STANDING_ENTRIES,
    POLICY_TAG,
    STANDING_TAG,
    FailureInjection,
    PolicyStyle,
    PolicyTools,
    StandingSource,
    context_block,
    context_sections,
    estimate_tokens,
    policy_block,
    select_standing,
    standing_block,
)
from pi_hermes_memory.domain.prompt.standing import parse_standing
from pi_hermes_memory.history.tool import SESSION_SEARCH_LEGACY_TOOL
from pi_hermes_memory.search.search_tool import MEMORY_SEARCH_TOOL
from pi_hermes_memory.skills.tool import SKILL_TOOL
from pi_hermes_memory.tools.registry import MEMORY_TOOL

STANDING_FILE_NAME: Final = "STANDING.md"
#: bytes of a STANDING.md read at most (the block holds 2,000 characters; a huge file is a
#: mistake, and reading it whole on every prompt would be one too)
MAX_STANDING_FILE_BYTES: Final = 256 * 1024


@attrs.frozen(kw_only=True)
class ContextPreview:
    """Exactly what the system prompt would get, and its size.

    `estimated_tokens`: one token per CJK character plus one per four other characters
    (`pi_hermes_memory.domain.prompt.blocks.estimate_tokens`); no tokenizer is loaded."""

    text: str
    mode: str
    style: str
    characters: int
    estimated_tokens: int
    #: the block tags present, in order
    blocks: tuple[str, ...]
    standing_files: tuple[str, ...]
    standing_entries: int
    standing_injected: int
    standing_truncated: bool
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "style": self.style,
            "characters": self.characters,
            "estimated_tokens": self.estimated_tokens,
            "blocks": list(self.blocks),
            "standing": {
                "files": list(self.standing_files),
                "entries": self.standing_entries,
                "injected": self.standing_injected,
                "truncated": self.standing_truncated,
            },
            "warnings": list(self.warnings),
            "text": self.text,
        }


def policy_tools(names: Iterable[str]) -> PolicyTools:
    """The tool names the policy may mention: those the session really registered, under the
    names their definitions give them."""
    have = set(names)

    def named(definition: Any) -> str | None:
        return str(definition.name) if definition.name in have else None

    return PolicyTools(
        memory=named(MEMORY_TOOL),
        memory_search=named(MEMORY_SEARCH_TOOL),
        session_search=named(SESSION_SEARCH_LEGACY_TOOL),
        skill=named(SKILL_TOOL),
    )


def standing_paths(config: Any) -> list[tuple[str | None, Path]]:
    """(label, path) of the STANDING.md files of this session: the global one, then the
    current project's (label: the project)."""
    memory_dir = getattr(config, "memory_dir", None)
    if memory_dir is None:
        return []
    paths: list[tuple[str | None, Path]] = [(None, Path(memory_dir) / STANDING_FILE_NAME)]
    project = getattr(config, "project", None)
    projects_dir = getattr(config, "projects_memory_dir", None)
    if project is not None and projects_dir is not None:
        paths.append((project, Path(projects_dir) / project / STANDING_FILE_NAME))
    return paths


def read_standing(path: Path) -> tuple[str | None, list[str]]:
    """The text of one STANDING.md (None when there is none) and warnings. Never raises:
    an unreadable file is a warning and no entries, a file with bytes that are not UTF-8 is
    read with U+FFFD in their place, a file over MAX_STANDING_FILE_BYTES is read in part."""
    warnings: list[str] = []
    try:
        # a FIFO or device would block or never end: only a regular file is read
        if not stat.S_ISREG(path.stat().st_mode):
            return None, [f"{path} is not a regular file; it was left out"]
        with path.open("rb") as handle:
            data = handle.read(MAX_STANDING_FILE_BYTES + 1)
    except FileNotFoundError:
        return None, warnings
    except OSError as exc:
        return None, [f"{path} could not be read ({type(exc).__name__}); it was left out"]
    if len(data) > MAX_STANDING_FILE_BYTES:
        data = data[:MAX_STANDING_FILE_BYTES]
        warnings.append(
            f"{path} is larger than {MAX_STANDING_FILE_BYTES // 1024} KiB; only its start was read"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        warnings.append(f"{path} is not valid UTF-8; the undecodable bytes were read as U+FFFD")
    return text, warnings


def load_standing(config: Any) -> tuple[list[StandingSource], list[str], list[str]]:
    """The entries of every STANDING.md of the session, the files that exist, warnings."""
    sources: list[StandingSource] = []
    found: list[str] = []
    warnings: list[str] = []
    for label, path in standing_paths(config):
        text, problems = read_standing(path)
        warnings.extend(problems)
        if text is None:
            continue
        found.append(str(path))
        parsed = parse_standing(text, name=str(path))
        warnings.extend(parsed.warnings)
        sources.append(StandingSource(label=label, entries=parsed.entries))
    return sources, found, warnings


def _value(config: Any, name: str, default: Any) -> Any:
    return default if config is None else getattr(config, name, default)


def build_context(
    *, config: Any, service: Any, tool_names: Iterable[str], today: date
) -> ContextPreview:
    """The memory part of the system prompt for this session (see the module docstring).
    `service` is the session's MemoryService: legacy-inject reads every document through
    its usual read path (hand edits imported), nothing else."""
    mode = str(getattr(_value(config, "memory_mode", None), "value", "policy-only"))
    style_value = getattr(config, "effective_policy_style", None) if config is not None else None
    style = PolicyStyle(getattr(style_value, "value", PolicyStyle.FULL.value))
    blocks: list[str] = []
    tags: list[str] = []
    policy = policy_block(
        style, policy_tools(tool_names), _value(config, "memory_policy_custom_text", None)
    )
    if policy:
        blocks.append(policy)
        tags.append(POLICY_TAG)
    if mode == "legacy-inject":
        settings = service.settings
        active = {t: service.document(t).active for t in Target}
        sections = context_sections(
            active,
            scope=settings.scope,
            limits=settings.limits,
            failures=FailureInjection(
                enabled=_value(config, "failure_injection_enabled", True),
                max_age_days=_value(config, "failure_injection_max_age_days", 7),
                max_entries=_value(config, "failure_injection_max_entries", 5),
            ),
            today=today,
        )
        blocks.append(context_block(sections))
        tags.append(CONTEXT_TAG)
    sources, files, warnings = load_standing(config)
    selection = select_standing(sources)
    standing = standing_block(selection)
    if standing:
        blocks.append(standing)
        tags.append(STANDING_TAG)
    if selection.truncated:
        warnings.append(
            f"standing instructions truncated: {selection.left_out_entries} of "
            f"{selection.total_entries} entries left out (at most {MAX_STANDING_ENTRIES} "
            f"entries and {MAX_STANDING_CHARS:,} characters are injected)"
        )
    text = "\n\n".join(blocks)
    return ContextPreview(
        text=text,
        mode=mode,
        style=style.value,
        characters=len(text),
        estimated_tokens=estimate_tokens(text),
        blocks=tuple(tags),
        standing_files=tuple(files),
        standing_entries=selection.total_entries,
        standing_injected=selection.injected_entries,
        standing_truncated=selection.truncated,
        warnings=tuple(warnings),
    )


__all__ = [
    "MAX_STANDING_FILE_BYTES",
    "STANDING_FILE_NAME",
    "ContextPreview",
    "build_context",
    "load_standing",
    "policy_tools",
    "read_standing",
    "standing_paths",
]
