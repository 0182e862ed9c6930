"""The composition root: the one place that picks concrete adapters.

`open(...)` is keyword-only and resolves every default inside the call; nothing is read from the
environment or the disk at import time, and heavy modules (apsw) load only here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import attrs
from pi_hermes_memory.api import Memory
from pi_hermes_memory.composition import Backend, BackendKind, Part, split_part
from pi_hermes_memory.config.settings import (
    Config,
    EmbeddingConfig,
    EmbeddingProvider,
    LlmProvider,
    RerankConfig,
    RerankProvider,
    RetrievalConfig,
    RetrievalMode,
)
from pi_hermes_memory.config.storage import StorageBackend
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.model import GLOBAL_NAMESPACE, Target, namespace_problem
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import (
    ConfigUnreadable,
    DatabaseDamaged,
    InvalidArgument,
    StorageFailed,
    StorageFull,
    StoreReadOnly,
)
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.memory.service import MemoryService, MemorySettings
from pi_hermes_memory.ports.store import (
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

if TYPE_CHECKING:
    from pi_hermes_memory.adapters.files.legacy_layout import MigrationReport
    from pi_hermes_memory.adapters.markdown.proofs import MarkdownProofs
    from pi_hermes_memory.history.features import SessionHistory
    from pi_hermes_memory.journal.pipeline import RenderLag
    from pi_hermes_memory.knowledge.service import KnowledgeBase
    from pi_hermes_memory.learning.llm import LlmStatus
    from pi_hermes_memory.memory.recovery import RecoveryReport
    from pi_hermes_memory.ports.llm import Completer
    from pi_hermes_memory.ports.skills import SkillTelemetry
    from pi_hermes_memory.search.embedding import EmbeddingService
    from pi_hermes_memory.search.hybrid import HybridSettings
    from pi_hermes_memory.search.retrieval import Reranker
    from pi_hermes_memory.skills.governance.service import SkillGovernance
    from pi_hermes_memory.skills.service import SkillService


def agent_access(agent_id: str | None, configured: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The namespaces a session may use: the access map's entry for the agent, else global
    plus the agent's own scope; without an agent id, the global layer only."""
    if agent_id is None:
        return frozenset({GLOBAL_NAMESPACE})
    if namespace_problem(f"agent:{agent_id}", Target.MEMORY) is not None:
        raise InvalidArgument(
            f"agent_id {shown(agent_id)} must be letters, digits, '.', '_' and '-'"
        )
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
    storage: Part[Storage] | None = None,
    markdown: MarkdownStore | None = None,
    search_index: Part[SearchIndex] | None = None,
    embedder: Embedder | None = None,
    vector_store: Part[VectorStore] | None = None,
    session_index: Part[SessionIndex] | None = None,
    session_source: Part[SessionSource] | None = None,
    reranker: Reranker | None = None,
    retrieval: RetrievalConfig | None = None,
    overrides: Mapping[str, Any] | None = None,
    skill_telemetry: Part[SkillTelemetry] | None = None,
    session_id: str | None = None,
    child_session: bool = False,
    completer: Completer | None = None,
    render_lag: RenderLag | None = None,
) -> Memory:
    """Open the memory store described by the configuration.

    agent_root: overrides ``PI_CODING_AGENT_DIR`` / ``~/.pi/agent``.
    cwd: the working directory the current project is derived from (default: os.getcwd()).
    agent_id: which agent this session is; it selects the scopes the session may read and
    write (``scopes.agentAccess``; default: global + ``agent:<id>``, ADR 0014).
    project: an explicit project name (wins over config and cwd; must be a safe name).
    storage, search_index, vector_store, session_index, session_source, skill_telemetry: each
    an instance, or a factory ``lambda backend: ...`` that receives the configured backend's
    default parts (``pi_hermes_memory.composition.Backend``) and replaces that one part,
    keeping every other default (ADR 0057), e.g. ``storage=lambda backend:
    Audited(backend.storage)`` or ``vector_store=lambda backend: MyStore(backend.rows)``.
    The configuration's ``adapters`` section names such factories by import path (ADR 0060);
    a keyword given here wins over its entry. A storage *instance* comes with
    no default search index, vectors, session history or skill statistics: each one not given
    is off, and open() logs a warning naming them (``open.defaults_off``).
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
    reranker: a cross-encoder for hybrid search (``pi_hermes_memory.search.retrieval.Reranker``);
    default: the configured ``retrieval.rerank`` endpoint, if any. Used only with embeddings.
    retrieval: replaces the configuration's ``retrieval`` section (the server passes the one
    of ``openclaw.json``, ADR 0070).
    overrides: top-level configuration keys that replace those of
    ``hermes-memory-config.json``, validated as the file's own (the server passes the keys it
    maps from ``openclaw.json``, ADR 0075).
    skill_telemetry: skill load counts, usage evidence, visibility, governance state and
    curation jobs (must pass ``SkillTelemetryContract``); default: the skill tables of the
    default SQLite storage. With a custom storage and none given, skill statistics are off.
    completer: the LLM used by background learning, consolidation and curation
    (``pi_hermes_memory.learning.llm.Completer``); default: the configured ``llm`` section (off
    unless set up; every feature that needs it then says it is off).
    session_id / child_session: this agent session's id (recorded with skill usage evidence)
    and whether it is a background child session (review, curation): a child session may
    only view or change project skills.
    render_lag: when a large Markdown file's render may lag the journal
    (``pi_hermes_memory.journal.pipeline.RenderLag``; default: files of at least 1 MiB rendered at
    most once a second while this process writes, ADR 0042).
    """
    from pi_hermes_memory.adapters.files.config_file import load_config
    from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
    from pi_hermes_memory.adapters.system import SystemClock, UlidFactory

    parts = {
        "storage": storage, "search_index": search_index, "vector_store": vector_store,
        "session_index": session_index, "session_source": session_source,
        "skill_telemetry": skill_telemetry,
    }  # fmt: skip
    given = frozenset(name for name, part in parts.items() if part is not None)
    storage, storage_factory = split_part(storage)
    search_index, search_factory = split_part(search_index)
    vector_store, vectors_factory = split_part(vector_store)
    session_index, sessions_factory = split_part(session_index)
    session_source, source_factory = split_part(session_source)
    skill_telemetry, telemetry_factory = split_part(skill_telemetry)
    env = dict(os.environ if environ is None else environ)
    if agent_root is not None:
        env["PI_CODING_AGENT_DIR"] = os.fspath(agent_root)
    config, config_warnings = load_config(
        environ=env,
        cwd=Path(cwd if cwd is not None else os.getcwd()),
        project_override=project,
        overrides=overrides,
    )
    if retrieval is not None:
        config = attrs.evolve(config, retrieval=retrieval)
    # the config's `adapters` entries, imported before anything on disk moves (ADR 0060)
    named = _configured_parts(config, given)
    storage_factory = storage_factory or named.get("storage")
    search_factory = search_factory or named.get("search_index")
    vectors_factory = vectors_factory or named.get("vector_store")
    sessions_factory = sessions_factory or named.get("session_index")
    source_factory = source_factory or named.get("session_source")
    telemetry_factory = telemetry_factory or named.get("skill_telemetry")
    if storage is None and config.storage.problem is not None:
        from pi_hermes_memory.errors import ConfigError

        # before anything on disk moves; never a local store instead of the one meant
        raise ConfigError(config.storage.problem)
    # a file that cannot be parsed may name another store: read the default one, write none
    doubt = _location_doubt(config) if storage is None else None
    migrate: Callable[[], MigrationReport | None] | None = None
    if markdown is None:
        from pi_hermes_memory.adapters.files.legacy_probe import Layout, anything_to_do
        from pi_hermes_memory.adapters.markdown.store import MarkdownFiles

        files = MarkdownFiles(config.memory_dir, config.projects_memory_dir)
        markdown = files
        layout = files.layout_problem()
        if layout is not None:
            from pi_hermes_memory.errors import StoreLayoutConflict

            raise StoreLayoutConflict(layout)

        def migrate() -> MigrationReport | None:
            legacy = Layout(
                agent_root=config.agent_root,
                memory_dir=config.memory_dir,
                projects_dir=config.projects_memory_dir,
            )
            if not anything_to_do(legacy):
                return None  # the migration and its report classes stay unloaded (ADR 0105)
            from pi_hermes_memory.adapters.files.legacy_layout import migrate_legacy_layout

            return migrate_legacy_layout(
                agent_root=config.agent_root,
                memory_dir=config.memory_dir,
                projects_dir=config.projects_memory_dir,
                lock=files.lock(),
            )

    # the old layout moves before the storage opens (ADR 0013)
    migration = migrate() if migrate is not None and doubt is None else None
    close_sessions: Callable[[], None] | None = None
    vectors: VectorStore | _LazyVectors | None = vector_store
    logger = logger or library_logger()
    # set when sessions.db cannot be used: the store then works read-only (ADR 0023)
    read_only: StorageFailed | None = None
    own_storage = storage is None
    skill_tables_of: Any = None  # the SQLite storage whose skill tables hold the statistics
    if doubt is not None:
        read_only = doubt
        storage, markdown, search_index = _read_only_store(config, markdown, doubt)
    if storage is None and config.storage.backend is StorageBackend.POSTGRES:
        storage, search_index, vectors = _postgres_store(config, logger, search_index, vectors)
        if skill_telemetry is None:  # PgSkillTables, built by the first skill call
            skill_tables_of = storage
        if session_index is None:  # the session history stays local to each host (ADR 0050)
            local_sessions = _LazySessions(config.db_path)  # connects on first use
            session_index, close_sessions = local_sessions.as_port(), local_sessions.close
    if storage is None:
        from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
        from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

        try:
            sqlite = SqliteStorage(config.db_path, logger=logger)
        except (DatabaseDamaged, StoreReadOnly, StorageFull) as exc:
            read_only = exc
            storage, markdown, search_index = _read_only_store(config, markdown, exc)
        else:
            storage = sqlite
            if search_index is None:
                search_index = SqliteSearchIndex(sqlite)
            if session_index is None:
                sqlite_sessions = _LazySessions(config.db_path)  # connects on first use
                session_index, close_sessions = sqlite_sessions.as_port(), sqlite_sessions.close
            if vectors is None:
                vectors = _LazyVectors(sqlite, "sqlite")
            if skill_telemetry is None:  # SqliteSkillTables, built by the first skill call
                skill_tables_of = sqlite
    if own_storage and read_only is None:
        backend = _backend(config, logger, storage, markdown, search_index, session_index)
        backend = attrs.evolve(
            backend,
            vectors=vectors.build if isinstance(vectors, _LazyVectors) else None,
            telemetry=(lambda: _skill_tables(config, skill_tables_of))
            if skill_tables_of is not None
            else None,
        )
    else:
        if not own_storage:
            _say_defaults_off(logger, search_index, vectors, session_index, skill_telemetry)
        backend = Backend(
            kind=BackendKind.CUSTOM, config=config, logger=logger, storage=storage,
            markdown=markdown, search_index=search_index, session_index=session_index,
        )  # fmt: skip
    try:
        if read_only is None:  # a read-only store (ADR 0023) keeps its read-only parts
            if search_factory is not None:
                search_index = search_factory(backend)
            if vectors_factory is not None:
                vectors = vectors_factory(backend)
            if sessions_factory is not None:
                if close_sessions is not None:
                    close_sessions()  # the default index never connected: nothing to lose
                session_index, close_sessions = sessions_factory(backend), None
            if telemetry_factory is not None:
                skill_telemetry, skill_tables_of = telemetry_factory(backend), None
            if storage_factory is not None:
                storage = storage_factory(backend)
        if source_factory is not None:  # transcripts are only read: also on a read-only store
            session_source = source_factory(backend)
    except BaseException:
        if own_storage:  # a factory failed (a wrong config entry): nothing stays open
            backend.storage.close()
        raise
    clock = clock or SystemClock()
    ids = ids or UlidFactory()
    open_warnings: list[str] = []
    embeddings = _embeddings(config, embedder, vectors, logger, open_warnings)
    # `llm.provider` off: no completer whatever else the section says (`llm_plan`), and the LLM
    # modules load when something first asks for it (ADR 0110)
    llm_off = completer is None and config.llm.provider is LlmProvider.OFF
    if completer is None and not llm_off:  # before the reranker: rerank "llm" asks it (ADR 0070)
        from pi_hermes_memory.adapters.providers.llm_factory import completer_from_config

        cwd_text = os.fspath(cwd) if cwd is not None else os.getcwd()
        completer = completer_from_config(config, env, logger=logger, cwd=cwd_text)
    close_reranker: Callable[[], None] | None = None
    if embeddings is not None and reranker is None and config.retrieval.rerank.enabled:
        reranker, close_reranker = _reranker(config, logger, completer, open_warnings)
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

    proofs = _replica_proofs(markdown, env)  # before make_service: it may get other files

    def make_service(
        storage: Storage, markdown: MarkdownStore, embeddings: EmbeddingService | None
    ) -> MemoryService:
        return MemoryService(
            storage=storage,
            markdown=markdown,
            fmt=MarkdownFormat(),
            clock=clock,
            ids=ids,
            settings=settings,
            logger=logger,
            embeddings=embeddings,
            render_lag=render_lag,
            # only for our own files: a replacement (read-only, custom) reads as before
            proofs=proofs if proofs is not None and proofs.files is markdown else None,
        )

    service = make_service(storage, markdown, embeddings)
    try:
        try:
            service.converge()  # finish interrupted renders, import hand edits (ADR 0038)
        except OSError as error:
            fault = _storage_fault(error)
            if fault is None or not own_storage or read_only is not None:
                raise
            # the file opened but cannot be read through, or written: read-only (ADR 0023)
            storage.close()
            if close_sessions is not None:
                close_sessions()
            if embeddings is not None:
                embeddings.close()
            read_only, embeddings, session_index, close_sessions = fault, None, None, None
            skill_telemetry = skill_tables_of = None
            storage, markdown, search_index = _read_only_store(config, markdown, fault)
            service = make_service(storage, markdown, None)
            service.converge()
        if read_only is not None:
            migration = None
        if migration is not None and migration.deferred and migrate is not None:
            # the flat project file was missing; entries() rendered it, now merge into it
            migration = migrate()
            service.converge()
        unattributed = service.unattributed_projects()
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
    warnings.extend(_layout_notes(config))
    # a rebuild from the event log, …: said by the default storage, also under a wrapper
    warnings.extend(
        getattr(
            backend.storage if storage_factory and read_only is None else storage, "warnings", ()
        )
    )
    if read_only is not None:
        warnings.insert(0, read_only_warning(read_only))
    if migration is not None:
        warnings.extend(migration.warnings)
    history: Callable[[], SessionHistory] | None = None
    if session_index is not None:
        index, source, close_index = session_index, session_source, close_sessions

        def make_history() -> SessionHistory:  # built by the first session call (ADR 0038);
            # until then the index never connected, so an unbuilt one has nothing to close
            return _session_history(config, index, source, clock, logger, close_index)

        history = make_history
    if read_only is not None and own_storage:
        skill_telemetry = skill_tables_of = None  # off: never silently kept in memory only
    memory = Memory(
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
        read_only=read_only,
        write_guard=_read_only_files(markdown),
        knowledge=_knowledge_factory(config, embeddings, logger, home=env.get("HOME")),
    )
    if llm_off:
        memory._attach_llm_off(lambda: _llm_status(config, env))
    else:
        from pi_hermes_memory.adapters.markdown.atomic import try_file_lock
        from pi_hermes_memory.learning.llm import OffCompleter, llm_status

        status = llm_status(config, env)
        memory._attach_llm(
            completer or OffCompleter(status),
            status if completer is None else None,
            try_lock=try_file_lock,
        )
    store, documents, llm = storage, markdown, completer
    built: list[SkillTelemetry | None] = []

    def telemetry() -> SkillTelemetry | None:
        if not built:
            tables = skill_telemetry
            if tables is None and skill_tables_of is not None:
                tables = _skill_tables(config, skill_tables_of)
            built.append(tables)
        return built[0]

    def skills() -> SkillService:  # built on first use: a search never loads skills
        return _skill_service(
            config,
            store,
            documents,
            clock,
            logger,
            telemetry(),
            session_id,
            child_session,
            memory,
        )

    def governance() -> SkillGovernance:
        from pi_hermes_memory.skills.classifier_llm import LlmClassifier
        from pi_hermes_memory.skills.governance.service import SkillGovernance

        return SkillGovernance(
            skills=memory.skills,
            telemetry=telemetry(),
            config=config.skill_governance,
            storage=store,
            clock=clock,
            logger=logger,
            write_guard=memory._writable,
            classifier=LlmClassifier(llm) if llm is not None else None,
        )

    memory._attach_skills(skills)
    memory._attach_governance(governance)
    return memory


