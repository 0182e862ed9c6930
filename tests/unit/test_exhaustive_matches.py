"""Style rule 28: every `match` over the event union (or over the row changes) ends with
`case _: assert_never(...)`, so a new event type fails type-checking instead of being ignored."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from mypy import api as mypy_api
from pi_hermes_memory.domain.memory.events import EVENT_TYPES

ROOT = Path(__file__).resolve().parents[2]
ROW_CHANGE_NAMES = {"InsertRow", "UpsertRow", "SupersedeRow", "ReferenceRow", "DeleteRows"}
EVENT_NAMES = {cls.__name__ for cls in EVENT_TYPES}


def _class_names(pattern: ast.pattern) -> set[str]:
    names = set()
    for node in ast.walk(pattern):
        if isinstance(node, ast.MatchClass):
            cls = node.cls
            names.add(cls.id if isinstance(cls, ast.Name) else getattr(cls, "attr", ""))
    return names


def _subject_name(match: ast.Match) -> str | None:
    subject = match.subject
    if isinstance(subject, ast.NamedExpr):
        subject = subject.target
    return subject.id if isinstance(subject, ast.Name) else None


def _ends_with_assert_never(match: ast.Match) -> bool:
    last = match.cases[-1]
    if not (isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None):
        return False
    if last.guard is not None or len(last.body) != 1:
        return False
    stmt = last.body[0]
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "assert_never"
        and len(stmt.value.args) == 1
        and isinstance(stmt.value.args[0], ast.Name)
        and stmt.value.args[0].id == _subject_name(match)
    )


def _matches_over(names: set[str], folders: tuple[str, ...]) -> list[tuple[Path, ast.Match]]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Match) and any(
                    _class_names(case.pattern) & names for case in node.cases
                ):
                    found.append((path, node))
    return found


def test_every_match_over_events_or_row_changes_ends_with_assert_never() -> None:
    matches = _matches_over(EVENT_NAMES | ROW_CHANGE_NAMES, ("domain", "application", "adapters"))
    offenders = [
        f"{path.relative_to(ROOT)}:{match.lineno}"
        for path, match in matches
        if not _ends_with_assert_never(match)
    ]
    assert not offenders, f"end these matches with `case _: assert_never(...)`: {offenders}"
    files = {path.relative_to(ROOT).as_posix() for path, _ in matches}
    # the fold, the row semantics and both storage adapters' executors are among them (the
    # SQLite projection lives beside the mirror repair since ADR 0105)
    assert {
        "domain/memory/document.py",
        "domain/memory/rows.py",
        "adapters/inmemory/storage.py",
        "adapters/sqlite/mirror.py",
    } <= files


def test_mypy_flags_every_match_when_an_event_type_joins_the_union(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the domain with one more event in the union: mypy reports each match over
    the union (and nothing else)."""
    package = tmp_path / "pi_hermes_memory"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "domain", package / "domain", ignore=ignore)
    (package / "__init__.py").write_text("")
    (package / "py.typed").write_text("")
    events = package / "domain" / "memory" / "events.py"
    source = events.read_text(encoding="utf-8")
    # the union is declared for the type checker only (the classes build on first use, ADR 0111)
    union, last = "\nif TYPE_CHECKING:\n    #: every event", "        | MemoryPurged\n    )"
    assert union in source and last in source
    new_event = (
        "\n@attrs.frozen(kw_only=True)\nclass MemoryTeleported(Event):\n"
        '    TAG: ClassVar[str] = "memory.teleported.v1"\n\n    entry_id: str\n\n'
    )
    source = source.replace(union, new_event + union)
    source = source.replace(last, "        | MemoryPurged\n        | MemoryTeleported\n    )")
    events.write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the copy, not the installed package
    monkeypatch.setenv("MYPYPATH", str(tmp_path))

    stdout, stderr, status = mypy_api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "--python-version",
            "3.11",
            "--config-file",
            "",
            "-p",
            "pi_hermes_memory.domain",
        ]
    )
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    expected = _matches_over(EVENT_NAMES, ("domain",))
    assert status == 1, stdout + stderr
    assert all('"assert_never" has incompatible type "MemoryTeleported"' in e for e in errors), (
        stdout
    )
    assert len(errors) == len(expected), stdout
    flagged = {Path(e.split(":", 1)[0]).name for e in errors}
    assert flagged == {path.name for path, _ in expected}
