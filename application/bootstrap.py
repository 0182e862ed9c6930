"""The composition root: the one place that picks concrete adapters.

`open(...)` is keyword-only and resolves every default inside the call; nothing is read from the
environment or the disk at import time, and heavy modules (apsw) load only here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import structlog
from pi_hermes_memory.api import Memory
from pi_hermes_memory.config import Config, EmbeddingProvider
from pi_hermes_memory.domain.capacity import OverflowStrategy
from pi_hermes_memory.domain.model import GLOBAL_NAMESPACE, Target, namespace_problem
from pi_hermes_memory.domain.scope import SessionScope
from pi_hermes_memory.ports import (
    Clock,
    Embedder,
    IdFactory,
    MarkdownStore,
    SearchIndex,
    SessionIndex,
    SessionSource,
    Storage,
    VectorStore,
)
from pi_hermes_memory.service import MemoryService, MemorySettings

if TYPE_CHECKING:
    from pi_hermes_memory.adapters.legacy_layout import MigrationReport
    from pi_hermes_memory.embedding import EmbeddingService
    from pi_hermes_memory.hybrid import HybridSettings
    from pi_hermes_memory.retrieval import Reranker
    from pi_hermes_memory.session_history import SessionHistory


def agent_access(agent_id: str | None, configured: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The namespaces a session may use: the access map's entry for the agent, else global
    plus the agent's own scope; without an agent id, the global layer only."""
    if agent_id is None:
        return frozenset({GLOBAL_NAMESPACE})
    if namespace_problem(f"agent:{agent_id}", Target.MEMORY) is not None:
        raise ValueError(f"agent_id {agent_id!r} must be letters, digits, '.', '_' and '-'")
    if agent_id in configured:
        return configured[agent_id]
    return frozenset({GLOBAL_NAMESPACE, f"agent:{agent_id}"})