def _llm_status(config: Config, environ: Mapping[str, str]) -> LlmStatus:
    from pi_hermes_memory.learning.llm import llm_status

    return llm_status(config, environ)


def _configured_parts(config: Config, given: frozenset[str]) -> dict[str, Callable[[Backend], Any]]:
    """The factories named by the config's `adapters` section (ADR 0060) for the parts not
    given to open(): a keyword wins over its entry (which is then not even imported)."""
    if config.adapters.problem is not None:
        from pi_hermes_memory.errors import ConfigError

        raise ConfigError(config.adapters.problem)
    wanted = {k: p for k, p in config.adapters.paths.items() if k not in given}
    if not wanted:
        return {}
    from pi_hermes_memory.adapters.providers.custom import backend_factory

    return {k: backend_factory(config.adapters.field(k), p) for k, p in wanted.items()}


def _backend(
    config: Config,
    logger: Any,
    storage: Storage,
    markdown: MarkdownStore,
    search_index: SearchIndex | None,
    session_index: SessionIndex | None,
) -> Backend:
    """The bundle of the configured backend's default parts (ADR 0057)."""
    if config.storage.backend is StorageBackend.POSTGRES:
        from pi_hermes_memory.adapters.postgres.rows import PgRows
        from pi_hermes_memory.adapters.postgres.storage import PgStorage

        assert isinstance(storage, PgStorage)
        return Backend(
            kind=BackendKind.POSTGRES, config=config, logger=logger, storage=storage,
            markdown=markdown, rows=PgRows(storage), search_index=search_index,
            session_index=session_index,
        )  # fmt: skip
    from pi_hermes_memory.adapters.sqlite.rows import SqliteRows
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

    assert isinstance(storage, SqliteStorage)
    return Backend(
        kind=BackendKind.SQLITE, config=config, logger=logger, storage=storage,
        markdown=markdown, rows=SqliteRows(storage), search_index=search_index,
        session_index=session_index,
    )  # fmt: skip


