"""Gather the doctor's facts without the write path (ADR 0036) and build its `DoctorReport`.

Reached through `pi_hermes_memory.bootstrap.diagnose` / `Memory.doctor()` and the CLI.

Nothing here writes: sessions.db is read as one snapshot by `adapters.sqlite.doctor_reader`
(no `-wal`/`-shm` created), the journal is folded in memory, hand edits are found by importing
them into an in-memory copy of the journal (`adapters.read_only`, whose Markdown view never
writes and takes no lock), session files and skill folders are only listed and read, and no
provider is built or called (no vector backfill). The migration of an old layout, the
creation of a missing database or file and every render are left to the next `open`.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_hermes_memory.config.settings import Config, EmbeddingProvider
from pi_hermes_memory.config.storage import StorageBackend
from pi_hermes_memory.doctor.report import (
    DoctorReport,
    EmbeddingState,
    ModelCoverage,
    PathsState,
    SessionState,
    SkillsState,
    TargetState,
    near_duplicates_section,
)
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import DoctorFailed, HermesMemoryError

__all__ = ["current_model", "diagnose", "diagnose_config"]


def diagnose(
    *,
    agent_root: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    project: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> DoctorReport:
    """The doctor's report on the store the configuration names. Raises `DoctorFailed` (or
    `ConfigError`) when it cannot run: the agent root or the configuration file is not
    readable."""
    from pi_hermes_memory.adapters.files.config_file import load_config

    env = dict(os.environ if environ is None else environ)
    if agent_root is not None:
        env["PI_CODING_AGENT_DIR"] = os.fspath(agent_root)
    config, warnings = load_config(
        environ=env, cwd=Path(cwd if cwd is not None else os.getcwd()), project_override=project
    )
    return diagnose_config(config, [f"{w.field}: {w.message}" for w in warnings])


def current_model(config: Config) -> str | None:
    """The vector identity rows must carry to count as current, without building a provider."""
    embedding = config.embedding
    if embedding.provider is EmbeddingProvider.OPENAI_COMPATIBLE:
        return embedding.model_id
    if embedding.provider is EmbeddingProvider.LOCAL:
        import importlib.metadata

        from pi_hermes_memory.adapters.providers.local_embedder import MODEL, PACKAGE

        try:
            version = importlib.metadata.version(PACKAGE)
        except importlib.metadata.PackageNotFoundError:
            return None
        return f"local/{MODEL}@{PACKAGE}-{'.'.join(version.split('.')[:2])}"
    return None


def diagnose_config(config: Config, warnings: list[str] | tuple[str, ...]) -> DoctorReport:
    """The report for an already loaded configuration (`Memory.doctor()`)."""
    started = time.perf_counter()
    if config.storage.backend is StorageBackend.POSTGRES:  # ADR 0050
        raise DoctorFailed(
            "doctor checks the local SQLite store; this store is on PostgreSQL "
            "(storage.backend), whose server has its own checks (pg_amcheck, backups)"
        )
    _check_readable(config)
    problems: list[str] = []
    notes: list[str] = []
    if config.storage.problem is not None:  # `open` refuses this store (no fallback)
        problems.append(config.storage.problem)
    if config.location_unknown is not None:  # `open` refuses every write (ADR 0065)
        problems.append(f"{config.location_unknown}; until then writes are refused")
    problems.extend(warnings)  # "field: message", as `open` reports them
    paths = _paths(config, warnings)
    if paths.same_root:
        problems.append(paths.same_root)
    e = paths.embedding
    if e.off_reason == "api-key-missing":
        problems.append(
            f"embedding.apiKeyEnv names {e.api_key_env}, which is unset or empty: embeddings "
            "are off"
        )
    elif e.off_reason == "api-key-env-unset":
        problems.append("embedding.apiKeyEnv is not set: embeddings are off")
    elif e.off_reason == "invalid-config":
        problems.append("the embedding section is invalid: embeddings are off")

    facts = _database(config, e.model, problems, notes)
    _event_log(config, problems, sound=bool(facts))
    targets, unattributed = _documents(config, facts, problems, notes)
    if unattributed:
        problems.append(
            f"{unattributed} project entr{'y' if unattributed == 1 else 'ies'} without a "
            "project= attribution: kept in Markdown, left out of search"
        )
    for t in targets:
        if not t.consistent:
            problems.append(
                f"{t.target}: the SQLite mirror differs from the journal (missing {t.missing}, "
                f"extra {t.extra}, different {t.different}); run sync-markdown"
            )
        if t.pending_hand_edit_events:
            notes.append(
                f"{t.target}: a hand edit of the Markdown file is pending "
                f"({t.pending_hand_edit_events} event(s)); the next open or sync-markdown "
                "imports it"
            )
    coverage_rows = sum(t.sqlite_active for t in targets)
    models: Counter[str] = Counter()
    for per_model in facts.get("vectors", {}).values():
        models.update(per_model)
    coverage = tuple(
        ModelCoverage(model=m, rows=n, current=m == e.model) for m, n in sorted(models.items())
    )
    if e.model is not None:
        covered = models.get(e.model, 0)
        if covered < coverage_rows:
            notes.append(
                f"{coverage_rows - covered} active row(s) have no vector of {e.model}; search "
                "fills them in as it meets them"
            )
    sessions = _sessions(config, facts)
    if sessions.stale or sessions.gone:
        notes.append(
            f"session index: {sessions.stale} file(s) to index, {sessions.gone} gone; "
            "index-sessions brings it up to date"
        )
    skills = _skills(config, facts)
    problems.extend(f"skill: unreadable {u}" for u in skills.unreadable)
    problems.extend(f"skill: {s}" for s in skills.shadowed)
    near = _near(facts)
    return DoctorReport(
        paths=paths,
        targets=targets,
        unattributed=unattributed,
        coverage_rows=coverage_rows,
        coverage=coverage,
        sessions=sessions,
        skills=skills,
        near_duplicates=near,
        problems=tuple(problems),
        notes=tuple(notes),
        seconds=time.perf_counter() - started,
    )


def _check_readable(config: Config) -> None:
    root = config.agent_root
    if not root.is_dir() or not os.access(root, os.R_OK | os.X_OK):
        raise DoctorFailed(f"the agent root {root} is not a readable folder")
    path = config.config_path
    if path.exists() and (not path.is_file() or not os.access(path, os.R_OK)):
        what = "is a folder" if path.is_dir() else "cannot be read"
        raise DoctorFailed(f"the configuration file {path} {what}")


def _paths(config: Config, warnings: list[str] | tuple[str, ...]) -> PathsState:
    from pi_hermes_memory.adapters.files.config_file import physical_path
    from pi_hermes_memory.adapters.markdown.store import MarkdownFiles

    same: str | None = None
    if physical_path(config.memory_dir) == physical_path(config.projects_memory_dir):
        same = (
            f"memoryDir and projectsMemoryDir are one physical folder "
            f"({physical_path(config.memory_dir)}); point them at separate folders"
        )
    else:
        same = MarkdownFiles(config.memory_dir, config.projects_memory_dir).layout_problem()
    emb = config.embedding
    return PathsState(
        agent_root=str(config.agent_root),
        config_file=str(config.config_path),
        config_file_exists=config.config_path.exists(),
        memory_dir=str(config.memory_dir),
        projects_memory_dir=str(config.projects_memory_dir),
        database=str(config.db_path),
        project=config.project,
        same_root=same,
        warnings=tuple(warnings),
        embedding=EmbeddingState(
            provider=emb.provider.value,
            requested=emb.requested_provider.value,
            model=current_model(config),
            api_key_env=emb.api_key_env,
            off_reason=None if emb.disabled_reason is None else emb.disabled_reason.value,
        ),
    )


def _fold_journal(events: list[Any]) -> list[MemoryDocument]:
    by_stream: dict[str, list[Any]] = {}
    for event in events:
        by_stream.setdefault(event.stream, []).append(event)
    return [fold(MemoryDocument.empty(t), by_stream.get(stream_for(t), [])) for t in Target]


def _database(
    config: Config, model: str | None, problems: list[str], notes: list[str]
) -> dict[str, Any]:
    """Everything read from sessions.db, in one snapshot; {} when there is none."""
    import apsw
    from pi_hermes_memory.adapters.sqlite.doctor_reader import open_snapshot

    db = config.db_path
    if not db.exists():
        notes.append(f"{db} does not exist yet: the next open creates it from the Markdown files")
        return {}
    try:
        with open_snapshot(db) as snap:
            events = snap.events()
            documents = _fold_journal(events)
            facts: dict[str, Any] = {
                "events": events,
                "store_id": snap.store_id(),
                "mirror": snap.mirror_diff(documents),
                "vectors": snap.vector_models(),
                "scan": snap.scan_rows(model),
                "session_files": snap.session_files(),
                "hidden": snap.hidden_skills(),
                "size": snap.size_bytes(),
            }
            if not snap.current_schema:
                notes.append(
                    f"{db.name} has schema version {snap.schema_version}: the next open migrates it"
                )
            return facts
    except (apsw.Error, HermesMemoryError, OSError) as exc:
        problems.append(f"{db} cannot be read ({exc}); see `pi-hermes-memory recover`")
        return {}


#: damaged lines of the event log the report names one by one
_LOG_PROBLEMS_SHOWN = 5


def _event_log(config: Config, problems: list[str], *, sound: bool) -> None:
    """The event log is what rebuilds a lost sessions.db (ADR 0023): a damaged line there is
    silent while the database is sound, and costs the history of its stream once the database
    is lost too. Read only (no lock, no cut of a torn last line, which is no damage)."""
    from pi_hermes_memory.adapters.sqlite.doctor_reader import event_log_problems

    try:
        found = event_log_problems(config.db_path)
    except OSError as exc:
        problems.append(f"the event log beside {config.db_path} cannot be read ({exc})")
        return
    if not found:
        return
    more = len(found) - _LOG_PROBLEMS_SHOWN
    listed = "; ".join(found[:_LOG_PROBLEMS_SHOWN]) + (f"; and {more:,} more" if more > 0 else "")
    fix = (
        f"{config.db_path.name} still holds every event: `pi-hermes-memory recover` writes the "
        "log anew from it (the old log is kept beside it)"
        if sound
        else "a database rebuilt from this log lacks those events"
    )
    problems.append(f"event log: {listed}. {fix}")


def _documents(
    config: Config, facts: dict[str, Any], problems: list[str], notes: list[str]
) -> tuple[tuple[TargetState, ...], int]:
    """Per target: the Markdown view (hand edits imported into an in-memory copy of the
    journal, never into the store) against the mirror's rows."""
    from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
    from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
    from pi_hermes_memory.adapters.sqlite.read_only import ReadOnlyMarkdown, ReadOnlyStorage
    from pi_hermes_memory.adapters.system import SystemClock, UlidFactory
    from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
    from pi_hermes_memory.domain.memory.model import GLOBAL_NAMESPACE
    from pi_hermes_memory.domain.memory.scope import SessionScope
    from pi_hermes_memory.log import library_logger
    from pi_hermes_memory.memory.service import MemoryService, MemorySettings

    storage = ReadOnlyStorage(facts.get("events", []), facts.get("store_id"))
    files = ReadOnlyMarkdown(MarkdownFiles(config.memory_dir, config.projects_memory_dir))
    service = MemoryService(
        storage=storage,
        markdown=files,
        fmt=MarkdownFormat(),
        clock=SystemClock(),
        ids=UlidFactory(),
        settings=MemorySettings(
            scope=SessionScope(
                project=config.project,
                sharing=True,
                access=frozenset({GLOBAL_NAMESPACE}),
            ),
            limits=dict.fromkeys(Target, 10**9),
            overflow=OverflowStrategy.REJECT,
        ),
        logger=library_logger(),
    )

    def step(_uow: Any, docs: Any, imported: dict[Target, int]) -> tuple[Any, dict[Target, int]]:
        return docs, imported

    try:
        (docs, imported), warnings = service.maintain(step)
    except (HermesMemoryError, OSError) as exc:  # a Markdown file beyond reading at all
        problems.append(f"the Markdown files cannot be read: {exc}")
        docs, imported, warnings = {}, {}, []
    problems.extend(f"markdown: {w}" for w in warnings)
    mirror = facts.get("mirror", {})
    unattributed = 0
    states = []
    stored = {e.id for d in _fold_journal(facts.get("events", [])) for e in d.active}
    for t in Target:
        doc = docs.get(t)
        active = list(doc.active) if doc is not None else []
        problems.extend(_flagged(config, t, active, stored))
        if t is Target.PROJECT:
            unattributed = sum(1 for entry in active if entry.project is None)
        counts = mirror.get(t.value, {})
        states.append(
            TargetState(
                target=t.value,
                markdown_active=len(active),
                sqlite_active=counts.get("active", 0),
                superseded=counts.get("superseded", 0),
                missing=counts.get("missing", 0),
                extra=counts.get("extra", 0),
                different=counts.get("different", 0),
                pending_hand_edit_events=imported.get(t, 0),
            )
        )
    return tuple(states), unattributed


