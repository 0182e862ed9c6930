"""One error tree and one status vocabulary (issue 10 §6, style rule 31), in one module
(`pi_hermes_memory.errors`, issue 25, ADR 0056)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pi_hermes_memory
import pi_hermes_memory.errors
import pytest
from pi_hermes_memory import HermesMemoryError, InvalidArgument, Status

ROOT = Path(__file__).resolve().parents[2]
#: exceptions that never leave the module that defines them (ADR 0056): a parse failure
#: caught where it is raised, and the server's HTTP envelope errors (answered, never raised
#: to a caller)
PRIVATE = {
    "pi_hermes_memory.adapters.markdown.format._Unreadable",
    "pi_hermes_memory.adapters.server.app._TooLarge",
    "pi_hermes_memory.adapters.server.app.ApiError",
}


def _modules() -> list[str]:
    names = [pi_hermes_memory.__name__]
    for info in pkgutil.walk_packages(pi_hermes_memory.__path__, prefix="pi_hermes_memory."):
        if ".testing" in info.name:  # the shipped contract suites import pytest
            continue
        if info.name.endswith(".__main__"):  # `python -m` entry points run on import
            continue
        names.append(info.name)
    return names


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__.startswith("pi_hermes_memory"):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [cls for key, cls in sorted(found.items()) if key not in PRIVATE]


def test_the_package_defines_many_errors_and_the_walk_sees_them() -> None:
    names = {cls.__name__ for cls in _exception_classes()}
    assert {"CorruptEvent", "StoreVersionError", "LockTimeout", "AnchorRequestError"} <= names
    assert len(names) >= 35


def _exported() -> list[type[BaseException]]:
    errors = pi_hermes_memory.errors
    found = [getattr(errors, name) for name in errors.__all__]
    return [cls for cls in found if isinstance(cls, type) and issubclass(cls, BaseException)]


def test_every_error_defined_anywhere_is_exported_from_the_one_errors_module() -> None:
    """ADR 0056: `pi_hermes_memory.errors` is the one place a caller imports an error from."""
    exported = set(_exported())
    missing = [
        f"{c.__module__}.{c.__qualname__}" for c in _exception_classes() if c not in exported
    ]
    assert missing == []


def test_no_error_is_defined_outside_the_errors_modules() -> None:
    """The definitions live in `pi_hermes_memory.errors` or, for the pure domain, in
    `pi_hermes_memory.domain.errors` (found by AST, so an unimported module counts too)."""
    homes = {ROOT / "application" / "errors.py", ROOT / "domain" / "errors.py"}
    known = {cls.__name__ for cls in _exported()} | {"Exception", "BaseException"}
    private = {name.rsplit(".", 1)[1] for name in PRIVATE}
    strays = []
    for folder in ("application", "domain", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in homes or "testing" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef) or node.name in private:
                    continue
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                if bases & known:
                    strays.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert strays == []


@pytest.mark.parametrize("cls", _exported(), ids=lambda c: c.__qualname__)
def test_every_exported_error_is_a_hermes_memory_error_and_a_public_name(
    cls: type[BaseException],
) -> None:
    assert issubclass(cls, HermesMemoryError)
    assert cls.__module__ in {"pi_hermes_memory.errors", "pi_hermes_memory.domain.errors"}
    assert getattr(pi_hermes_memory, cls.__name__) is cls
    assert cls.__name__ in pi_hermes_memory.__all__


def test_the_errors_module_exports_exactly_what_it_lists() -> None:
    errors = pi_hermes_memory.errors
    assert sorted(errors.__all__) == errors.__all__
    public = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    assert public <= set(errors.__all__)


@pytest.mark.parametrize("cls", _exception_classes(), ids=lambda c: c.__qualname__)
def test_every_error_the_library_defines_is_a_hermes_memory_error(
    cls: type[BaseException],
) -> None:
    assert issubclass(cls, HermesMemoryError), f"{cls.__module__}.{cls.__qualname__}"


def test_invalid_arguments_stay_value_errors_for_existing_callers() -> None:
    assert issubclass(InvalidArgument, ValueError)
    assert issubclass(pi_hermes_memory.ConfigError, ValueError)
    assert issubclass(pi_hermes_memory.StorageFailed, OSError)


def test_every_documented_status_is_a_member_and_every_member_is_documented() -> None:
    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    section = text.split("## Statuses", 1)[1]
    table = [line for line in section.splitlines() if line.startswith("| `")]
    documented = {s for line in table for s in re.findall(r"`([a-z_-]+)`", line.split("|")[1])}
    assert documented == {s.value for s in Status}


def test_statuses_are_strings_in_json() -> None:
    import json

    assert json.dumps({"status": Status.NEAR_DUPLICATE}) == '{"status": "near_duplicate"}'
    assert Status("no_results") is Status.NO_RESULTS
