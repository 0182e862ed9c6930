"""One error tree and one status vocabulary (issue 10 §6, style rule 31)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory import HermesMemoryError, InvalidArgument, Status

ROOT = Path(__file__).resolve().parents[2]
#: exceptions that never leave the module that defines them
PRIVATE = {"pi_hermes_memory.adapters.markdown.format._Unreadable"}


def _modules() -> list[str]:
    names = [pi_hermes_memory.__name__]
    for info in pkgutil.walk_packages(pi_hermes_memory.__path__, prefix="pi_hermes_memory."):
        if ".testing" in info.name:  # the shipped contract suites import pytest
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
    assert {"CorruptEvent", "StorageVersionError", "LockTimeout", "AnchorRequestError"} <= names


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
