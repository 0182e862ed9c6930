"""Packaging and layer rules (ADR 0006)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pi_hermes_memory

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "application": "pi_hermes_memory",
    "domain": "pi_hermes_memory.domain",
    "adapters": "pi_hermes_memory.adapters",
}
STDLIB = set(sys.stdlib_module_names)


def _packages_on_disk() -> set[str]:
    found = set()
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]) if rel.parts else package)
    return found


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_packages_list_matches_folders() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert set(config["tool"]["setuptools"]["packages"]) == _packages_on_disk()
    assert config["tool"]["setuptools"]["package-dir"] == {
        "pi_hermes_memory": "application",
        "pi_hermes_memory.domain": "domain",
        "pi_hermes_memory.adapters": "adapters",
    }


def test_domain_imports_only_stdlib_attrs_and_itself() -> None:
    for path in (ROOT / "domain").rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            assert top in STDLIB or top == "attrs" or name.startswith("pi_hermes_memory.domain"), (
                f"{path.name} imports {name}"
            )


def test_application_never_imports_adapters_outside_the_composition_root() -> None:
    for path in (ROOT / "application").rglob("*.py"):
        if path.name == "bootstrap.py":
            continue
        for name in _imports(path):
            assert not name.startswith("pi_hermes_memory.adapters"), f"{path.name} imports {name}"


def test_nothing_imports_the_bare_folder_names() -> None:
    for base in ("domain", "application", "adapters", "tests"):
        for path in (ROOT / base).rglob("*.py"):
            for name in _imports(path):
                assert name.split(".")[0] not in FOLDERS, f"{path} imports bare {name}"


def test_import_is_light_and_exports_are_declared() -> None:
    code = (
        "import sys, pi_hermes_memory as p; "
        "heavy = [m for m in ('apsw', 'httpx', 'numpy') if m in sys.modules]; "
        "print(heavy, p.__version__, sorted(p.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("[] ")
    assert set(pi_hermes_memory.__all__) <= set(dir(pi_hermes_memory))
    assert {"open", "Memory", "WriteResult", "__version__"} <= set(pi_hermes_memory.__all__)
    assert pi_hermes_memory.__version__ == "0.1.0"


def test_one_version_source() -> None:
    from importlib.metadata import version

    import pi_hermes_memory

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in config["project"] and config["project"]["dynamic"] == ["version"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "pi_hermes_memory.__version__"
    }
    assert version("pi-hermes-memory") == pi_hermes_memory.__version__
    assert (ROOT / "LICENSE").is_file() and config["project"]["license-files"] == ["LICENSE"]
