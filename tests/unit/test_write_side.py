"""`memory.write_side` (ADR 0108): each stand-in is the module the type checker sees, and it
imports that module only when one of its attributes is first read."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pi_hermes_memory.memory import write_side


def _type_checked_imports() -> dict[str, str]:
    """name -> module of the imports under `if TYPE_CHECKING:` in write_side.py."""
    tree = ast.parse(Path(write_side.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    assert isinstance(guarded.test, ast.Name) and guarded.test.id == "TYPE_CHECKING"
    found = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def test_each_stand_in_names_the_module_the_type_checker_sees() -> None:
    seen = _type_checked_imports()
    assert set(seen) == set(write_side.__all__)
    for name, module in seen.items():
        assert getattr(write_side, name)._module_name == module, name


def test_a_stand_in_imports_its_module_on_first_read_and_hands_out_its_objects() -> None:
    """In a new process: importing write_side loads none of the write side; reading
    `commands.AddMemory` loads the commands module (not the purge) and is its very class."""
    names = sorted(_type_checked_imports().values())
    code = (
        "import json, sys\n"
        "from pi_hermes_memory.memory import write_side\n"
        f"names = {names!r}\n"
        "before = [m for m in names if m in sys.modules]\n"
        "cls = write_side.commands.AddMemory\n"
        "after = [m for m in names if m in sys.modules]\n"
        "from pi_hermes_memory.domain.memory import commands\n"
        "same = cls is commands.AddMemory and write_side.commands.AddMemory is cls\n"
        "print(json.dumps([before, after, same]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    before, after, same = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == []
    assert "pi_hermes_memory.domain.memory.commands" in after
    assert "pi_hermes_memory.domain.memory.purge" not in after
    assert "pi_hermes_memory.memory.purging" not in after
    assert same is True


def test_a_misspelt_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_function"):
        getattr(write_side.purges, "no_such_function")  # noqa: B009
