"""Every public call of `Memory` and `AgentSession` returns a typed value, never a bare dict
(issue 25 §2); the tool-facing calls (`call_tool`, `tool_schemas`) return the tool JSON by
design."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.results import ToolOutcome

ROOT = Path(__file__).resolve().parents[2]
JSON_BY_DESIGN = {("Memory", "call_tool"), ("Memory", "tool_schemas")}


@pytest.mark.parametrize(
    ("path", "cls"),
    [("application/api.py", "Memory"), ("application/lifecycle/session.py", "AgentSession")],
)
def test_public_calls_are_annotated_with_typed_results(path: str, cls: str) -> None:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    for fn in node.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        assert fn.returns is not None, f"{cls}.{fn.name} has no return annotation"
        returns = ast.unparse(fn.returns)
        if (cls, fn.name) in JSON_BY_DESIGN:
            continue
        assert "dict" not in returns and "ToolResult" not in returns and returns != "Any", (
            f"{cls}.{fn.name} returns {returns}"
        )


def test_a_tool_outcome_is_typed_and_still_reads_as_its_json() -> None:
    payload = {"success": True, "status": "created", "message": "Saved.", "skill": {"id": "x"}}
    outcome = ToolOutcome(payload)
    payload["success"] = False  # the outcome keeps its own copy
    assert outcome.success is True and outcome.status is Status.CREATED
    assert outcome.message == "Saved." and outcome["skill"] == {"id": "x"}
    assert json.loads(json.dumps(outcome.to_json()))["skill"]["id"] == "x"
    assert dict(outcome) == outcome.to_json() and len(outcome) == 4