def _flagged(config: Config, target: Target, active: list[Any], stored: set[str]) -> list[str]:
    """One problem per active entry the content scan flagged (a hand edit holding a key, say):
    kept out of search and prompts, yet still in the journal and the Markdown file (ADR 0065).
    The scanner's reason is named, never the text. `stored`: the ids the journal holds (an
    entry of a pending hand edit has no id yet)."""
    from pi_hermes_memory.adapters.markdown.store import MarkdownFiles

    path = MarkdownFiles(config.memory_dir, config.projects_memory_dir).path_for(target)
    problems = []
    for entry in active:
        if not entry.flagged:
            continue
        reason = entry.flagged.split(". ")[0].removeprefix("Refused: ")  # the finding, no advice
        if entry.id not in stored:
            problems.append(
                f"{target.value}: a pending hand edit of {path} holds text that fails the "
                f"content scan ({reason}); remove it from the file, or run "
                "`pi-hermes-memory sync-markdown` and then the doctor again for the id to purge"
            )
            continue
        project = f" --project {entry.project}" if entry.project else ""
        problems.append(
            f"{target.value}: entry {entry.id} in {path} fails the content scan "
            f"({reason}) and is kept out of search; erase it and its history with "
            f"`pi-hermes-memory purge {entry.id} --yes{project}`, or fix its text in the file"
        )
    return problems


