"""The host's own skills: SKILL.md files under `<agentRoot>/skills/` that this library does not
manage (issue 28 §3). The seed's `/memory-skills` lists them beside the global and project
skills as external and read-only (`[E]`); `skills list` does the same. Read only, never written.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

import attrs
from pi_hermes_memory.domain.skills.skill_md import parse_skill
from pi_hermes_memory.errors import HermesMemoryError

__all__ = ["ExternalSkill", "external_skills"]

#: more than any skills folder holds; a runaway tree (a checkout under skills/) stops here
_MAX_FILES = 2000
_MAX_BYTES = 1 << 20


@attrs.frozen(kw_only=True)
class ExternalSkill:
    skill_id: str
    name: str
    description: str | None
    path: str


def external_skills(
    agent_root: Path, managed: Iterable[Path]
) -> tuple[list[ExternalSkill], list[str]]:
    """(the external skills sorted by name, warnings). `<agentRoot>/skills/**/SKILL.md` and the
    folder's top-level `*.md` files (the host's loading rule), minus any file under a folder
    this library manages (`managed`: the global and project skill roots)."""
    root = agent_root / "skills"
    if not root.is_dir():
        return [], []
    skip = [_real(p) for p in managed]
    found: list[ExternalSkill] = []
    warnings: list[str] = []
    for path in _candidates(root):
        real = _real(path)
        if any(real == m or m in real.parents for m in skip):
            continue
        try:
            with path.open("rb") as file:
                text = file.read(_MAX_BYTES).decode("utf-8")
            parsed = parse_skill(text)
        except HermesMemoryError as exc:  # a SKILL.md problem, named without its content
            warnings.append(f"external skill {path} was not read: {exc}")
            continue
        except (OSError, UnicodeDecodeError) as exc:
            warnings.append(f"external skill {path} was not read: {type(exc).__name__}")
            continue
        default = path.parent.name if path.name == "SKILL.md" else path.stem
        name = parsed.name or default
        found.append(
            ExternalSkill(
                skill_id=external_skill_id(name, str(path)),
                name=name,
                description=parsed.description,
                path=str(path),
            )
        )
    found.sort(key=lambda s: (s.name.lower(), s.path))
    return found, warnings


def external_skill_id(name: str, path: str) -> str:
    """The seed's id for an external row (`createExternalSkillId` in skills-command.ts)."""
    safe = re.sub(r"[^a-z0-9-]+", "-", (name or "skill").lower()).strip("-") or "skill"
    digest = hashlib.sha1(f"{name}|{path}".encode()).hexdigest()[:10]
    return f"external:{safe}:{digest}"


def _candidates(root: Path) -> list[Path]:
    out = sorted(p for p in root.glob("*.md") if p.is_file())
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        if "SKILL.md" in files and Path(folder) != root:
            out.append(Path(folder) / "SKILL.md")
        if len(out) >= _MAX_FILES:
            break
    return out


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()
