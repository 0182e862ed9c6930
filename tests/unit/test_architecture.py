"""Packaging and layer rules (ADR 0006)."""

from __future__ import annotations

import ast
import functools
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
        "import pi_hermes_memory.compat.mem0; "
        "heavy = [m for m in ('apsw', 'httpx', 'numpy', 'langgraph', 'langchain_core', "
        "'agents', 'openai', 'anthropic') "
        "if m in sys.modules]; "
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


# --- Per-context import rules (ADR 0055) ---------------------------------------------------
# Each table lists, for one layer, which bounded contexts a context may import inside the same
# layer. "(root)" is the layer's own top-level modules (domain: errors, status, echo; application:
# api, bootstrap, errors, log, results; adapters: doctor, system). The tables were derived from
# the code when the layout was frozen: a new edge is a deliberate change to this table (and a
# line in the ADR), never a side effect. Imports inside functions and under TYPE_CHECKING count.
ROOT_CONTEXT = "(root)"

DOMAIN_CONTEXTS: dict[str, set[str]] = {
    ROOT_CONTEXT: {"scanning"},
    "history": {ROOT_CONTEXT, "memory"},
    # knowledge chunks are scanned and their secrets redacted before they are stored (ADR 0063)
    "knowledge": {"scanning"},
    "learning": {"memory", "prompt", "search", "skills"},
    # the event classes, one module per kind, handed out by `memory.events` (ADR 0111)
    "memory": {ROOT_CONTEXT, "memory_commands", "memory_events", "scanning", "search", "skills"},
    "memory_commands": {"memory"},
    "memory_events": {"memory"},
    "prompt": {"learning", "memory"},
    "scanning": set(),
    "search": set(),
    "skills": {ROOT_CONTEXT, "memory", "scanning", "search"},
}

APPLICATION_CONTEXTS: dict[str, set[str]] = {
    ROOT_CONTEXT: {
        "config",
        "doctor",
        "history",
        "journal",
        "knowledge",
        "learning",
        "lifecycle",
        "memory",
        "ports",
        "search",
        "skills",
        "skills.governance",
        "tools",
    },
    # mem0's method shapes over the public API (issue 31, ADR 0095)
    "compat": {ROOT_CONTEXT},
    "config": {ROOT_CONTEXT},
    "doctor": {ROOT_CONTEXT},
    "history": {ROOT_CONTEXT, "ports", "tools"},
    "journal": {ROOT_CONTEXT, "ports"},
    "knowledge": {ROOT_CONTEXT, "ports", "search", "tools"},
    "learning": {ROOT_CONTEXT, "config", "memory", "ports", "search", "tools"},
    "lifecycle": {ROOT_CONTEXT, "config", "history", "learning", "search", "skills", "tools"},
    "memory": {ROOT_CONTEXT, "journal", "ports", "search", "tools"},
    "ports": {ROOT_CONTEXT, "history", "knowledge", "learning", "memory", "search"},
    "search": {ROOT_CONTEXT, "memory", "ports", "tools"},
    "skills": {
        ROOT_CONTEXT,
        "config",
        "journal",
        "learning",
        "ports",
        "skills.governance",
        "tools",
    },
    "skills.governance": {ROOT_CONTEXT, "config", "journal", "ports", "skills", "tools"},
    "testing": {ROOT_CONTEXT, "history", "memory", "ports", "search"},
    "tools": {ROOT_CONTEXT, "search"},
}

# Adapter families do not reach into each other, except for these modules (importing family ->
# modules of other families it may import, relative to pi_hermes_memory.adapters). cli and
# server are entry points: nothing in adapters imports cli, only cli imports server.
ADAPTER_CROSS_IMPORTS: dict[str, set[str]] = {
    ROOT_CONTEXT: {
        "files.config_file",
        "files.session_files",
        "files.skill_folders",
        "markdown.codec",
        # bootstrap builds the replica proofs in the cache folder (ADR 0089)
        "markdown.proofs",
        "markdown.store",
        "providers.local_embedder",
        "sqlite.doctor_reader",
        "sqlite.read_only",
        "sqlite.vectors",
    },
    "cli": {
        "doctor",
        "system",
        "files.config_file",
        # `skills list` shows the host's own skill files, read only (ADR 0077)
        "files.external_skills",
        # migrate reads the second seed's LanceDB directory (ADR 0075)
        "files.lancedb_table",
        # import, migrate, interview, learn-skill read the file they are given (ADR 0120)
        "files.input_files",
        # `setup HOST` applies the plans of the host modules (issue 30)
        "hosts.base",
        # `bridge` runs the Pi extension's JSON-lines protocol (ADR 0091)
        "hosts.pi_bridge",
        # the doctor's hosts section checks each wired host (issue 30, ADR 0092)
        "hosts.wiring",
        # `hook EVENT` is Claude Code's entry point; the work lives with the host (ADR 0090)
        "hosts.claude_hooks",
        "postgres.copy",
        "postgres.storage",
        "server.app",
        "server.config",
        "server.mcp_tools",
        "sqlite.storage",
    },
    "files": {"markdown.atomic", "markdown.format", "markdown.store"},
    # agent-framework front ends over the public API only (issue 31, ADR 0095)
    "frameworks": set(),
    # the host programs `setup` wires in (issue 30): they read the agent root's config
    # the bridge honours the LLM children's marker (CHILD_ENV) from its one definition
    "hosts": {"files.config_file", "providers.command_llm"},
    "inmemory": set(),
    "markdown": {"files.config_file"},
    "postgres": {
        "inmemory.search",
        "sqlite.rows",
        "sqlite.search",
        "sqlite.skill_tables",
        "sqlite.storage",
        "sqlite.vectors",
    },
    "providers": set(),
    "server": {"providers.jina_reranker", "providers.openai_embedder"},
    "sqlite": {"inmemory.storage", "markdown.atomic"},
}
ENTRY_POINTS = {"cli", "server"}
MAX_MODULES_PER_FOLDER = 20


