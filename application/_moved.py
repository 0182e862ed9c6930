"""The import paths of release 0.1's flat layout, kept for one release (ADR 0055).

Every module moved into a bounded-context subpackage. An old path still imports, with a
`DeprecationWarning` naming the new one, and gives the *same* module object (so classes keep
their identity: `isinstance` and `except` work across old and new paths). An old module whose
name is now a package (`pi_hermes_memory.search`, `.config`, `.adapters.cli`, …) forwards the
attributes the old module had, with the same warning.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.abc import Loader as _LoaderBase
    from importlib.abc import MetaPathFinder as _FinderBase
else:  # importlib.abc imports importlib.resources (pathlib, tempfile, …): ~13 ms at start-up
    _LoaderBase = _FinderBase = object  # the import system needs only the methods (ADR 0080)

__all__ = ["MOVED", "forward_attributes", "install"]

_D = "pi_hermes_memory.domain"
_A = "pi_hermes_memory.adapters"
_P = "pi_hermes_memory"

#: old module path -> new module path (old paths that are now packages are not listed: they
#: import as the package and forward the old module's names, see `forward_attributes`)
MOVED: dict[str, str] = {
    **{
        f"{_D}.{old}": f"{_D}.{new}"
        for old, new in {
            "model": "memory.model",
            "commands": "memory.commands",
            "events": "memory.events",
            "decide": "memory.decide",
            "document": "memory.document",
            "chain": "memory.chain",
            "capacity": "memory.capacity",
            "move": "memory.move",
            "restore": "memory.restore",
            "purge": "memory.purge",
            "reconcile": "memory.reconcile",
            "rows": "memory.rows",
            "scope": "memory.scope",
            "scope_index": "memory.scope_index",
            "markdown_doc": "memory.markdown_doc",
            "porting": "memory.porting",
            "scan_rules": "scanning.rules",
            "scan_secrets_extra": "scanning.secret_rules_extra",
            "scan_injection_i18n": "scanning.injection_i18n",
            "unicode_policy": "scanning.unicode_policy",
            "terms": "search.terms",
            "similarity": "search.similarity",
            "near_pairs": "search.near_pairs",
            "skill": "skills.skill",
            "skill_body": "skills.body",
            "skill_checks": "skills.checks",
            "skill_decide": "skills.decide",
            "skill_events": "skills.events",
            "skill_import": "skills.hand_edits",
            "skill_md": "skills.skill_md",
            "skill_move": "skills.move",
            "skill_revise": "skills.revise",
            "skill_rules": "skills.rules",
            "skill_yaml": "skills.yaml_subset",
            "promotion": "skills.promotion",
            "bundle": "skills.bundle",
            "llm_reply": "learning.llm_reply",
            "clustering": "learning.clustering",
            "capture": "learning.capture",
            "corrections": "learning.corrections",
            "noise": "learning.noise",
            "prompt_blocks": "prompt.blocks",
            "recall_block": "prompt.recall_block",
            "standing": "prompt.standing",
            "adaptive": "prompt.adaptive",
            "sessions": "history.transcripts",
            "session_query": "history.request",
            "gitignore": "knowledge.gitignore",
        }.items()
    },
    **{
        f"{_P}.{old}": f"{_P}.{new}"
        for old, new in {
            "skill_ports": "ports.skills",
            "vectors": "ports.vectors",
            "storage_config": "config.storage",
            "pipeline": "journal.pipeline",
            "codec": "journal.codec",
            "snapshot_codec": "journal.snapshots",
            "structure": "journal.structure",
            "service": "memory.service",
            "memory_documents": "memory.documents",
            "by_id": "memory.by_id",
            "mirror": "memory.mirror",
            "sync": "memory.sync",
            "purging": "memory.purging",
            "recovery": "memory.recovery",
            "porting": "memory.porting",
            "insights": "memory.insights",
            "hybrid": "search.hybrid",
            "retrieval": "search.retrieval",
            "embedding": "search.embedding",
            "skill_documents": "skills.documents",
            "skill_tool": "skills.tool",
            "skill_stats": "skills.stats",
            "skill_stats_tool": "skills.stats_tool",
            "skill_classifier": "skills.classifier",
            "skill_classifier_llm": "skills.classifier_llm",
            "skill_curation": "skills.curation_lease",
            "skill_governance": "skills.governance.service",
            "governance_base": "skills.governance.base",
            "governance_curation": "skills.governance.curation",
            "governance_moves": "skills.governance.moves",
            "governance_policy": "skills.governance.policy",
            "governance_results": "skills.governance.results",
            "governance_tool": "skills.governance.tool",
            "review": "learning.review",
            "consolidation": "learning.consolidation",
            "llm": "learning.llm",
            "auto_memory": "lifecycle.auto_memory",
            "prompt_context": "lifecycle.prompt_context",
            "corrections": "lifecycle.corrections",
            "sessions": "history.indexer",
            "session_reading": "history.reading",
            "session_search": "history.search",
            "session_tool": "history.tool",
            "session_history": "history.features",
            "knowledge_hybrid": "knowledge.hybrid",
            "knowledge_tool": "knowledge.tool",
            "tool_schemas": "tools.schemas",
            "tool_guide": "tools.guide",
            "pi_memory_tools": "tools.pi_memory",
            "cross_scope": "doctor.cross_scope",
        }.items()
    },
    **{
        f"{_A}.{old}": f"{_A}.{new}"
        for old, new in {
            "read_only": "sqlite.read_only",
            "knowledge_files": "files.knowledge_folders",
            "skill_files": "files.skill_folders",
            "sessions_jsonl": "files.session_files",
            "legacy_layout": "files.legacy_layout",
            "config_file": "files.config_file",
            "memory": "inmemory.storage",
            "memory_search": "inmemory.search",
            "memory_sessions": "inmemory.history",
            "memory_skill_folders": "inmemory.skill_folders",
            "memory_vectors": "inmemory.vectors",
            "skill_memory_tables": "inmemory.skill_tables",
            "embedder_openai": "providers.openai_embedder",
            "local_embedder": "providers.local_embedder",
            "reranker_jina": "providers.jina_reranker",
            "llm_command": "providers.command_llm",
            "llm_openai": "providers.openai_llm",
            "llm": "providers.llm_factory",
            "cli_consolidate": "cli.consolidate",
            "cli_context": "cli.context",
            "cli_doctor": "cli.doctor",
            "cli_governance": "cli.governance",
            "cli_knowledge": "cli.knowledge",
            "cli_learn": "cli.learn",
            "cli_port": "cli.porting",
            "cli_review": "cli.review",
            "cli_server": "cli.server",
            "cli_skills": "cli.skills",
            "cli_store_copy": "cli.store_copy",
            "server_config": "server.config",
            "server_knowledge": "server.knowledge",
            "server_mcp": "server.mcp_tools",
            "server_openapi": "server.openapi",
        }.items()
    },
}


def _warn(old: str, new: str) -> None:
    """Warn at the caller's line: the first frame outside this module and the import system."""
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename == __file__ or frame.f_code.co_filename.startswith("<frozen")
    ):
        # warnings.warn does not count the import system's frames itself
        level += frame.f_code.co_filename == __file__
        frame = frame.f_back
    warnings.warn(
        f"{old} moved to {new}; the old path is deprecated and goes away in the next release",
        DeprecationWarning,
        stacklevel=level,
    )


class _AliasLoader(_LoaderBase):
    def __init__(self, new: str) -> None:
        self._new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        _warn(spec.name, self._new)
        return importlib.import_module(self._new)

    def exec_module(self, module: ModuleType) -> None:
        """The new module ran when it was imported; the old name only points at it."""


class _MovedFinder(_FinderBase):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


_FINDER = _MovedFinder()


def install() -> None:
    """Let the old paths import (idempotent; `pi_hermes_memory/__init__` calls it)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


def forward_attributes(package: str, old_module: str) -> Callable[[str], Any]:
    """A PEP 562 `__getattr__` for a package that took the name of a moved module: the old
    module's attributes still resolve (from `old_module`, its new home), with a warning."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")  # a submodule, not the old name
        module = importlib.import_module(old_module)
        try:
            value = getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        _warn(f"{package}.{name}", f"{old_module}.{name}")
        sys.modules[package].__dict__[name] = value  # warned once; later reads are plain
        return value

    return __getattr__
