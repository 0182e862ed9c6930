"""CLI commands for skills, skill visibility and skill statistics (registered by
`pi_hermes_memory.adapters.cli.app`).

    skills [list]              every skill of the session (global and the current project's),
                               then the host's own skills (<agentRoot>/skills/) as external
    skills view SKILL_ID       one skill: its SKILL.md and the names of its support files
    skills discover            the skills to offer a model now, each counted as one load
    skill-visibility list|hide|show|reset [SKILL_ID...] [--for-project P]
    skill-stats [--since-days N] [--skill SKILL_ID] [--for-project P]

Exit status as for every command: 0 done, 1 the operation ran but failed, 2 usage errors
(a malformed skill id, a missing SKILL_ID, no project for visibility).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pi_hermes_memory.domain.status import Status

#: the commands this module adds; those that write are also in WRITES
COMMANDS: frozenset[str] = frozenset({"skills", "skill-visibility", "skill-stats"})
#: none: on a read-only store the skill statistics are off, so hide/show/reset answer that
#: (not the read-only reason) and the read-only warning must stay in front of them; skill
#: writes go through `tool skill`, whose refusal names the read-only cause itself
WRITES: frozenset[str] = frozenset()

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

_FOR_PROJECT_HELP = (
    "the project whose visibility of global skills to {what} (default: the current project; "
    "--project sets the current project itself, and with it which project skills this "
    "session sees)"
)


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    skills = sub.add_parser(
        "skills",
        parents=[common],
        help="list or view skills (SKILL.md folders); default: list",
        description="Skills of this session: the global ones and the current project's. "
        "Write them with `tool skill JSON` (create, patch, update, delete, write_file, ...).",
    )
    actions = skills.add_subparsers(dest="skills_action", metavar="{list,view,discover}")
    actions.add_parser(
        "list",
        parents=[common],
        help="id, scope, version, last update and name of every skill (hidden ones marked)",
    )
    view = actions.add_parser(
        "view", parents=[common], help="a skill's SKILL.md and its support file names"
    )
    view.add_argument("skill_id", help="global:<slug> or project:<project>:<slug>")
    actions.add_parser(
        "discover",
        parents=[common],
        help="the skills to offer a model now (global minus the hidden ones, plus the "
        "project's), with their SKILL.md paths; counts one load of each for today (UTC)",
    )
    visibility = sub.add_parser(
        "skill-visibility",
        parents=[common],
        help="list, hide, show or reset global skills for a project",
        description="Hide or show global skills in one project (reset forgets the choice). "
        "Run `skills discover` or start a new session for a host to see the change.",
    )
    visibility.add_argument(
        "action", nargs="?", default="list", choices=["list", "hide", "show", "reset"]
    )
    visibility.add_argument(
        "skill_ids", nargs="*", metavar="SKILL_ID", help="global skill ids (hide/show/reset)"
    )
    visibility.add_argument(
        "--for-project",
        metavar="P",
        help=_FOR_PROJECT_HELP.format(what="list or change"),
    )
    stats = sub.add_parser(
        "skill-stats",
        parents=[common],
        help="skill loads (offered, not evidence of use), real uses, governance and "
        "promotion status (memory_skill_stats)",
    )
    stats.add_argument(
        "--since-days",
        type=_since_days,
        metavar="N",
        help="the last N UTC days, today included (default: all time)",
    )
    stats.add_argument("--skill", metavar="SKILL_ID", help="this skill only (explained in full)")
    stats.add_argument(
        "--for-project",
        metavar="P",
        help="count only loads and uses in this project (default: every project)",
    )


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    if args.command == "skills":
        action = args.skills_action or "list"
        if action == "view":
            return _view(memory, args.skill_id, as_json=args.json)
        if action == "discover":
            return _discover(memory, as_json=args.json)
        return _list(memory, as_json=args.json)
    if args.command == "skill-visibility":
        return _visibility(memory, args)
    return _stats(memory, args)


# -- helpers --------------------------------------------------------------------------------------


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def _usage(message: str) -> int:
    print(f"pi-hermes-memory: {message}", file=sys.stderr)
    return EXIT_USAGE


def _warn(warnings: Any) -> None:
    for warning in warnings:
        print(f"pi-hermes-memory: warning: {warning}", file=sys.stderr)


def _since_days(value: str) -> int:
    from pi_hermes_memory.domain.echo import shown
    from pi_hermes_memory.skills.stats_tool import MAX_SINCE_DAYS

    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {shown(value)}") from None
    if not 1 <= number <= MAX_SINCE_DAYS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_SINCE_DAYS}, got {number}")
    return number


def bad_skill_id(skill_id: str) -> str | None:
    """Why `skill_id` is not a skill id, or None."""
    from pi_hermes_memory.domain.skills.skill import parse_skill_id
    from pi_hermes_memory.errors import InvalidSkillId

    try:
        parse_skill_id(skill_id)
    except InvalidSkillId as exc:
        return str(exc)
    return None


def _bad_project(name: str) -> str | None:
    from pi_hermes_memory.domain.echo import shown
    from pi_hermes_memory.domain.memory.model import is_safe_project_name

    return None if is_safe_project_name(name) else f"{shown(name)} is not a valid project name"


def _entry(memory: Any, state: Any, hidden: set[str]) -> dict[str, Any]:
    from pi_hermes_memory.skills.tool import skill_summary_json

    return {
        **skill_summary_json(state),
        "hidden": state.skill_id in hidden,
        "path": memory.skills.location(state.skill_id),
    }


# -- skills ---------------------------------------------------------------------------------------


def _list(memory: Any, *, as_json: bool) -> int:
    from pi_hermes_memory.domain.skills.skill_md import format_time

    service = memory.skills
    warnings: list[str] = []
    states = service.skills(warnings)
    hidden = service.hidden()
    external = _external(memory, warnings)
    if as_json:
        _print_json(
            {
                "success": True,
                "status": Status.OK if states or external else Status.NO_RESULTS,
                "message": f"{len(states)} skill(s), {len(external)} external.",
                "project": service.project,
                "skills": [_entry(memory, s, hidden) for s in states],
                # the host's own skills (<agentRoot>/skills/), listed as the seed's [E] rows
                "external": [
                    {
                        "id": e.skill_id,
                        "name": e.name,
                        "description": e.description,
                        "path": e.path,
                        "external": True,
                        "read_only": True,
                    }
                    for e in external
                ],
            }
        )
    else:
        for s in states:
            updated = format_time(s.updated) if s.updated else "-"
            mark = f"  (hidden in {service.project})" if s.skill_id in hidden else ""
            print(f"{s.skill_id}  {s.scope.value}  v{s.revision}  {updated}  {s.name}{mark}")
        for e in external:
            print(f"{e.skill_id}  external  {e.name}  (read-only: {e.path})")
        if not states and not external:
            print("(no skills)")
    _warn(warnings)
    return EXIT_OK


def _external(memory: Any, warnings: list[str]) -> list[Any]:
    """The host's skills under `<agentRoot>/skills/` that this library does not manage."""
    from pi_hermes_memory.adapters.files.external_skills import external_skills

    config = getattr(memory, "config", None)
    if config is None:
        return []
    managed = [config.skill_governance.scopes.global_skills_dir, config.project_skills_root]
    found, notes = external_skills(config.agent_root, managed)
    warnings.extend(notes)
    return found