def _say_defaults_off(logger: Any, *parts: object) -> None:
    """A storage instance comes with no default search index, vectors, session history or
    skill statistics: never switched off silently (style rule 36)."""
    names = ("search_index", "vector_store", "session_index", "skill_telemetry")
    off = [name for name, part in zip(names, parts, strict=True) if part is None]
    if off:
        logger.warning(
            "open.defaults_off",
            parts=off,
            reason="storage is a custom instance; pass these too, or pass storage as a "
            "factory (storage=lambda backend: ...) to keep the defaults (ADR 0057)",
        )


def _skill_tables(config: Config, storage: Any) -> SkillTelemetry:
    """The skill tables of the default storage: SQLite, or PostgreSQL (ADR 0050)."""
    if config.storage.backend is StorageBackend.POSTGRES:
        from pi_hermes_memory.adapters.postgres.skill_tables import PgSkillTables

        return PgSkillTables(storage)
    from pi_hermes_memory.adapters.sqlite.skill_tables import SqliteSkillTables

    return SqliteSkillTables(storage)


def _skill_service(
    config: Config,
    storage: Storage,
    markdown: MarkdownStore,
    clock: Clock,
    logger: Any,
    telemetry: SkillTelemetry | None,
    session_id: str | None,
    child: bool,
    memory: Memory,
) -> SkillService:
    """Skills live in folders under the configured roots (ADR 0030), on the store's journal
    and lock."""
    from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
    from pi_hermes_memory.skills.service import SkillService

    folders = SkillFolders(
        global_root=config.skill_governance.scopes.global_skills_dir,
        project_root=config.project_skills_root,
    )
    return SkillService(
        storage=storage,
        folders=folders,
        list_folders=folders.slugs,
        lock=markdown.lock,
        clock=clock,
        logger=logger,
        project=config.project,
        telemetry=telemetry,
        host_skills_dir=config.agent_root / "skills",
        session_id=session_id,
        child=child,
        write_guard=memory._writable,
        governance=config.skill_governance,
    )