def _sessions(config: Config, facts: dict[str, Any]) -> SessionState:
    from pi_hermes_memory.adapters.files.session_files import PiSessionFiles
    from pi_hermes_memory.domain.history.transcripts import FileChange, classify

    root = config.agent_root / "sessions"
    stored = facts.get("session_files", {})
    listed = {f.path: f for f in PiSessionFiles(root).files()} if root.is_dir() else {}
    stale = sum(
        1 for path, f in listed.items() if classify(f, stored.get(path)) is not FileChange.UNCHANGED
    )
    return SessionState(
        root=str(root),
        files=len(listed),
        indexed=len(stored),
        stale=stale,
        gone=sum(1 for path in stored if path not in listed and not os.path.exists(path)),
        database_bytes=facts.get("size", 0),
    )


def _skills(config: Config, facts: dict[str, Any]) -> SkillsState:
    from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
    from pi_hermes_memory.domain.skills.skill_md import parse_skill

    folders = SkillFolders(
        global_root=config.skill_governance.scopes.global_skills_dir,
        project_root=config.project_skills_root,
    )
    ids = list(folders.slugs(None))
    root = config.project_skills_root
    try:
        projects = sorted(p.name for p in root.iterdir() if (p / "skills").is_dir())
    except OSError:
        projects = []
    for project in projects:
        ids.extend(i for i in folders.slugs(project) if i.startswith("project:"))
    unreadable: list[str] = []
    for skill_id in ids:
        path = folders.folder(f"skill:{skill_id}") / "SKILL.md"
        try:
            parse_skill(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, HermesMemoryError) as exc:
            unreadable.append(f"{path}: {exc}")
    host = config.agent_root / "skills"
    shadowed = [
        f"global:{slug} is shadowed by the host skill {host / slug / 'SKILL.md'}"
        for slug in (i.removeprefix("global:") for i in ids if i.startswith("global:"))
        if (host / slug / "SKILL.md").exists()
    ]
    return SkillsState(
        skills=len(ids),
        unreadable=tuple(unreadable),
        shadowed=tuple(shadowed),
        hidden=dict(facts.get("hidden", {})),
    )


def _near(facts: dict[str, Any]) -> Any:
    from pi_hermes_memory.adapters.sqlite.vectors import from_blob
    from pi_hermes_memory.doctor.cross_scope import GLOBAL_SCOPE, ScanRow, cross_scope_pairs

    started = time.perf_counter()
    rows: list[ScanRow] = []
    for entry_id, target, project, namespace, text, blob in facts.get("scan", []):
        if target == Target.MEMORY.value:
            if namespace is not None:
                continue  # agent:/custom: namespaces are neither global nor a project
            scope = GLOBAL_SCOPE
        elif project is None:
            continue  # unattributed: reported above
        else:
            scope = f"project:{project}"
        vector = from_blob(blob) if blob else None
        rows.append(ScanRow(entry_id=entry_id, scope=scope, text=text, vector=vector))
    pairs = cross_scope_pairs(rows)
    sizes = Counter(r.scope for r in rows)
    return near_duplicates_section(
        pairs,
        rows=len(rows),
        rows_with_vector=sum(1 for r in rows if r.vector is not None),
        scope_sizes=list(sizes.values()),
        seconds=time.perf_counter() - started,
    )