def _view(memory: Any, skill_id: str, *, as_json: bool) -> int:
    from pi_hermes_memory.domain.skills.skill_md import render_skill
    from pi_hermes_memory.errors import InvalidSkillId
    from pi_hermes_memory.skills.tool import skill_json

    problem = bad_skill_id(skill_id)
    if problem is not None:
        return _usage(problem)
    service = memory.skills
    try:
        state = service.get(skill_id)
    except InvalidSkillId as exc:  # another project's skill
        return _usage(str(exc))
    if state is None:
        message = f"No skill {skill_id}; `skills list` lists them."
        if as_json:
            _print_json({"success": False, "status": Status.NOT_FOUND, "message": message})
        print(f"pi-hermes-memory: {message}", file=sys.stderr)
        return EXIT_FAILED
    path = service.location(skill_id)
    if as_json:
        _print_json(
            {
                "success": True,
                "status": Status.OK,
                "message": "",
                "skill": {**skill_json(state), "path": path},
            }
        )
        return EXIT_OK
    print(f"# {path}")
    print(render_skill(state), end="")
    files = [name for name, _ in state.files]
    print("\nSupport files: " + (", ".join(files) if files else "(none)"))
    return EXIT_OK


def _discover(memory: Any, *, as_json: bool) -> int:
    service = memory.skills
    offered, warnings = service.discover()
    if as_json:
        _print_json(
            {
                "success": True,
                "status": Status.OK if offered else Status.NO_RESULTS,
                "message": f"{len(offered)} skill(s) to offer.",
                "project": service.project,
                "skills": [
                    {
                        **_entry(memory, s, set()),
                        "description": s.description,
                    }
                    for s in offered
                ],
            }
        )
    else:
        for s in offered:
            print(f"{s.skill_id}  {service.location(s.skill_id)}")
            print(f"    {s.description}")
        if not offered:
            print("(no skills to offer)")
    _warn(warnings)
    return EXIT_OK


# -- visibility -----------------------------------------------------------------------------------