def _storage_fault(exc: OSError) -> StorageFailed | None:
    """The fault that makes the store read-only at open (a damaged database, a full disk, a
    read-only file or folder, e.g. the lock file cannot be opened), or None for others."""
    import errno

    if isinstance(exc, DatabaseDamaged | StoreReadOnly | StorageFull):
        return exc
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreReadOnly(f"{exc}; nothing was written.", path=getattr(exc, "path", None))
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFull(f"{exc}; nothing was written.", path=getattr(exc, "path", None))
    return None


def _location_doubt(config: Config) -> ConfigUnreadable | None:
    """The refusal for every write while the config file cannot say where the data lives."""
    if config.location_unknown is None:
        return None
    return ConfigUnreadable(
        f"{config.location_unknown}; until then writes are refused, reads come from the "
        f"local store at {config.db_path} and other settings are at their defaults",
        path=config.config_path,
    )


def read_only_warning(exc: StorageFailed) -> str:
    """The one line that says why the store is read-only and what to do."""
    if isinstance(exc, ConfigUnreadable):
        return str(exc)
    if isinstance(exc, DatabaseDamaged):
        return f"{exc}; until then list and search work, writes are refused"
    if isinstance(exc, StorageFull):
        return f"the store is read-only: {exc} Until then list and search work."
    return f"the store is read-only: {exc} Until then list and search work, writes are refused."


