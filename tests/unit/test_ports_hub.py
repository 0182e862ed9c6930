"""One ports hub (issue 25 §2, ADR 0056): `pi_hermes_memory.ports` exports every Protocol and
every value type the ports speak; the ports import only the domain and the errors module, so
importing them loads no service and no driver, and no import cycle runs through them."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pi_hermes_memory.ports as hub
import pytest

ROOT = Path(__file__).resolve().parents[2]
PORTS = ROOT / "application" / "ports"
#: source folder -> the import name it is installed under
FOLDERS = {
    "application": "pi_hermes_memory",
    "domain": "pi_hermes_memory.domain",
    "adapters": "pi_hermes_memory.adapters",
}
#: what a ports module may import from the package (besides other ports modules)
PORT_DEPENDENCIES = ("pi_hermes_memory.domain", "pi_hermes_memory.errors")


def _port_modules() -> list[str]:
    return [
        info.name for info in pkgutil.iter_modules(hub.__path__, prefix="pi_hermes_memory.ports.")
    ]


def test_every_protocol_of_every_ports_module_is_exported_by_the_hub() -> None:
    protocols = []
    for name in _port_modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and getattr(cls, "_is_protocol", False):
                protocols.append(cls)
        for exported in module.__all__:  # every value the module declares, too
            assert getattr(hub, exported) is getattr(module, exported), f"{name}.{exported}"
            assert exported in hub.__all__, f"{name}.{exported}"
    assert len(protocols) >= 15
    missing = [
        f"{c.__module__}.{c.__qualname__}" for c in protocols if c.__name__ not in hub.__all__
    ]
    assert missing == []
    assert {"Completer", "SearchIndex", "SearchHit", "SessionHit", "KnowledgeHit"} <= set(
        hub.__all__
    )


def test_the_hub_lists_each_name_once_and_only_names_it_has() -> None:
    assert len(hub.__all__) == len(set(hub.__all__))
    assert all(hasattr(hub, name) for name in hub.__all__)


def test_importing_the_ports_loads_no_service_and_no_driver() -> None:
    code = (
        "import sys, pi_hermes_memory.ports as hub; [getattr(hub, n) for n in hub.__all__]; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('pi_hermes_memory') "
        "or m in ('apsw', 'httpx', 'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout.split()
    allowed = ("pi_hermes_memory.ports", "pi_hermes_memory.domain", "pi_hermes_memory.errors")
    allowed += ("pi_hermes_memory._moved",)  # the package's own import hook (ADR 0055)
    strays = [m for m in loaded if m != "pi_hermes_memory" and not m.startswith(allowed)]
    assert strays == []
    assert "pi_hermes_memory.ports.store" in loaded  # the probe saw the hub load every name


def test_the_hub_loads_a_ports_module_on_the_first_use_of_one_of_its_names() -> None:
    """Importing one ports module does not load the others (issue 29, ADR 0080)."""
    code = (
        "import sys, pi_hermes_memory.ports.history, pi_hermes_memory.ports as hub; "
        "before = sorted(m for m in sys.modules if m.startswith('pi_hermes_memory.')); "
        "hub.SkillTelemetry; "
        "print(' '.join(before)); print('pi_hermes_memory.ports.skills' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = out.stdout.splitlines()
    assert "pi_hermes_memory.ports.history" in before.split()
    assert "pi_hermes_memory.ports.skills" not in before.split()
    assert "pi_hermes_memory.domain.skills.promotion" not in before.split()
    assert after == "True"


def test_the_ports_import_only_the_domain_the_errors_and_each_other() -> None:
    for path in sorted(PORTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                name = node.module
                if name.startswith("pi_hermes_memory") and not name.startswith(
                    "pi_hermes_memory.ports"
                ):
                    assert name.startswith(PORT_DEPENDENCIES), f"{path.name} imports {name}"


# --- import cycles ------------------------------------------------------------------------------


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def _imports(body: list[ast.stmt], *, deferred: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module loads; with `deferred`, also those in
    function bodies and under TYPE_CHECKING (the ones written that way to dodge a cycle)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and (deferred or not _is_type_checking(node)):
            yield from _imports(node.body + node.orelse, deferred=deferred)
        elif isinstance(node, ast.Try):
            handlers = [s for h in node.handlers for s in h.body]
            yield from _imports(node.body + handlers + node.orelse, deferred=deferred)
        elif deferred and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from _imports(node.body, deferred=deferred)


def import_graph(*, deferred: bool) -> dict[str, set[str]]:
    """Module -> the package modules it imports (a `from m import x` of a submodule x counts
    as importing m.x). Parent packages are left out: every module would reach its
    `__init__` and the graph would say nothing."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")).body, deferred=deferred):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif node.module and node.level == 0:
                targets.add(node.module)
                targets |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_no_module_level_import_cycle() -> None:
    assert import_cycles(import_graph(deferred=False)) == []


@pytest.mark.parametrize("module", ["pi_hermes_memory.ports", "pi_hermes_memory.errors"])
def test_no_cycle_runs_through_the_ports_or_the_errors_even_through_deferred_imports(
    module: str,
) -> None:
    """Counting function-level and TYPE_CHECKING imports too: before ADR 0056 the ports and
    five services formed one cycle of 11 modules, held apart by deferred imports."""
    cycles = import_cycles(import_graph(deferred=True))
    through = [c for c in cycles if any(m == module or m.startswith(f"{module}.") for m in c)]
    assert through == []