def _module_name(path: Path) -> tuple[str, str]:
    """(layer folder, dotted module name) of a source file."""
    for folder, package in FOLDERS.items():
        if path.is_relative_to(ROOT / folder):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            return folder, ".".join([package, *parts])
    raise AssertionError(path)


def _split(module: str) -> tuple[str, list[str]]:
    """(layer folder, path parts inside it) of a pi_hermes_memory module name."""
    parts = module.split(".")[1:]
    if parts[:1] in (["domain"], ["adapters"]):
        return parts[0], parts[1:]
    return "application", parts


def _is_module(module: str) -> bool:
    folder, parts = _split(module)
    where = ROOT.joinpath(folder, *parts)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _context(module: str) -> tuple[str, str]:
    """(layer folder, bounded context): the deepest package of the module below the layer."""
    folder, parts = _split(module)
    base, context = ROOT / folder, []
    for part in parts:
        if not (base / part / "__init__.py").is_file():
            break
        base = base / part
        context.append(part)
    return folder, ".".join(context) or ROOT_CONTEXT


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _project_imports(path: Path) -> frozenset[str]:
    """Every pi_hermes_memory module a file imports; `from pkg import mod` names the module."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if _is_module(sub) else node.module)
    return frozenset(name for name in found if name.split(".")[0] == "pi_hermes_memory")


def _edges(layer: str) -> dict[tuple[str, str], set[str]]:
    """(importing context, imported context) inside one layer -> the importing modules."""
    edges: dict[tuple[str, str], set[str]] = {}
    for path in sorted((ROOT / layer).rglob("*.py")):
        _, module = _module_name(path)
        _, source = _context(module)
        for name in _project_imports(path):
            folder, target = _context(name)
            if folder == layer and target != source:
                edges.setdefault((source, target), set()).add(f"{module} -> {name}")
    return edges


def _contexts_on_disk(layer: str) -> set[str]:
    found = {ROOT_CONTEXT}
    for init in (ROOT / layer).rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT / layer)
        if rel.parts:
            found.add(".".join(rel.parts))
    return found


def _assert_edges_allowed(layer: str, allowed: dict[str, set[str]]) -> None:
    assert set(allowed) == _contexts_on_disk(layer), (
        f"{layer}: the context table must list exactly the packages on disk"
    )
    unexpected = {
        f"{source} -> {target}: {sorted(modules)}"
        for (source, target), modules in _edges(layer).items()
        if target not in allowed[source]
    }
    assert not unexpected, f"{layer}: new import edges (ADR 0055): {sorted(unexpected)}"


def test_domain_contexts_import_only_the_contexts_in_their_table() -> None:
    _assert_edges_allowed("domain", DOMAIN_CONTEXTS)


def test_domain_rules_named_in_the_adr() -> None:
    # skills never reaches into knowledge or history; only learning and prompt use each other
    assert not DOMAIN_CONTEXTS["skills"] & {"knowledge", "history"}
    users_of_prompt_or_learning = {
        source for source, targets in DOMAIN_CONTEXTS.items() if targets & {"prompt", "learning"}
    }
    assert users_of_prompt_or_learning == {"learning", "prompt"}


def test_application_contexts_import_only_the_contexts_in_their_table() -> None:
    _assert_edges_allowed("application", APPLICATION_CONTEXTS)


def test_adapter_families_import_other_families_only_through_the_agreed_modules() -> None:
    assert set(ADAPTER_CROSS_IMPORTS) == _contexts_on_disk("adapters")
    unexpected = []
    for path in sorted((ROOT / "adapters").rglob("*.py")):
        _, module = _module_name(path)
        _, family = _context(module)
        for name in _project_imports(path):
            folder, target = _context(name)
            if folder != "adapters" or target == family:
                continue
            relative = name.removeprefix("pi_hermes_memory.adapters.")
            if relative not in ADAPTER_CROSS_IMPORTS[family]:
                unexpected.append(f"{module} -> {name}")
    assert not unexpected, f"adapters reach into another family (ADR 0055): {unexpected}"


def test_cli_and_server_are_entry_points() -> None:
    for path in [*(ROOT / "adapters").rglob("*.py"), *(ROOT / "application").rglob("*.py")]:
        _, module = _module_name(path)
        _, source = _context(module)
        for name in _project_imports(path):
            folder, target = _context(name)
            if folder != "adapters" or target not in ENTRY_POINTS or target == source:
                continue
            assert (source, target) == ("cli", "server"), f"{module} imports entry point {name}"


def test_no_folder_holds_more_than_twenty_modules() -> None:
    for layer in FOLDERS:
        for folder in [ROOT / layer, *(p.parent for p in (ROOT / layer).rglob("__init__.py"))]:
            count = len(list(folder.glob("*.py")))
            assert count <= MAX_MODULES_PER_FOLDER, f"{folder.relative_to(ROOT)}: {count} modules"


def test_every_package_and_module_has_a_docstring() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for layer in FOLDERS
        for path in sorted((ROOT / layer).rglob("*.py"))
        if ast.get_docstring(_tree(path)) is None
    ]
    assert not missing, f"modules without a docstring: {missing}"