def _read_only_store(
    config: Config, markdown: MarkdownStore, exc: StorageFailed
) -> tuple[Storage, MarkdownStore, SearchIndex]:
    """The journal loaded into the in-memory adapters from the best durable copy (the database
    read-only, unless it is damaged; else the event log); the Markdown files never written."""
    from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
    from pi_hermes_memory.adapters.sqlite.eventlog import EventLog, default_log_path
    from pi_hermes_memory.adapters.sqlite.read_only import (
        ReadOnlyMarkdown,
        ReadOnlyStorage,
        load_journal,
    )

    log = EventLog(default_log_path(config.db_path))
    events, store_id, _ = load_journal(
        config.db_path, log, trust_database=not isinstance(exc, DatabaseDamaged)
    )
    storage = ReadOnlyStorage(events, store_id)
    return storage, ReadOnlyMarkdown(markdown), InMemorySearchIndex(storage)


def _read_only_files(markdown: MarkdownStore) -> Callable[[Iterable[Target]], None] | None:
    """A check run before a write: a Markdown file without write permission (chmod 0444) is
    respected, so a write that would change it is refused before anything is committed."""
    from pi_hermes_memory.adapters.markdown.store import MarkdownFiles, read_only_file

    if not isinstance(markdown, MarkdownFiles):
        return None
    files = markdown

    def check(targets: Iterable[Target]) -> None:
        for target in dict.fromkeys(targets):
            path = files.path_for(target)
            if read_only_file(path):
                raise StoreReadOnly(
                    f"{path} is read-only; it was left as it is and nothing was written. Make "
                    "it writable (chmod u+w) to save to it.",
                    path=path,
                )

    return check


def recover(
    *,
    agent_root: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    logger: Any = None,
) -> RecoveryReport:
    """Repair a damaged sessions.db (ADR 0023): move it and its side files aside (never
    deleted: ``sessions.db.damaged-<time>``), rebuild it from the event log with its history
    and ids, then open the store as usual, which imports Markdown edits made meanwhile.
    A sound database is left alone (status ``healthy``). Raises StorageFailed (e.g. the folder
    is read-only) with nothing changed."""
    from pi_hermes_memory.adapters.files.config_file import load_config
    from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
    from pi_hermes_memory.adapters.sqlite.connection import database_present
    from pi_hermes_memory.adapters.sqlite.eventlog import EventLog, default_log_path
    from pi_hermes_memory.adapters.sqlite.failures import map_os_error
    from pi_hermes_memory.adapters.sqlite.recovery import (
        damaged,
        move_aside,
        rebuild_from_log,
        repair_log,
    )
    from pi_hermes_memory.memory.recovery import RecoveryReport

    env = dict(os.environ if environ is None else environ)
    if agent_root is not None:
        env["PI_CODING_AGENT_DIR"] = os.fspath(agent_root)
    config, _ = load_config(environ=env, cwd=Path(os.getcwd()), project_override=None)
    if config.storage.backend is StorageBackend.POSTGRES:  # ADR 0050
        raise StorageFailed(
            "recover repairs the local SQLite store; this store is on PostgreSQL "
            "(storage.backend): restore the server from its backups instead"
        )
    if config.storage.problem is not None:  # perhaps not the local store that was meant
        raise StorageFailed(f"recover repairs the local SQLite store: {config.storage.problem}")
    if config.location_unknown is not None:  # ADR 0065
        raise ConfigUnreadable(
            f"recover repairs the local SQLite store: {config.location_unknown}",
            path=config.config_path,
        )
    db = config.db_path
    log = EventLog(default_log_path(db))
    files = MarkdownFiles(config.memory_dir, config.projects_memory_dir)
    moved: list[Path] = []
    events = entries = 0
    problems: tuple[str, ...] = ()
    log_rewritten = False
    with files.lock():
        reason = damaged(db)
        if reason is None and database_present(db):  # sound: is its event log whole?
            try:
                repair = repair_log(db, log)
            except OSError as exc:
                raise map_os_error(exc, db) from exc
            if repair is not None:
                problems, log_rewritten = repair.problems, repair.rewritten
                events = repair.events
                moved = [repair.kept] if repair.kept is not None else []
                if not repair.rewritten:
                    problems = (
                        *problems,
                        f"{log.path.name} names another store or holds events {db.name} lacks: "
                        "left as it is",
                    )
        if reason is not None:
            try:
                moved = move_aside(db, "damaged")
                if log.exists():
                    with log.lock():
                        rebuilt = rebuild_from_log(db, log)
                    events, entries, problems = rebuilt.events, rebuilt.entries, rebuilt.problems
            except OSError as exc:
                raise map_os_error(exc, db) from exc
    with open_memory(agent_root=agent_root, environ=environ, logger=logger) as memory:
        warnings = memory.warnings
        if memory.read_only is not None:
            raise memory.read_only
    status = (
        Status.HEALTHY
        if reason is None
        else Status.RECOVERED
        if events
        else Status.REBUILT_FROM_MARKDOWN
    )
    return RecoveryReport(
        status=status,
        database=str(db),
        reason=reason,
        moved_aside=tuple(p.name for p in moved),
        events=events,
        entries=entries,
        problems=problems,
        warnings=tuple(warnings),
        log_rewritten=log_rewritten,
    )