def open_memory(
    *,
    agent_root: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    project: str | None = None,
    agent_id: str | None = None,
    environ: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    logger: Any = None,
    storage: Storage | None = None,
    markdown: MarkdownStore | None = None,
    search_index: SearchIndex | None = None,
    embedder: Embedder | None = None,
    vector_store: VectorStore | None = None,
    session_index: SessionIndex | None = None,
    session_source: SessionSource | None = None,
    reranker: Reranker | None = None,
) -> Memory:
    """Open the memory store described by the configuration.

    agent_root: overrides ``PI_CODING_AGENT_DIR`` / ``~/.pi/agent``.
    cwd: the working directory the current project is derived from (default: os.getcwd()).
    agent_id: which agent this session is; it selects the scopes the session may read and
    write (``scopes.agentAccess``; default: global + ``agent:<id>``, ADR 0014).
    project: an explicit project name (wins over config and cwd; must be a safe name).
    storage / markdown: custom adapters (they must pass the contract suite in
    ``pi_hermes_memory.testing``); default: SQLite ``sessions.db`` and Markdown files.
    search_index: the memory_search index (must pass ``SearchIndexContract``); default: FTS5
    over the default SQLite storage. With a custom storage and no index, search is off.
    embedder / vector_store: the row vectors (ADR 0015). Default: the configured
    ``embedding`` provider (off unless ``embedding.provider`` is ``openai-compatible`` and
    the key is in the environment) and the ``embedding`` columns of the default SQLite
    storage. Embeddings are off without an embedder or without a vector store.
    session_index / session_source: the session history index (must pass
    ``SessionIndexContract``) and where session files come from; default: the session tables
    of the default SQLite storage and the Pi sessions tree ``<agentRoot>/sessions``. With a
    custom storage and no session index, session history is off.
    reranker: a cross-encoder for hybrid search (``pi_hermes_memory.retrieval.Reranker``);
    default: the configured ``retrieval.rerank`` endpoint, if any. Used only with embeddings.
    """
    from pi_hermes_memory.adapters.config_file import load_config
    from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
    from pi_hermes_memory.adapters.system import SystemClock, UlidFactory

    env = dict(os.environ if environ is None else environ)
    if agent_root is not None:
        env["PI_CODING_AGENT_DIR"] = os.fspath(agent_root)
    config, config_warnings = load_config(
        environ=env, cwd=Path(cwd if cwd is not None else os.getcwd()), project_override=project
    )
    migrate: Callable[[], MigrationReport] | None = None
    if markdown is None:
        from pi_hermes_memory.adapters.legacy_layout import migrate_legacy_layout
        from pi_hermes_memory.adapters.markdown.store import MarkdownFiles

        files = MarkdownFiles(config.memory_dir, config.projects_memory_dir)
        markdown = files

        def migrate() -> MigrationReport:
            return migrate_legacy_layout(
                agent_root=config.agent_root,
                memory_dir=config.memory_dir,
                projects_dir=config.projects_memory_dir,
                lock=files.lock(),
            )

    # the old layout moves before the storage opens (ADR 0013)
    migration = migrate() if migrate is not None else None
    close_sessions: Callable[[], None] | None = None
    vectors: VectorStore | _LazySqliteVectors | None = vector_store
    if storage is None:
        from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
        from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

        storage = SqliteStorage(config.db_path)
        if search_index is None:
            search_index = SqliteSearchIndex(storage)
        if session_index is None:
            from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex

            sqlite_sessions = SqliteSessionIndex(config.db_path)  # connects on first use
            session_index, close_sessions = sqlite_sessions, sqlite_sessions.close
        if vectors is None:
            vectors = _LazySqliteVectors(storage)
    clock = clock or SystemClock()
    ids = ids or UlidFactory()
    logger = logger or structlog.wrap_logger(logging.getLogger("pi_hermes_memory"))
    open_warnings: list[str] = []
    embeddings = _embeddings(config, embedder, vectors, logger, open_warnings)
    close_reranker: Callable[[], None] | None = None
    if embeddings is not None and reranker is None and config.retrieval.rerank.enabled:
        reranker, close_reranker = _reranker(config, logger)
    settings = MemorySettings(
        scope=SessionScope(
            project=config.project,
            sharing=config.project_memory_sharing,
            access=agent_access(agent_id, config.agent_access),
        ),
        limits={
            Target.MEMORY: config.memory_char_limit,
            Target.USER: config.user_char_limit,
            Target.PROJECT: config.project_char_limit,
            Target.FAILURE: config.memory_char_limit,
        },
        overflow=OverflowStrategy(config.overflow_strategy.value),
        consolidation_available=False,
    )
    service = MemoryService(
        storage=storage,
        markdown=markdown,
        fmt=MarkdownFormat(),
        clock=clock,
        ids=ids,
        settings=settings,
        logger=logger,
        embeddings=embeddings,
    )
    try:
        service.entries()  # converge: finish interrupted renders, import hand edits
        if migration is not None and migration.deferred and migrate is not None:
            # the flat project file was missing; entries() rendered it, now merge into it
            migration = migrate()
            service.entries()
        unattributed = sum(1 for e in service.document(Target.PROJECT).active if e.project is None)
    except BaseException:
        if embeddings is not None:
            embeddings.close()
        if close_reranker is not None:
            close_reranker()
        storage.close()
        raise
    if unattributed:
        service.warnings.append(
            f"{markdown.describe(Target.PROJECT)} holds {unattributed} entr"
            f"{'y' if unattributed == 1 else 'ies'} without a project= attribution: kept in "
            "Markdown, left out of search and never evicted; add project=<name> to its "
            "metadata comment to attribute it."
        )
    warnings = [f"{w.field}: {w.message}" for w in config_warnings] + open_warnings
    if migration is not None:
        warnings.extend(migration.warnings)
    history = None
    if session_index is not None:
        history = _session_history(
            config, session_index, session_source, clock, logger, close_sessions
        )
    return Memory(
        sessions=history,
        service=service,
        storage=storage,
        clock=clock,
        ids=ids,
        config=config,
        warnings=(*warnings, *service.warnings),
        logger=logger,
        search_index=search_index,
        hybrid=hybrid_settings(config) if embeddings is not None else None,
        reranker=reranker,
        on_close=close_reranker,
    )


