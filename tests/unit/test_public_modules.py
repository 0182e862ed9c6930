"""Public modules declare what they export (issue 25 §2, ADR 0056): each has an `__all__`,
and each name it lists exists."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pi_hermes_memory.config
import pi_hermes_memory.ports
import pytest


def _package(package: ModuleType) -> list[str]:
    prefix = f"{package.__name__}."
    return [package.__name__] + [
        info.name for info in pkgutil.iter_modules(package.__path__, prefix=prefix)
    ]


PUBLIC = [
    "pi_hermes_memory",
    "pi_hermes_memory.errors",
    "pi_hermes_memory.api",
    "pi_hermes_memory.results",
    *_package(pi_hermes_memory.ports),
    *_package(pi_hermes_memory.config),
    # the modules README.md and docs/ name
    "pi_hermes_memory.learning.llm",
    "pi_hermes_memory.learning.consolidation",
    "pi_hermes_memory.skills.tool",
    "pi_hermes_memory.skills.stats_tool",
    "pi_hermes_memory.skills.classifier_llm",
    "pi_hermes_memory.tools.schemas",
    "pi_hermes_memory.testing",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_a_public_module_lists_its_exports(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} has no __all__"
    assert len(exported) == len(set(exported))
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == []
