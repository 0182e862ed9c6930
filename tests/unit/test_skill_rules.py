"""Support-file paths and sizes, and what a child session may do with skills."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.rules import (
    MAX_SUPPORT_FILE_BYTES,
    SUPPORT_DIRS,
    SkillAction,
    child_session_problem,
    support_content_problem,
    support_path_problem,
)


@pytest.mark.parametrize(
    "path",
    [
        "references/api.md",
        "templates/pr.md",
        "scripts/check.sh",
        "assets/img/logo.png",
        "references/a/b/c/d/e/f/g.md",  # 8 levels
        "references/café.md",
        "scripts/run-tests_v2.py",
        "references/file.name.with.dots",
    ],
)
def test_allowed_paths(path: str) -> None:
    assert support_path_problem(path) is None


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("C:/x/y", "drive letter"),
        ("c:scripts", "drive letter"),
        ("scripts\\a.sh", "backslash"),
        ("scripts/../SKILL.md", "'..'"),
        ("../scripts/a.sh", "'..'"),
        ("scripts/./a.sh", "'.'"),
        ("scripts//a.sh", "empty component"),
        ("scripts/", "empty component"),
        ("scripts/a\x00.sh", "control"),
        ("scripts/a\nb.sh", "control"),
        ("scripts/a\x85b", "control"),
        ("scripts/.env", "dot"),
        ("references/.git/config", "dot"),
        ("scripts/a.sh.", "ending in"),
        ("scripts/a ", "ending in"),
        ("scripts/a:b", "< > :"),
        ("scripts/a?.sh", "< > :"),
        ("references/a/b/c/d/e/f/g/h.md", "deeper than 8"),
        ("SKILL.md", "SKILL.md"),
        ("references/skill.MD", "SKILL.md"),
        ("src/main.py", "outside the support folders"),
        ("References/a.md", "outside the support folders"),
        ("scripts", "names a folder"),
        ("scripts/" + "a" * 256, "longer than 255 bytes"),
        ("scripts/" + "é" * 128, "longer than 255 bytes"),
        ("references/" + "a/" * 600 + "x", "longer than 1024"),
    ],
)
def test_refused_paths(path: str, words: str) -> None:
    problem = support_path_problem(path)
    assert problem is not None and words in problem


def test_path_messages_never_echo_a_secret() -> None:
    secret = "ghp_" + "A1b2" * 9
    problem = support_path_problem(f"/{secret}")
    assert problem is not None and secret not in problem


@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=80))
def test_accepted_paths_are_relative_and_inside_a_support_folder(path: str) -> None:
    if support_path_problem(path) is None:
        parts = path.split("/")
        assert parts[0] in SUPPORT_DIRS and len(parts) >= 2
        assert not any(p in ("", ".", "..") or p.startswith(".") for p in parts)
        assert "\\" not in path and "\x00" not in path


def test_size_limit_counts_utf8_bytes() -> None:
    assert support_content_problem("a" * MAX_SUPPORT_FILE_BYTES) is None
    assert support_content_problem("a" * (MAX_SUPPORT_FILE_BYTES + 1)) is not None
    assert support_content_problem("é" * (MAX_SUPPORT_FILE_BYTES // 2)) is None
    assert support_content_problem("é" * (MAX_SUPPORT_FILE_BYTES // 2 + 1)) is not None


@pytest.mark.parametrize(
    ("action", "scope", "allowed"),
    [
        ("view", None, True),
        ("view", SkillScope.GLOBAL, True),
        ("view", SkillScope.PROJECT, True),
        ("create", SkillScope.PROJECT, True),
        ("patch", SkillScope.PROJECT, True),
        ("update", "project", True),
        ("edit", SkillScope.PROJECT, True),
        ("write_file", SkillScope.PROJECT, True),
        ("remove_file", SkillScope.PROJECT, True),
        ("create", SkillScope.GLOBAL, False),
        ("create", "global", False),
        ("patch", SkillScope.GLOBAL, False),
        ("update", SkillScope.GLOBAL, False),
        ("edit", SkillScope.GLOBAL, False),
        ("write_file", SkillScope.GLOBAL, False),
        ("remove_file", SkillScope.GLOBAL, False),
        ("use", SkillScope.PROJECT, False),
        ("use", None, False),
        ("delete", SkillScope.PROJECT, False),
        ("visibility", SkillScope.GLOBAL, False),
        ("explode", SkillScope.PROJECT, False),
    ],
)
def test_child_session_rule(action: str, scope: SkillScope | str | None, allowed: bool) -> None:
    problem = child_session_problem(action, scope)
    assert (problem is None) is allowed


def test_every_action_has_a_child_rule() -> None:
    answers = {a: child_session_problem(a, SkillScope.PROJECT) for a in SkillAction}
    assert {a for a, p in answers.items() if p} == {
        SkillAction.USE,
        SkillAction.DELETE,
        SkillAction.VISIBILITY,
    }
