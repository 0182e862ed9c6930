"""The `skill` tool: JSON Schema, argument checks with precise messages, JSON results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_hermes_memory.domain.skills.rules import SkillAction
from pi_hermes_memory.domain.skills.skill import SkillState
from pi_hermes_memory.domain.skills.skill_md import format_time, render_skill
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.skills.service import SkillResult, SkillService
from pi_hermes_memory.tools.registry import (
    ToolDefinition,
    ToolResult,
    _check_keys,
    _enum,
    _json_type,
    _string,
    json_object,
    present,
)

__all__ = ["SKILL_TOOL", "result_json", "run_skill_tool", "skill_json", "skill_summary_json"]

_ACTIONS = [a.value for a in SkillAction]
#: an alias of view without skill_id (what a newcomer tries first)
_LIST = "list"
#: every action the tool takes, in one order: the schema's enum and both refusals name these
_ALL_ACTIONS = [*_ACTIONS, _LIST]
_VISIBILITY = ["list", "hide", "show", "reset"]

SKILL_TOOL_DESCRIPTION = (
    "Procedural skills: reusable, step-by-step procedures kept as SKILL.md files (the Agent "
    "Skills format). Actions: view (no skill_id: list the visible skills; with skill_id: "
    "the whole skill; records nothing), list (view without skill_id), use (the whole skill, "
    "and records that you used it — do this when you actually follow a skill), create "
    "(scope required: global for a procedure that works in any repository, project for one "
    "tied to this repository's paths, scripts, architecture or release; give name, "
    "description and either the structured fields when_to_use, procedure_steps, pitfalls, "
    "verification_steps (preferred) or content), patch (one section of skill_id: section "
    "plus content, or a JSON array of steps), update / edit (new description and/or body; "
    "empty keeps the old), delete, write_file / remove_file (support files under "
    "references/, templates/, scripts/ or assets/ only; never executed), visibility "
    "(visibility_action list/hide/show/reset global skills for a project). Skill ids: "
    "global:<slug> or project:<project>:<slug>. Text is scanned for secrets and prompt "
    "injection; a refused write changes nothing."
)

_STEPS = {"type": "array", "items": {"type": "string"}}
SKILL_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(_ALL_ACTIONS)},
        "skill_id": {"type": "string", "description": "global:<slug> or project:<p>:<slug>"},
        "scope": {"type": "string", "enum": ["global", "project"]},
        "name": {"type": "string", "description": "The skill's name (ASCII; becomes the slug)"},
        "description": {"type": "string"},
        "content": {"type": "string", "description": "Markdown body, or a section's text"},
        "body": {"type": "string", "description": "update/edit: the new Markdown body"},
        "when_to_use": {"type": "string"},
        "procedure_steps": _STEPS,
        "pitfalls": _STEPS,
        "verification_steps": _STEPS,
        "section": {"type": "string", "description": "patch: e.g. Procedure, Pitfalls"},
        "path": {"type": "string", "description": "write_file/remove_file: e.g. references/x.md"},
        "task_domain": {"type": "string", "description": "use: the kind of task, optional"},
        "visibility_action": {"type": "string", "enum": _VISIBILITY},
        "skill_ids": {"type": "array", "items": {"type": "string"}},
        "project": {"type": "string", "description": "visibility: the project (default: this)"},
    },
    "required": ["action"],
    "additionalProperties": False,
}

SKILL_TOOL = ToolDefinition(
    name="skill",
    title="Skills",
    description=SKILL_TOOL_DESCRIPTION,
    parameters=SKILL_TOOL_SCHEMA,
    destructive=True,
)


def _steps(args: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = args.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgumentError(f"{key} must be an array of strings, got {_json_type(value)}")
    return tuple(value)


def _required(args: Mapping[str, Any], key: str, action: str) -> str:
    value = _string(args, key, "")
    if value is None:
        raise ArgumentError(f"{action} needs {key}")
    return value


def skill_summary_json(state: SkillState) -> dict[str, Any]:
    return {
        "id": state.skill_id,
        "scope": state.scope.value,
        "name": state.name,
        "description": state.description,
        "version": state.revision,
        "updated": format_time(state.updated) if state.updated else None,
    }


def skill_json(state: SkillState) -> dict[str, Any]:
    return {
        **skill_summary_json(state),
        "project": state.project,
        "content": render_skill(state),
        "files": [path for path, _ in state.files],
    }


def result_json(result: SkillResult) -> ToolResult:
    out: ToolResult = {
        "success": result.success,
        "status": result.status,
        "message": result.message,
    }
    if result.skill_id is not None:
        out["skill_id"] = result.skill_id
    if result.matches:
        out["matches"] = list(result.matches)
    if result.skill is not None:
        out["skill"] = skill_json(result.skill)
    if result.warnings:
        out["warnings"] = list(result.warnings)
    return out


def _listing(skills: Sequence[SkillState], hidden: set[str], warnings: list[str]) -> ToolResult:
    shown = [skill_summary_json(s) for s in skills if s.skill_id not in hidden]
    out: ToolResult = {
        "success": True,
        "status": Status.OK if shown else Status.NO_RESULTS,
        "message": f"{len(shown)} skill(s).",
        "skills": shown,
    }
    if warnings:
        out["warnings"] = warnings
    return out


def run_skill_tool(service: SkillService, arguments: Any) -> ToolResult:
    """Check `arguments` against the schema and run the action. A refusal of the input
    itself (the domain's `invalid`) is `invalid_arguments`, as every other tool's."""
    out = _run(service, arguments)
    if out.get("status") == Status.INVALID:
        out["status"] = Status.INVALID_ARGUMENTS
    return out


def _run(service: SkillService, arguments: Any) -> ToolResult:
    arguments = json_object(arguments)
    args = present(arguments)
    _check_keys(args, set(SKILL_TOOL_SCHEMA["properties"]), "")
    action = _enum(args, "action", _ALL_ACTIONS, "")
    if action is None:
        raise ArgumentError(f"action is required ({', '.join(_ALL_ACTIONS)})")
    skill_id = _string(args, "skill_id", "")
    if action == _LIST and skill_id is not None:
        raise ArgumentError("list takes no skill_id (view with skill_id shows one skill)")
    if action in (SkillAction.VIEW, _LIST):
        if skill_id is None:
            warnings: list[str] = []
            return _listing(service.skills(warnings), service.hidden(), warnings)
        state = service.get(skill_id)
        if state is None:
            return {
                "success": False,
                "status": Status.NOT_FOUND,
                "message": f"No skill {skill_id}; view without skill_id lists them.",
            }
        return {"success": True, "status": Status.OK, "message": "", "skill": skill_json(state)}
    if action == SkillAction.CREATE:
        return result_json(
            service.create(
                scope=_string(args, "scope", ""),
                name=_required(args, "name", action),
                description=_required(args, "description", action),
                content=_string(args, "content", ""),
                when_to_use=_string(args, "when_to_use", ""),
                procedure_steps=_steps(args, "procedure_steps"),
                pitfalls=_steps(args, "pitfalls"),
                verification_steps=_steps(args, "verification_steps"),
            )
        )
    if action == SkillAction.VISIBILITY:
        visibility = _enum(args, "visibility_action", _VISIBILITY, "") or "list"
        project = _string(args, "project", "")
        if visibility == "list":
            where, states = service.visibility_states(project)
            globals_ = [s for s in service.skills() if s.scope.value == "global"]
            return {
                "success": True,
                "status": Status.OK,
                "message": f"Visibility of the global skills for project {where}.",
                "project": where,
                "skills": [
                    {"id": s.skill_id, "visibility": states.get(s.skill_id, "default")}
                    for s in globals_
                ],
            }
        ids = args.get("skill_ids") or ([skill_id] if skill_id else [])
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ArgumentError("visibility needs skill_id or skill_ids (global skill ids)")
        return result_json(service.set_visibility(visibility, ids, project))
    if skill_id is None:
        raise ArgumentError(f"{action} needs skill_id")
    if action == SkillAction.USE:
        return result_json(service.use(skill_id, task_domain=_string(args, "task_domain", "")))
    if action == SkillAction.PATCH:
        section = _required(args, "section", action)
        content: str | Sequence[str] | None = _string(args, "content", "")
        if content is None:
            for key in ("procedure_steps", "pitfalls", "verification_steps"):
                if key in args:
                    content = _steps(args, key)
            if content is None and "when_to_use" in args:
                content = _string(args, "when_to_use", "")
        if content is None:
            raise ArgumentError("patch needs content (text, or a JSON array of steps)")
        return result_json(service.patch(skill_id, section=section, content=content))
    if action in (SkillAction.UPDATE, SkillAction.EDIT):
        return result_json(
            service.update(
                skill_id,
                description=_string(args, "description", ""),
                body=_string(args, "body", "") or _string(args, "content", ""),
            )
        )
    if action == SkillAction.DELETE:
        return result_json(service.delete(skill_id))
    if action == SkillAction.WRITE_FILE:
        return result_json(
            service.write_file(
                skill_id, _required(args, "path", action), _required(args, "content", action)
            )
        )
    return result_json(service.remove_file(skill_id, _required(args, "path", action)))