def _layout_notes(config: Config) -> list[str]:
    """memoryDir outside the agent root is allowed (the seed takes absolute paths) but said:
    other agent roots may share that folder and its journal (ADR 0022)."""
    from pi_hermes_memory.adapters.files.config_file import physical_path

    root = physical_path(config.agent_root)
    memory_dir = physical_path(config.memory_dir)
    if memory_dir == root or root in memory_dir.parents:
        return []
    return [
        f"memoryDir: {config.memory_dir} is outside the agent root {config.agent_root}; agent "
        "roots that name the same memoryDir share one journal (each keeps its own Markdown "
        "replicas)"
    ]


def _knowledge_factory(
    config: Config, embeddings: EmbeddingService | None, logger: Any, *, home: str | None
) -> Callable[[], KnowledgeBase]:
    """Builds the knowledge base on first use (ADR 0048): the configured folders, the index
    `knowledge.db` beside `sessions.db` (the store's folders are never walked), the store's
    embeddings when they are on."""

    def make() -> KnowledgeBase:
        from pi_hermes_memory.adapters.files.knowledge_folders import (
            KnowledgeFiles,
            knowledge_db_path,
        )
        from pi_hermes_memory.adapters.sqlite.knowledge import SqliteKnowledgeIndex
        from pi_hermes_memory.knowledge.service import KnowledgeBase, ProtectedFolders

        settings = config.knowledge
        state = [config.memory_dir, config.projects_memory_dir]
        return KnowledgeBase(
            roots=[str(p) for p in settings.paths],
            source=KnowledgeFiles(exclude=state),
            index=SqliteKnowledgeIndex(knowledge_db_path(config.memory_dir)),
            embeddings=embeddings,
            hybrid=hybrid_settings(config) if embeddings is not None else None,
            max_file_bytes=settings.max_file_bytes,
            max_chunk_chars=settings.max_chunk_chars,
            max_index_files=settings.max_index_files,
            max_index_bytes=settings.max_index_bytes,
            protected=ProtectedFolders(
                home=home if home and os.path.isabs(home) else None,
                agent_root=str(config.agent_root),
                state_dirs=tuple(str(d) for d in state),
            ),
            logger=logger,
        )

    return make


def hybrid_settings(config: Config) -> HybridSettings:
    """The hybrid search settings of `config.retrieval` (ADR 0019), the second seed's keys
    mapped onto `Fusion` and `Pipeline` (ADR 0070, the table in docs/configuration.md)."""
    from pi_hermes_memory.search.hybrid import HybridSettings
    from pi_hermes_memory.search.retrieval import Pipeline, Stage

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
    if retrieval.mode is RetrievalMode.VECTOR:
        fusion = attrs.evolve(fusion, fts_weight=0.0)
    elif retrieval.fts_weight is not None:
        fusion = attrs.evolve(fusion, fts_weight=retrieval.fts_weight)
    min_cosine = default.min_cosine
    if retrieval.min_cosine is not None:  # the configured floor wins for every embedder
        min_cosine = retrieval.min_cosine
        profiles = {
            model: attrs.evolve(p, min_cosine=retrieval.min_cosine) for model, p in profiles.items()
        }
    pipeline = Pipeline(stages=retrieval.stages, min_score=retrieval.hard_min_score)
    if retrieval.recency_half_life_days == 0:
        pipeline = pipeline.without(Stage.RECENCY)
    elif retrieval.recency_half_life_days is not None:
        pipeline = attrs.evolve(pipeline, recency_half_life_days=retrieval.recency_half_life_days)
    if retrieval.recency_weight is not None:
        pipeline = attrs.evolve(pipeline, recency_weight=retrieval.recency_weight)
    if retrieval.time_decay_half_life_days == 0:
        pipeline = pipeline.without(Stage.TIME_DECAY)
    elif retrieval.time_decay_half_life_days is not None:
        pipeline = attrs.evolve(
            pipeline, time_decay_half_life_days=retrieval.time_decay_half_life_days
        )
    if retrieval.length_norm_anchor == 0:
        pipeline = pipeline.without(Stage.LENGTH)
    elif retrieval.length_norm_anchor is not None:
        pipeline = attrs.evolve(pipeline, length_anchor=retrieval.length_norm_anchor)
    if retrieval.importance_weight == 0:
        pipeline = pipeline.without(Stage.IMPORTANCE)
    elif retrieval.importance_weight is not None:
        pipeline = attrs.evolve(pipeline, importance_floor=1.0 - retrieval.importance_weight)
    return HybridSettings(
        fusion=fusion,
        profiles=profiles,
        min_cosine=min_cosine,
        pipeline=pipeline,
        rerank_top_n=retrieval.rerank.top_n,
        depth=retrieval.candidate_pool_size or default.depth,
    )


