"""CLI commands for the interview and learn-skill (registered by
`pi_hermes_memory.adapters.cli.app`).

    interview [--answers FILE.json] [--json]
        with --answers (a JSON object: question id -> answer), saves the answers as USER.md
        entries; without it, asks each question on a terminal, else prints the questions
    learn-skill (--file F | --text T) [--name N] [--json]
        asks the LLM for one project skill from the material and creates it; with the LLM
        off it says so and writes nothing

Exit status as for every command: 0 done, 1 the operation ran but failed (the LLM is off, no
skill was learned, an answer was refused), 2 usage errors (an unreadable file, bad JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: the commands this module adds; those that write are also in WRITES
COMMANDS: frozenset[str] = frozenset({"interview", "learn-skill"})
WRITES: frozenset[str] = frozenset({"interview", "learn-skill"})

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: bytes of an answers file or a source file that are read at all
MAX_FILE_BYTES = 1 << 20


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the `pi-hermes-memory` parser."""
    interview = sub.add_parser(
        "interview",
        parents=[common],
        help="answer a few questions about yourself; the answers become USER.md entries",
        description="Without --answers: asks the questions on a terminal, else lists them. "
        "With --answers FILE.json (an object of question id -> answer): saves the answers.",
    )
    interview.add_argument("--answers", metavar="FILE.json", help="the answers as JSON")
    learn = sub.add_parser(
        "learn-skill",
        parents=[common],
        help="turn source material into a project skill (needs the LLM)",
        description="Asks the configured LLM for one skill from the material and creates it "
        "as a project skill (promote it later with skill governance).",
    )
    source = learn.add_mutually_exclusive_group(required=True)
    source.add_argument("--file", metavar="F", help="a text file with the material")
    source.add_argument("--text", metavar="T", help="the material itself")
    learn.add_argument("--name", metavar="N", help="the skill's name")


def run(memory: Any, args: argparse.Namespace) -> int:
    """Run one of COMMANDS on an open store; returns the exit code."""
    if args.command == "interview":
        return _interview(memory, args)
    return _learn(memory, args)


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def _usage(message: str) -> int:
    print(f"pi-hermes-memory: {message}", file=sys.stderr)
    return EXIT_USAGE


def _read(path: str, what: str = "") -> str:
    from pi_hermes_memory.adapters.files.input_files import read_text

    return read_text(path, limit=MAX_FILE_BYTES, what=what)


def _ask(questions: list[dict[str, str]]) -> dict[str, str]:
    answers: dict[str, str] = {}
    print("Press Enter to skip a question.", file=sys.stderr)
    for q in questions:
        try:
            answer = input(f"{q['question']} ")
        except EOFError:
            break
        if answer.strip():
            answers[q["id"]] = answer
    return answers


def _report(result: Any, *, as_json: bool) -> int:
    if as_json:
        _print_json(result.to_json())
    else:
        print(result["message"])
        for item in result.get("results", ()):
            print(f"  {item['question']}: {item['status']} {item['message']}".rstrip())
    return EXIT_OK if result["success"] else EXIT_FAILED


def _interview(memory: Any, args: argparse.Namespace) -> int:
    if args.answers is not None:
        from pi_hermes_memory.errors import UnusableInput

        try:
            answers = json.loads(_read(args.answers, "the answers file "))
        except UnusableInput as exc:
            return _usage(str(exc))
        except json.JSONDecodeError as exc:
            return _usage(
                f"the answers file {args.answers} is not JSON (line {exc.lineno} column "
                f"{exc.colno}: {exc.msg})"
            )
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            return _usage("the answers file must hold a JSON object of question id -> answer")
        return _report(memory.interview(answers), as_json=args.json)
    listing = memory.interview()
    if not sys.stdin.isatty():
        if args.json:
            _print_json(listing)
        else:
            for q in listing["questions"]:
                print(f"{q['id']}: {q['question']}")
            print("Answer with: interview --answers FILE.json", file=sys.stderr)
        return EXIT_OK
    return _report(memory.interview(_ask(listing["questions"])), as_json=args.json)


def _learn(memory: Any, args: argparse.Namespace) -> int:
    if args.file is not None:
        from pi_hermes_memory.errors import UnusableInput

        try:
            source = _read(args.file)
        except UnusableInput as exc:
            return _usage(str(exc))
    else:
        source = args.text
    if not source.strip():
        return _usage("the source material is empty")
    result = memory.learn_skill(source, name=args.name)
    if args.json:
        _print_json(result.to_json())
    else:
        print(result["message"])
        skill = result.get("skill")
        if isinstance(skill, dict) and skill.get("id"):
            print(f"  {skill['id']}")
    return EXIT_OK if result["success"] else EXIT_FAILED
