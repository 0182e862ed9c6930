"""The 0.1 flat module paths keep importing for one release, as the same modules (ADR 0055)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from pi_hermes_memory._moved import MOVED

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "pi_hermes_memory.domain": "domain",
    "pi_hermes_memory.adapters": "adapters",
    "pi_hermes_memory": "application",
}


def _file_of(module: str) -> Path:
    for package, folder in FOLDERS.items():
        if module.startswith(package + "."):
            return ROOT / folder / (module[len(package) + 1 :].replace(".", "/") + ".py")
    raise AssertionError(module)


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-W", "always", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT.parent,  # not the checkout: the installed package only
    )
    return out.stdout


def test_every_old_path_is_the_new_module_with_a_warning() -> None:
    out = _run(
        f"""
        import importlib, json, sys, warnings
        moved = {MOVED!r}
        report = {{}}
        for old, new in moved.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                module = importlib.import_module(old)
            report[old] = [
                module is sys.modules[new],
                [str(w.message) for w in caught if w.category is DeprecationWarning],
            ]
        print(json.dumps(report))
        """
    )
    report = json.loads(out)
    assert set(report) == set(MOVED)
    for old, (same, messages) in report.items():
        assert same, old
        assert messages == [
            f"{old} moved to {MOVED[old]}; the old path is deprecated and goes away in the "
            "next release"
        ], old


def test_the_table_points_from_gone_files_to_existing_ones() -> None:
    for old, new in MOVED.items():
        assert not _file_of(old).exists(), f"{old} still has a file: no shim copies"
        assert _file_of(new).is_file(), new


def test_a_package_that_took_an_old_module_name_forwards_its_names() -> None:
    out = _run(
        """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from pi_hermes_memory.search import SearchHit as old
            from pi_hermes_memory.search import hybrid
            from pi_hermes_memory.adapters.cli import main
        from pi_hermes_memory.search.memory_search import SearchHit as new
        from pi_hermes_memory.adapters.cli.app import main as new_main
        print(old is new, hybrid.__name__, main is new_main)
        for w in caught:
            print(w.category.__name__, w.filename, w.message)
        """
    )
    lines = out.splitlines()
    assert lines[0] == "True pi_hermes_memory.search.hybrid True"
    assert lines[1:] == [
        "DeprecationWarning <string> pi_hermes_memory.search.SearchHit moved to "
        "pi_hermes_memory.search.memory_search.SearchHit; the old path is deprecated and goes "
        "away in the next release",
        "DeprecationWarning <string> pi_hermes_memory.adapters.cli.main moved to "
        "pi_hermes_memory.adapters.cli.app.main; the old path is deprecated and goes away in "
        "the next release",
    ]


def test_the_code_itself_uses_only_the_new_paths() -> None:
    for base in ("domain", "application", "adapters", "tests"):
        for path in (ROOT / base).rglob("*.py"):
            if path.name in {"_moved.py", Path(__file__).name}:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                for name in names:
                    assert name not in MOVED, f"{path.relative_to(ROOT)} imports old {name}"