def _replica_proofs(markdown: MarkdownStore, env: Mapping[str, str]) -> MarkdownProofs | None:
    """Proofs that our Markdown replicas are unchanged, in the cache folder the environment
    names (ADR 0089); None for any other Markdown store or without a cache folder."""
    from pi_hermes_memory.adapters.markdown.store import MarkdownFiles

    if not isinstance(markdown, MarkdownFiles):
        return None
    from pi_hermes_memory.adapters.markdown.proofs import MarkdownProofs, cache_dir

    folder = cache_dir(env)
    return None if folder is None else MarkdownProofs(markdown, folder)


def _reranker(
    config: Config, logger: Any, completer: Completer | None, warnings: list[str]
) -> tuple[Reranker | None, Callable[[], None] | None]:
    settings = config.retrieval.rerank
    if settings.provider is RerankProvider.LLM:
        if completer is None:
            warnings.append(
                'retrieval.rerank is "llm" but the LLM is off (see the llm section); '
                "search ranks without a reranker"
            )
            return None, None
        from pi_hermes_memory.adapters.providers.llm_reranker import LlmReranker

        return LlmReranker(completer, timeout_s=settings.timeout_ms / 1000, logger=logger), None
    return build_reranker(settings, logger)


def build_reranker(
    settings: RerankConfig, logger: Any
) -> tuple[Reranker, Callable[[], None] | None]:
    """The reranker of an enabled `retrieval.rerank` section and what closes it: the
    Jina-compatible client, or the adapter named by import path (ADR 0057). The one place
    that builds it: `open()` and the server both call this."""
    if settings.provider is RerankProvider.CUSTOM and settings.custom is not None:
        from pi_hermes_memory.adapters.providers.custom import load_adapter

        custom: Reranker = load_adapter("retrieval.rerank.provider", settings.custom)
        return custom, _closer(custom)
    if settings.provider is RerankProvider.LIGHTWEIGHT:
        from pi_hermes_memory.adapters.providers.llm_reranker import CosineOnly

        return CosineOnly(), None
    if settings.provider is RerankProvider.LLM:  # it needs a store's LLM: `open()` builds it
        raise InvalidArgument('retrieval.rerank "llm" is built by open() from the llm section')
    from pi_hermes_memory.adapters.providers.jina_reranker import JinaReranker

    client = JinaReranker(
        base_url=settings.base_url,
        model=settings.model,
        api_key=settings.api_key,
        timeout_s=settings.timeout_ms / 1000,
        logger=logger,
    )
    return client, client.close


def build_embedder(
    settings: EmbeddingConfig, logger: Any
) -> tuple[Embedder, Callable[[], None] | None]:
    """The embedder of an enabled `embedding` section and what closes it: the
    OpenAI-compatible client, the local model (raises `LocalEmbedderUnavailable`), or the
    adapter named by import path (ADR 0057). The one place that builds it: `open()` and the
    server both call this."""
    if settings.provider is EmbeddingProvider.CUSTOM and settings.custom is not None:
        from pi_hermes_memory.adapters.providers.custom import load_adapter

        custom: Embedder = load_adapter("embedding.provider", settings.custom)
        return custom, _closer(custom)
    if settings.provider is EmbeddingProvider.LOCAL:
        from pi_hermes_memory.adapters.providers.local_embedder import LocalEmbedder

        return LocalEmbedder(), None
    from pi_hermes_memory.adapters.providers.openai_embedder import OpenAICompatibleEmbedder

    provider = OpenAICompatibleEmbedder(settings, logger=logger)
    return provider, provider.close


def _closer(adapter: object) -> Callable[[], None] | None:
    """A custom adapter's `close()`, when it has one (ADR 0057)."""
    close = getattr(adapter, "close", None)
    return close if callable(close) else None


def _session_history(
    config: Config,
    index: SessionIndex,
    source: SessionSource | None,
    clock: Clock,
    logger: Any,
    on_close: Callable[[], None] | None,
) -> SessionHistory:
    from pi_hermes_memory.history.features import SessionHistory
    from pi_hermes_memory.history.indexer import SessionIndexer
    from pi_hermes_memory.history.search import SessionSearchService

    settings = config.session_search
    if source is None:
        from pi_hermes_memory.adapters.files.session_files import (
            ClaudeCodeSessionFiles,
            PiSessionFiles,
            SessionSources,
        )

        source = PiSessionFiles(config.agent_root / "sessions")
        folder = settings.claude_code_dir  # Claude Code's transcripts (issue 30, ADR 0094)
        try:
            folder = None if folder is None else folder.expanduser()  # default `~/.claude`
        except RuntimeError:  # no home directory to expand `~` against: none to read
            folder = None
        if folder is not None:
            source = SessionSources(source, ClaudeCodeSessionFiles(folder / "projects"))
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