def hybrid_settings(config: Config) -> HybridSettings:
    """The hybrid search settings of `config.retrieval` (ADR 0019)."""
    from pi_hermes_memory.hybrid import HybridSettings
    from pi_hermes_memory.retrieval import Pipeline

    retrieval = config.retrieval
    default = HybridSettings()
    fusion = default.fusion
    profiles = default.profiles
    if retrieval.dense_weight is not None:  # the configured weight wins for every embedder
        fusion = attrs.evolve(fusion, dense_weight=retrieval.dense_weight)
        profiles = {
            model: attrs.evolve(p, dense_weight=retrieval.dense_weight)
            for model, p in profiles.items()
        }
    return HybridSettings(
        fusion=fusion,
        profiles=profiles,
        pipeline=Pipeline(stages=retrieval.stages, min_score=retrieval.hard_min_score),
        rerank_top_n=retrieval.rerank.top_n,
    )


def _reranker(config: Config, logger: Any) -> tuple[Reranker, Callable[[], None]]:
    from pi_hermes_memory.adapters.reranker_jina import JinaReranker

    rerank = config.retrieval.rerank
    client = JinaReranker(
        base_url=rerank.base_url,
        model=rerank.model,
        api_key=rerank.api_key,
        timeout_s=rerank.timeout_ms / 1000,
        logger=logger,
    )
    return client, client.close


def _session_history(
    config: Config,
    index: SessionIndex,
    source: SessionSource | None,
    clock: Clock,
    logger: Any,
    on_close: Callable[[], None] | None,
) -> SessionHistory:
    from pi_hermes_memory.session_history import SessionHistory
    from pi_hermes_memory.session_search import SessionSearchService
    from pi_hermes_memory.sessions import SessionIndexer

    if source is None:
        from pi_hermes_memory.adapters.sessions_jsonl import PiSessionFiles

        source = PiSessionFiles(config.agent_root / "sessions")
    settings = config.session_search
    return SessionHistory(
        indexer=SessionIndexer(
            source=source,
            index=index,
            clock=clock,
            project_map=settings.project_map,
            logger=logger,
        ),
        search=SessionSearchService(index=index, current_project=config.project, logger=logger),
        variant=settings.variant.value,
        on_close=on_close,
    )


class _LazySqliteVectors:
    """Stands for the SQLite vector store until embeddings turn out to be on (numpy loads
    only then)."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage

    def build(self) -> VectorStore:
        from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore

        return SqliteVectorStore(self._storage)


def _embeddings(
    config: Config,
    embedder: Embedder | None,
    store: VectorStore | _LazySqliteVectors | None,
    logger: Any,
    warnings: list[str],
) -> EmbeddingService | None:
    """The embedding service, or None (embeddings off: FTS-only search, token-only dedup).

    The configured provider is built only when `config.embedding.enabled` (a valid section and
    the key found in the environment); httpx and numpy load only then.
    """
    if store is None or (embedder is None and not config.embedding.enabled):
        return None
    on_close = None
    if embedder is None and config.embedding.provider is EmbeddingProvider.LOCAL:
        from pi_hermes_memory.adapters.local_embedder import (
            LocalEmbedder,
            LocalEmbedderUnavailable,
        )

        try:
            embedder = LocalEmbedder()
        except LocalEmbedderUnavailable as exc:
            warnings.append(f"embedding.provider: {exc}; embeddings are off")
            return None
    if isinstance(store, _LazySqliteVectors):
        store = store.build()
    if embedder is None:
        from pi_hermes_memory.adapters.embedder_openai import OpenAICompatibleEmbedder

        provider = OpenAICompatibleEmbedder(config.embedding, logger=logger)
        embedder, on_close = provider, provider.close
    from pi_hermes_memory.embedding import EmbeddingService

    return EmbeddingService(embedder=embedder, store=store, logger=logger, on_close=on_close)