def _visibility(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.skills.tool import result_json

    service = memory.skills
    if args.for_project is not None:
        problem = _bad_project(args.for_project)
        if problem is not None:
            return _usage(f"--for-project: {problem}")
    where = args.for_project or service.project
    if where is None:
        return _usage(
            "visibility is per project and there is no current project: pass --for-project P "
            "(or --project P, which also makes P the current project)"
        )
    if args.action == "list":
        if args.skill_ids:
            return _usage("skill-visibility list takes no SKILL_ID")
    elif not args.skill_ids:
        return _usage(f"skill-visibility {args.action} needs at least one global SKILL_ID")
    for skill_id in args.skill_ids:
        problem = bad_skill_id(skill_id)
        if problem is not None:
            return _usage(problem)
    if service.telemetry is None:
        message = (
            "skill visibility is unavailable: this store keeps no skill statistics "
            "(read-only, or a custom storage without skill_telemetry)"
        )
        if args.json:
            _print_json({"success": False, "status": Status.ERROR, "message": message})
        print(f"pi-hermes-memory: {message}", file=sys.stderr)
        return EXIT_FAILED
    if args.action == "list":
        return _visibility_list(memory, where, as_json=args.json)
    result = service.set_visibility(args.action, args.skill_ids, where)
    if args.json:
        _print_json(result_json(result))
    elif result.success:
        print(result.message)
    else:
        print(f"pi-hermes-memory: {result.message}", file=sys.stderr)
    return EXIT_OK if result.success else EXIT_FAILED


def _visibility_list(memory: Any, where: str, *, as_json: bool) -> int:
    service = memory.skills
    _, states = service.visibility_states(where)
    live = {s.skill_id for s in service.skills() if s.scope.value == "global"}
    rows = [
        {"id": i, "visibility": states.get(i, "default"), "exists": i in live}
        for i in sorted(live | set(states))
    ]
    if as_json:
        _print_json(
            {
                "success": True,
                "status": Status.OK if rows else Status.NO_RESULTS,
                "message": f"Visibility of the global skills for project {where}.",
                "project": where,
                "skills": rows,
            }
        )
        return EXIT_OK
    print(f"Global skills in project {where}:")
    for row in rows:
        gone = "" if row["exists"] else "  (no such skill now)"
        print(f"  {row['id']}  {row['visibility']}{gone}")
    if not rows:
        print("  (no global skills)")
    return EXIT_OK


# -- statistics -----------------------------------------------------------------------------------


def _stats(memory: Any, args: argparse.Namespace) -> int:
    from pi_hermes_memory.errors import InvalidArgument
    from pi_hermes_memory.skills.stats_tool import check_stats_options, stats_json

    try:
        check_stats_options(args.since_days, args.skill, args.for_project, memory.skills.project)
    except InvalidArgument as exc:
        return _usage(str(exc))
    report = memory.skill_stats(args.since_days, args.skill, project=args.for_project)
    if args.json:
        _print_json(stats_json(report))
        _warn(report.warnings)
        return EXIT_OK
    window = (
        "all recorded days"
        if report.first_day is None
        else f"the last {report.since_days} UTC day(s), {report.first_day} to {report.last_day}"
    )
    where = "every project" if report.project is None else f"project {report.project}"
    print(f"Skill statistics over {window}, {where}.")
    print(f"Note: {report.note}")
    for row in report.skills:
        _stats_row(row, explain=args.skill is not None)
    if not report.skills:
        print("(no skills)")
    _warn(report.warnings)
    return EXIT_OK


def _stats_row(row: Any, *, explain: bool) -> None:
    from pi_hermes_memory.domain.skills.skill_md import format_time

    usage = row.usage
    flags = "".join(
        [" (hidden)" if row.hidden else "", "" if row.exists else " (no such skill now)"]
    )
    print(f"{row.skill_id}{flags}")
    print(f"    loads (offered): {row.loads}")
    if usage.count:
        last = format_time(usage.last_used)
        domains = ", ".join(f"{d or '(no domain)'} {n}" for d, n in usage.task_domains)
        print(
            f"    uses: {usage.count} in {usage.sessions} session(s), {usage.projects} "
            f"project(s); last {last}; by task domain: {domains}"
        )
    else:
        print("    uses: 0")
    gov = row.governance
    reason = f" ({gov.reason})" if gov is not None and gov.reason else ""
    print(f"    governance: {gov.state if gov is not None else 'none'}{reason}")
    verdict = row.promotion
    if verdict is None:
        print(f"    promotion: not applicable ({row.promotion_note})")
    elif verdict.candidate:
        print("    promotion: candidate (every criterion holds)")
    else:
        print(f"    promotion: not a candidate (failed: {', '.join(verdict.reasons)})")
    if explain and verdict is not None:
        for line in verdict.explain_lines()[1:]:
            print(f"      {line}")
