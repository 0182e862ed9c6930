"""The interview and learn-skill (issue 12 §5; the seed's `/memory-interview` and
`/memory-learn-skill`).

`interview`: a fixed list of questions; answers become USER.md entries through the `memory`
tool's add path (target user: scanner, near-duplicates, capacity apply as for any add). It is
deterministic and never calls the LLM, so it works with the LLM off and gives the same entries
for the same answers (a person's own words are stored, labelled by the question).

`learn_skill`: source material (recent context, notes, a file's text) in, one project skill
out. The LLM is asked for one skill in the `skill` tool's create shape; the reply is read
leniently (`locate_json`: as is, a fenced block, first `{` to last `}`). The skill is created
through the `skill` tool with scope forced to `project` (project first: a person promotes it
later) and only when a background (child) session could do the same (`child_session_problem`).
With the LLM off, or a failed or unusable reply, nothing is written and the result says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.learning.llm_reply import locate_json
from pi_hermes_memory.domain.skills.rules import SkillAction, child_session_problem
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CompletionFailed, InvalidArgument
from pi_hermes_memory.learning.llm import guarded_complete
from pi_hermes_memory.tools.registry import ToolResult

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory

__all__ = [
    "INTERVIEW_QUESTIONS",
    "MAX_ANSWER_CHARS",
    "MAX_SOURCE_CHARS",
    "Question",
    "interview",
    "learn_skill",
]

#: characters of one answer that are stored
MAX_ANSWER_CHARS: Final = 500
#: characters of source material sent to the LLM
MAX_SOURCE_CHARS: Final = 40_000


@attrs.frozen(kw_only=True)
class Question:
    """An interview question: a stable id (the answers file's key), the text, and the label
    its answer is stored under in USER.md."""

    id: str
    text: str
    label: str


INTERVIEW_QUESTIONS: Final = (
    Question(id="name", text="What is your name, and what is your role?", label="Name and role"),
    Question(
        id="language",
        text="Which language should the assistant answer in?",
        label="Preferred language",
    ),
    Question(
        id="coding_style",
        text="What coding style do you prefer (formatting, naming, tests, comments)?",
        label="Coding style",
    ),
    Question(
        id="tools",
        text="Which tools, languages and frameworks do you use most?",
        label="Tools",
    ),
    Question(
        id="communication",
        text="How should the assistant communicate (brief or detailed, tone, format)?",
        label="Communication preferences",
    ),
    Question(
        id="avoid",
        text="Is there anything the assistant should always avoid?",
        label="Always avoid",
    ),
)


def _question(key: str) -> Question | None:
    norm = key.strip().lower()
    for q in INTERVIEW_QUESTIONS:
        if norm in (q.id, q.text.lower(), q.label.lower()):
            return q
    return None


def interview(memory: Memory, answers: Mapping[str, str] | None = None) -> ToolResult:
    """With no answers, the questions; with answers (keyed by question id, text or label),
    one USER.md entry per non-empty answer, each added through the `memory` tool."""
    questions = [{"id": q.id, "question": q.text} for q in INTERVIEW_QUESTIONS]
    if answers is None:
        return {
            "success": True,
            "status": Status.OK,
            "message": f"{len(questions)} question(s); answer them to save USER.md entries.",
            "questions": questions,
        }
    if not isinstance(answers, Mapping):
        raise InvalidArgument("answers must be a mapping of question id to answer")
    unknown = [k for k in answers if not isinstance(k, str) or _question(k) is None]
    if unknown:
        ids = ", ".join(q.id for q in INTERVIEW_QUESTIONS)
        raise InvalidArgument(f"unknown question {shown(str(unknown[0]))}; questions: {ids}")
    results: list[dict[str, Any]] = []
    for key, answer in answers.items():
        question = _question(key)
        assert question is not None
        if not isinstance(answer, str):
            raise InvalidArgument(f"the answer to {question.id} must be a string")
        text = " ".join(answer.split())[:MAX_ANSWER_CHARS]
        if not text:
            continue
        outcome = memory.call_tool(
            "memory",
            {"action": "add", "target": "user", "content": f"{question.label}: {text}"},
        )
        results.append(
            {
                "question": question.id,
                "success": bool(outcome.get("success")),
                "status": outcome.get("status"),
                "message": outcome.get("message", ""),
            }
        )
    saved = sum(1 for r in results if r["success"])
    if not results:
        status = Status.NOOP
    elif saved == len(results):
        status = Status.OK
    elif saved:
        status = Status.PARTIAL
    else:
        status = Status.FAILED
    return {
        "success": status is not Status.FAILED,
        "status": status,
        "message": f"Saved {saved} of {len(results)} answer(s) to USER.md.",
        "results": results,
    }


LEARN_SYSTEM_PROMPT: Final = (
    "You turn source material into one reusable procedural skill for this project. Answer "
    "with one JSON object only, in the shape of the skill tool's create action: "
    '{"name": "short-ascii-name", "description": "one line: what it does and when", '
    '"when_to_use": "...", "procedure_steps": ["..."], "pitfalls": ["..."], '
    '"verification_steps": ["..."]}. Keep it concise; never include secrets or credentials. '
    'If the material holds no reusable procedure, answer {"skill": null}.'
)

_CREATE_FIELDS: Final = (
    "name",
    "description",
    "content",
    "when_to_use",
    "procedure_steps",
    "pitfalls",
    "verification_steps",
)


def _refused(status: Status, message: str) -> ToolResult:
    return {"success": False, "status": status, "message": message}


def _create_arguments(value: object, name: str | None) -> dict[str, Any] | str:
    """The skill tool's create arguments from the reply's object, or why there are none."""
    if not isinstance(value, dict):
        return "the LLM's reply holds no JSON object"
    inner = value.get("skill", value)
    if inner is None:
        return "the LLM found no reusable procedure in the material"
    if not isinstance(inner, dict):
        return "the LLM's reply is not a skill object"
    args: dict[str, Any] = {k: inner[k] for k in _CREATE_FIELDS if inner.get(k) is not None}
    if name:
        args["name"] = name
    args.update(action="create", scope="project")
    return args


def learn_skill(memory: Memory, source: str, *, name: str | None = None) -> ToolResult:
    """Turn `source` into one project skill through the LLM and the `skill` tool."""
    if not isinstance(source, str) or not source.strip():
        raise InvalidArgument("learn-skill needs source material (text)")
    off = memory.llm_off
    if off is not None or memory.llm is None:
        why = off.message if off is not None else "the LLM is off: no LLM is attached"
        return _refused(Status.SKIPPED, f"{why}; nothing was written.")
    problem = child_session_problem(SkillAction.CREATE, "project")
    if problem:  # the rule a background session follows; project creates are allowed
        return _refused(Status.FORBIDDEN, f"Refused: {problem}; nothing was written.")
    clipped = source.strip()[:MAX_SOURCE_CHARS]
    user = "Source material:\n\n" + clipped
    if name:
        user += f"\n\nName the skill: {name}"
    timeout = memory.config.llm.timeout_ms / 1000
    try:
        reply = guarded_complete(memory.llm, LEARN_SYSTEM_PROMPT, user, timeout=timeout)
    except CompletionFailed as exc:
        return _refused(Status.FAILED, f"The LLM gave no skill: {exc}; nothing was written.")
    _, value = locate_json(reply)
    args = _create_arguments(value, name)
    if isinstance(args, str):
        return _refused(Status.NOOP, f"No skill learned: {args}; nothing was written.")
    return memory.call_tool("skill", args)