class _LazySessions:
    """Stands for the SQLite session index until a session call uses it: its module and the
    session history's classes load then, not in every process that opens the store (issue
    29, ADR 0099). Every attribute is the index's own once built."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._index: Any = None
        self._closed = False

    def _built(self) -> Any:
        if self._index is None:
            from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex

            self._index = SqliteSessionIndex(self._path)
            if self._closed:  # used after close: it answers as a closed index does
                self._index.close()
        return self._index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._built(), name)

    def as_port(self) -> SessionIndex:
        return cast("SessionIndex", self)

    def close(self) -> None:
        self._closed = True
        if self._index is not None:
            self._index.close()


class _LazyVectors:
    """Stands for the storage's vector store until embeddings turn out to be on (numpy loads
    only then)."""

    def __init__(self, storage: Any, backend: str) -> None:
        self._storage, self._backend = storage, backend

    def build(self) -> VectorStore:
        if self._backend == "postgres":
            from pi_hermes_memory.adapters.postgres.vectors import PgVectorStore

            return PgVectorStore(self._storage)
        from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore

        return SqliteVectorStore(self._storage)


def _postgres_store(
    config: Config,
    logger: Any,
    search_index: SearchIndex | None,
    vectors: VectorStore | _LazyVectors | None,
) -> tuple[Storage, SearchIndex, VectorStore | _LazyVectors]:
    """The shared PostgreSQL store of `config.storage` (ADR 0050), its search index and its
    vectors; a missing DSN is a ConfigError (falling back to a local store would split the
    team's memory), an unreachable server a StorageFailed naming it (never the DSN)."""
    from pi_hermes_memory.errors import ConfigError

    settings = config.storage
    if settings.problem is not None or settings.dsn is None:
        raise ConfigError(settings.problem or "storage.dsnEnv names no DSN")
    try:
        from pi_hermes_memory.adapters.postgres.search import PgSearchIndex
        from pi_hermes_memory.adapters.postgres.storage import PgStorage
    except ImportError as exc:
        raise ConfigError(
            "storage.backend is 'postgres' but psycopg is not installed: "
            "pip install 'pi-hermes-memory[postgres]'"
        ) from exc
    storage = PgStorage(settings.dsn, max_connections=settings.max_connections, logger=logger)
    try:
        _refuse_an_uncopied_local_store(config, storage)
    except BaseException:
        storage.close()
        raise
    return (
        storage,
        search_index or PgSearchIndex(storage),
        vectors if vectors is not None else _LazyVectors(storage, "postgres"),
    )


def _refuse_an_uncopied_local_store(config: Config, storage: Any) -> None:
    """An empty shared store opened on a host whose local store holds a history: opening would
    import this host's Markdown files into it as hand edits (new ids, no history), and a later
    `migrate --to postgres` could then copy nothing ("a different history"). Refused, with
    the step that comes first (ADR 0065)."""
    from pi_hermes_memory.adapters.sqlite.read_only import local_event_count

    local = local_event_count(config.db_path)
    if not local:
        return
    with storage.snapshot() as uow:
        if uow.journal.streams(""):
            return  # a team store already in use: this host's files merge into it
    raise StorageFailed(
        f"nothing was opened: the PostgreSQL store is empty and this host's local store "
        f"({config.db_path}) holds a history that was not copied to it. Run "
        "`pi-hermes-memory migrate --to postgres` first (it copies the local store, whatever "
        "storage.backend says), then retry; opening it now would import the Markdown files "
        "as new entries without their history",
        path=config.db_path,
    )


def _embeddings(
    config: Config,
    embedder: Embedder | None,
    store: VectorStore | _LazyVectors | None,
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
    if embedder is None:
        from pi_hermes_memory.errors import LocalEmbedderUnavailable

        try:
            embedder, on_close = build_embedder(config.embedding, logger)
        except LocalEmbedderUnavailable as exc:
            warnings.append(f"embedding.provider: {exc}; embeddings are off")
            return None
    if isinstance(store, _LazyVectors):
        store = store.build()
    from pi_hermes_memory.search.embedding import EmbeddingService

    return EmbeddingService(embedder=embedder, store=store, logger=logger, on_close=on_close)


if TYPE_CHECKING:
    from pi_hermes_memory.doctor.report import DoctorReport


def diagnose(
    *,
    agent_root: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    project: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> DoctorReport:
    """The read-only doctor's report on the configured store, without opening it (ADR 0036):
    nothing is written, imported, rendered or embedded. Raises `DoctorFailed` or
    `ConfigError` when it cannot run."""
    from pi_hermes_memory.adapters.doctor import diagnose as run

    return run(agent_root=agent_root, cwd=cwd, project=project, environ=environ)


def diagnose_config(config: Config, warnings: Iterable[str] = ()) -> DoctorReport:
    """`diagnose` for an already loaded configuration (`Memory.doctor()`)."""
    from pi_hermes_memory.adapters.doctor import diagnose_config as run

    return run(config, list(warnings))
