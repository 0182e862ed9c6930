"""The public facade: `Memory`, returned by `pi_hermes_memory.open(...)`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.api_guard import (
    guard_closed,
    need_flag,
    need_int,
    need_mapping,
    need_sequence,
    need_text,
)
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory.model import (
    GLOBAL_NAMESPACE,
    FailureCategory,
    MemoryEntry,
    MemoryKind,
    Target,
    importance_problem,
)
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import ArgumentError, HermesMemoryError, InvalidArgument, StorageFailed
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.memory.service import MemoryService, entry_view
from pi_hermes_memory.memory.write_side import by_id, commands
from pi_hermes_memory.ports.search import DEFAULT_LIMIT
from pi_hermes_memory.ports.store import Clock, IdFactory, SearchIndex, Storage
from pi_hermes_memory.search.memory_search import SearchResult, SearchService

# numpy loads only when embeddings are on; session search, insights and sync when a command
# uses them (issue 29, ADR 0080)
if TYPE_CHECKING:
    # the write side's commands, look-ups by id, purge and re-embedding: imported on first use
    # (commands and by_id through `memory.write_side`), so that open() and a search do not load
    # them (issue 29, ADR 0099, ADR 0108)
    from pi_hermes_memory.doctor.report import DoctorReport
    from pi_hermes_memory.domain.memory.commands import (
        AddMemory,
        MemoryCommand,
        MoveDirection,
        RemoveMemory,
        ReplaceMemory,
    )
    from pi_hermes_memory.history.features import SessionHistory
    from pi_hermes_memory.history.indexer import IndexProgress, IndexReport, RecordResult
    from pi_hermes_memory.history.search import AnchorResult, SessionSearchResult
    from pi_hermes_memory.knowledge.service import KnowledgeBase
    from pi_hermes_memory.learning.consolidation import ConsolidationResult, Consolidator, TryLock
    from pi_hermes_memory.learning.llm import LlmStatus
    from pi_hermes_memory.lifecycle.prompt_context import ContextPreview
    from pi_hermes_memory.lifecycle.session import AgentSession
    from pi_hermes_memory.memory.insights import Insights, ProjectOverview
    from pi_hermes_memory.memory.purging import PurgeResult
    from pi_hermes_memory.memory.sync import SyncReport
    from pi_hermes_memory.ports.llm import Completer
    from pi_hermes_memory.ports.vectors import ReembedProgress, ReembedReport
    from pi_hermes_memory.results import BatchResult, EntryView, ToolOutcome, WriteResult
    from pi_hermes_memory.search.embedding import EmbeddingService
    from pi_hermes_memory.search.hybrid import HybridSettings
    from pi_hermes_memory.search.retrieval import Reranker
    from pi_hermes_memory.skills.governance.service import SkillGovernance
    from pi_hermes_memory.skills.service import SkillService
    from pi_hermes_memory.skills.stats_tool import SkillStatsReport
    from pi_hermes_memory.tools.registry import MemoryCall, ToolDefinition, ToolResult

__all__ = ["Memory"]

_OFF_REASONS = {
    "provider-off": "embedding.provider is 'off' (the default); set it to 'local' (a model "
    "on this machine, the [local] extra) or 'openai-compatible' (an embeddings API)",
    "invalid-config": "the embedding section of the configuration is invalid (see the warnings)",
    "api-key-env-unset": "embedding.apiKeyEnv does not name the environment variable holding "
    "the API key",
    "api-key-missing": "the environment variable named by embedding.apiKeyEnv is unset or empty",
}


def _target(value: Target | str) -> Target:
    try:
        return Target(value)
    except ValueError:
        raise InvalidArgument(
            f"target must be one of {', '.join(t.value for t in Target)}; got {shown(value)}"
        ) from None


def _namespace(scope: str | None) -> str | None:
    """The domain's namespace for a public scope name: "global" (or None) is the shared layer."""
    return None if scope in (None, GLOBAL_NAMESPACE) else scope


def _category(value: FailureCategory | str | None) -> FailureCategory | None:
    if value is None:
        return None
    try:
        return FailureCategory(value)
    except ValueError:
        raise InvalidArgument(
            f"category must be one of {', '.join(c.value for c in FailureCategory)}; "
            f"got {shown(value)}"
        ) from None


def _importance(value: float | None) -> float | None:
    if value is None:
        return None
    problem = importance_problem(value)
    if problem is not None:
        raise InvalidArgument(f"{problem}; got {shown(value)}")
    return float(value)


def _kind(value: MemoryKind | str | None) -> MemoryKind | None:
    if value is None:
        return None
    try:
        return MemoryKind(value)
    except ValueError:
        raise InvalidArgument(
            f"kind must be one of {', '.join(k.value for k in MemoryKind)}; got {shown(value)}"
        ) from None


@guard_closed
class Memory:
    """Durable agent memory for one session (one current project).

    Methods return typed results; `call_tool` is the JSON boundary for agent frameworks.
    After `close()` every method and property raises `StoreClosed`; an argument of the wrong
    type raises `InvalidArgument` (`api_guard.py`).
    """

    def __init__(
        self,
        *,
        service: MemoryService,
        storage: Storage,
        clock: Clock,
        ids: IdFactory,
        config: Any = None,
        warnings: Sequence[str] = (),
        logger: Any = None,
        search_index: SearchIndex | None = None,
        hybrid: HybridSettings | None = None,
        reranker: Reranker | None = None,
        on_close: Callable[[], None] | None = None,
        sessions: SessionHistory | Callable[[], SessionHistory] | None = None,
        read_only: StorageFailed | None = None,
        write_guard: Callable[[Iterable[Target]], None] | None = None,
        knowledge: Callable[[], KnowledgeBase] | None = None,
    ) -> None:
        self._closed = False
        #: builds the knowledge base on first use (ADR 0048)
        self._make_knowledge = knowledge
        self._knowledge: KnowledgeBase | None = None
        #: session history, or a function that builds it on first use (ADR 0038)
        self._sessions: SessionHistory | None = None
        self._make_sessions: Callable[[], SessionHistory] | None = None
        if callable(sessions):
            self._make_sessions = sessions
        else:
            self._sessions = sessions
        self._skills: SkillService | None = None
        #: builds the skill service and the governance on first use (ADR 0038)
        self._make_skills: Callable[[], SkillService] | None = None
        self._make_governance: Callable[[], SkillGovernance] | None = None
        self._llm: Completer | None = None
        self._llm_off: LlmStatus | None = None
        #: the status of an LLM the configuration turns off, read on first use (ADR 0110)
        self._llm_off_later: Callable[[], LlmStatus] | None = None
        self._consolidator: Consolidator | None = None
        self._governance: SkillGovernance | None = None
        #: why this store is read-only (sessions.db damaged or unwritable, ADR 0023), or None
        self.read_only = read_only
        self._write_guard = write_guard
        self._on_close = on_close
        self._service = service
        self._storage = storage
        self._clock = clock
        self._ids = ids
        self.config = config
        self.warnings: tuple[str, ...] = tuple(warnings)
        self._log = logger or library_logger()
        self._search = (
            None
            if search_index is None
            else SearchService(
                service=service,
                index=search_index,
                logger=self._log,
                clock=clock,
                hybrid=hybrid,
                reranker=reranker,
                min_score=getattr(getattr(config, "retrieval", None), "min_score", None),
            )
        )

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Render what is pending and close the store; a second call does nothing."""
        import sys

        if self._closed:
            return
        self._closed = True

        lifecycle = sys.modules.get("pi_hermes_memory.lifecycle.session")
        if lifecycle is not None and not lifecycle.drain(self):  # loaded only when used
            self._log.warning("review.unfinished_at_close")
        try:
            self._flush_at_close()
            if self._service.embeddings is not None:
                self._service.embeddings.close()
            if self._on_close is not None:
                self._on_close()
            if self._sessions is not None:
                self._sessions.close()
            if self._knowledge is not None:
                self._knowledge.close()
        finally:
            self._storage.close()

    def _flush_at_close(self) -> None:
        """Render the Markdown files this process left pending (ADR 0042). A failure is logged,
        never raised: the journal holds every write and the next open renders them."""
        if not self._service.pending_renders:
            return
        try:
            self._service.flush()
        except (HermesMemoryError, OSError) as exc:
            self._log.warning("markdown.flush_failed_at_close", error=str(exc))

    def flush(self) -> tuple[str, ...]:
        """Render now every Markdown file whose render lags this process's writes (a file of
        at least 1 MiB is rendered at most once a second while a process writes, ADR 0042);
        a hand edit made meanwhile is merged first. Returns warnings (a file that could not be
        written); `pending_renders` names what is still pending (also a file a person saved
        during the render: their save is kept and merged by the next flush, ADR 0034)."""
        return tuple(self._service.flush())

    @property
    def pending_renders(self) -> tuple[str, ...]:
        """The targets whose Markdown file lags the journal by this process's writes (ADR
        0042): every write is in SQLite (search, list and other processes see it); the file
        follows within the render interval, at `flush`/`close`, or at the next open."""
        return tuple(t.value for t in self._service.pending_renders)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def project(self) -> str | None:
        return self._service.settings.scope.project

    @property
    def embeddings(self) -> EmbeddingService | None:
        """The row vectors and the embedding provider (ADR 0015); None when embeddings are off
        (see `config.embedding_disabled_reason`)."""
        return self._service.embeddings

    def _attach_llm_off(self, status: Callable[[], LlmStatus]) -> None:
        """Set by `open_memory` when the configuration turns the LLM off (`llm.provider` off,
        whatever else the section says): the off completer and `status()`, why it is off, are
        built when first read, so a process that never asks loads no LLM module (ADR 0110)."""
        self._llm, self._llm_off, self._llm_off_later = None, None, status
        self._consolidator = None

    def _off_llm(self) -> None:
        """Attach the LLM `_attach_llm_off` left for later."""
        status, self._llm_off_later = self._llm_off_later, None
        if status is not None:
            from pi_hermes_memory.learning.llm import OffCompleter

            off = status()
            self._attach_llm(OffCompleter(off), off)

    def _attach_llm(
        self, completer: Completer, off: LlmStatus | None, *, try_lock: TryLock | None = None
    ) -> None:
        """Set by `open_memory`: the LLM of background learning (issue 12) and, when it is
        off, the status saying why."""
        self._llm_off_later = None
        self._llm = completer
        self._llm_off = off
        self._consolidator = None
        if off is None and self.config is not None and try_lock is not None:
            from pi_hermes_memory.learning.consolidation import Consolidator

            self._consolidator = Consolidator(
                service=self._service,
                completer=completer,
                clock=self._clock,
                ids=self._ids,
                lock_dir=self.config.memory_dir,
                try_lock=try_lock,
                timeout=self.config.consolidation_timeout_ms / 1000,
                max_removed_share=self.config.consolidation_max_removed_share,
                record=self._record_consolidation,
            )
            # auto-consolidate now asks for a consolidation instead of refusing (issue 12 §4)
            self._service.settings = attrs.evolve(
                self._service.settings, consolidation_available=True
            )

    def _record_consolidation(self, result: ConsolidationResult) -> None:
        """Keep the outcome of a consolidation (applied, or refused with its reason) in
        review-status.json, where `review-status` and `AgentSession.review_status()` show it
        (ADR 0062). Never fails the consolidation."""
        from pi_hermes_memory.learning.review import status_path, write_consolidation_status

        path = status_path(self)
        if path is None or self.read_only is not None or not path.parent.is_dir():
            return
        outcome = {
            "at": self._clock.now().isoformat(timespec="seconds"),
            **result.as_dict(),
            "status": result.status.value,
        }
        try:
            write_consolidation_status(path, outcome)
        except OSError:
            self._log.warning("consolidation.status_not_saved", exc_info=True)

    @property
    def llm(self) -> Completer | None:
        """The LLM port (``pi_hermes_memory.learning.llm.Completer``); with the LLM off, a completer
        whose every call fails with reason ``off`` and says why (None before `open_memory`
        attached one)."""
        self._off_llm()
        return self._llm

    @property
    def llm_off(self) -> LlmStatus | None:
        """Why the LLM is off (its ``message`` says it for people), or None when it is on."""
        self._off_llm()
        return self._llm_off

    def session(self, session_id: str | None = None) -> AgentSession:
        """The lifecycle of one agent conversation: feed it messages, tool calls, compaction
        and shutdown; it runs background review, flush and correction capture
        (``pi_hermes_memory.lifecycle.session.AgentSession``)."""
        need_text("session_id", session_id, optional=True)
        from pi_hermes_memory.lifecycle.session import AgentSession

        return AgentSession(self, session_id=session_id, logger=self._log)

    def _attach_skills(self, skills: SkillService | Callable[[], SkillService]) -> None:
        """Set by `open_memory`: the skill service of this session (ADR 0030), or a function
        that builds it on first use (a call that never touches skills does not load them)."""
        if callable(skills):
            self._skills, self._make_skills = None, skills
        else:
            self._skills, self._make_skills = skills, None

    def _skill_service(self) -> SkillService | None:
        if self._make_skills is not None:
            self._skills, self._make_skills = self._make_skills(), None
        return self._skills

    def _skill_governance(self) -> SkillGovernance | None:
        if self._make_governance is not None:
            self._governance, self._make_governance = self._make_governance(), None
        return self._governance

    @property
    def skills(self) -> SkillService:
        """Procedural skills: create, view, use, patch, update, delete, support files,
        visibility and discovery (``pi_hermes_memory.skills.service.SkillService``)."""
        skills = self._skill_service()
        if skills is None:
            raise InvalidArgument("skills are not available on this store")
        return skills

    def _attach_governance(
        self, governance: SkillGovernance | Callable[[], SkillGovernance]
    ) -> None:
        """Set by `open_memory`: the skill governance of this session (ADR 0031), or a
        function that builds it on first use."""
        if callable(governance):
            self._governance, self._make_governance = None, governance
        else:
            self._governance, self._make_governance = governance, None

    @property
    def skill_governance(self) -> SkillGovernance:
        """Skill governance: status, curate, explain, promote, demote, restore, clear,
        reload (``pi_hermes_memory.skills.governance.service.SkillGovernance``)."""
        governance = self._skill_governance()
        if governance is None:
            raise InvalidArgument("skill governance is not available on this store")
        return governance

    def interview(self, answers: Mapping[str, str] | None = None) -> ToolOutcome:
        """The interview (``pi_hermes_memory.learning.interview.interview``): no answers, the
        questions;
        answers keyed by question id, one USER.md entry each through the memory tool."""
        from pi_hermes_memory.results import ToolOutcome

        need_mapping("answers", answers, optional=True)
        from pi_hermes_memory.learning.interview import interview

        return ToolOutcome(interview(self, answers))

    def learn_skill(self, source: str, *, name: str | None = None) -> ToolOutcome:
        """One project skill learned from `source` by the LLM, created through the skill tool
        (``pi_hermes_memory.learning.interview.learn_skill``); with the LLM off, nothing is
        written."""
        from pi_hermes_memory.results import ToolOutcome

        need_text("source", source)
        need_text("name", name, optional=True)
        from pi_hermes_memory.learning.interview import learn_skill

        return ToolOutcome(learn_skill(self, source, name=name))

    def skill_stats(
        self,
        since_days: int | None = None,
        skill_id: str | None = None,
        *,
        project: str | None = None,
    ) -> SkillStatsReport:
        """Read-only skill statistics (the `memory_skill_stats` tool): per skill, the loads
        (offered by discovery; never evidence that it worked) and the real uses over the last
        `since_days` UTC days (None: all time) in `project` (None: every project), its
        governance record and its promotion verdict. Raises `InvalidArgument` for a bad option
        and `HermesMemoryError` when the store keeps no skill statistics."""
        from pi_hermes_memory.domain.skills.promotion import PromotionPolicy
        from pi_hermes_memory.skills.stats import promotion_policy
        from pi_hermes_memory.skills.stats_tool import skill_stats

        governance = getattr(self.config, "skill_governance", None)
        curated = self._skill_governance()
        if curated is not None:  # with the project's curated words (ADR 0031)
            policy = curated.policy()
        elif governance is not None:
            policy = promotion_policy(governance)
        else:
            policy = PromotionPolicy()
        return skill_stats(
            self.skills,
            policy,
            now=self._clock.now(),
            since_days=since_days,
            skill_id=skill_id,
            project=project,
        )

    def _writable(self, *targets: Target) -> None:
        """Refuse a write before anything is decided or committed (ADR 0023): the store is
        read-only, or a document it would change is a read-only file."""
        if self.read_only is not None:
            reason = str(self.read_only)
            if "nothing was written" not in reason:
                reason = f"nothing was written: {reason}"
            raise type(self.read_only)(reason, path=self.read_only.path)
        if self._write_guard is not None:
            self._write_guard(targets)

    # -- typed API ------------------------------------------------------------------------

    def add(
        self,
        content: str,
        *,
        target: Target | str = Target.MEMORY,
        category: FailureCategory | str | None = None,
        force: bool = False,
        scope: str | None = None,
        importance: float | None = None,
        kind: MemoryKind | str | None = None,
    ) -> WriteResult:
        """Save `content`. `scope`: global (default), agent:<id>, custom:<name> (memory) or
        user:<id> (user), within this session's access map (ADR 0014). `importance` (0..1)
        and `kind` (preference, fact, decision, entity, other): the second seed's fields
        (ADR 0045), unset by default."""
        need_text("content", content)
        need_flag("force", force)
        need_text("scope", scope, optional=True)
        command = attrs.evolve(
            self._add(content, target, category, force, scope),
            importance=_importance(importance),
            kind=_kind(kind),
        )
        self._writable(command.target)
        return self._execute(command)

    def replace(
        self,
        old_text: str,
        content: str,
        *,
        target: Target | str = Target.MEMORY,
        category: FailureCategory | str | None = None,
        scope: str | None = None,
    ) -> WriteResult:
        need_text("old_text", old_text)
        need_text("content", content)
        need_text("scope", scope, optional=True)
        command = self._replace(old_text, content, target, category, scope)
        self._writable(command.target)
        return self._service.execute(command)

    def remove(
        self, old_text: str, *, target: Target | str = Target.MEMORY, scope: str | None = None
    ) -> WriteResult:
        need_text("old_text", old_text)
        need_text("scope", scope, optional=True)
        command = self._remove(old_text, target, scope)
        self._writable(command.target)
        return self._service.execute(command)

    def restore(self, text_or_id: str, *, target: Target | str = Target.MEMORY) -> WriteResult:
        """Bring back a removed entry (deleted by a hand edit, the tool or an eviction) with
        its old id, text and dates: name it by id or by a unique part of its text. Status
        `restored`; `not_found`, `ambiguous` (candidates listed) or `noop` (an equal entry is
        active) change nothing."""
        need_text("text_or_id", text_or_id)
        where = _target(target)
        self._writable(where)
        return self._service.restore(where, text_or_id)

    def purge(
        self, text_or_id: str, *, target: Target | str = Target.MEMORY, dry_run: bool = False
    ) -> PurgeResult:
        """Erase an entry and every version of its supersede chain for good (ADR 0026): named
        by id or a unique part of any version's text, active, removed or superseded. Its text
        leaves the journal, the event log, search, vectors, snapshots and the Markdown files;
        it cannot be restored. Status `purged` (`versions`, `entry_ids`; `leftovers`: copies
        moved aside that may hold it), `preview` with `dry_run`, `not_found`, `ambiguous`."""
        need_text("text_or_id", text_or_id)
        need_flag("dry_run", dry_run)
        where = _target(target)
        if not text_or_id.strip():
            raise ArgumentError("purge needs an id or a part of the entry's text")
        if not dry_run:
            self._writable(*Target)
        return self._service.purge(where, text_or_id, dry_run=dry_run)

    def removed(self, target: Target | str = Target.MEMORY) -> list[EntryView]:
        """The removed entries of `target` that `restore` can bring back (newest removal
        first), as visible to this session."""
        return [entry_view(r.entry) for r in self._service.removed(_target(target))]

    def settled(self) -> bool:
        """Whether this store can answer a read without writing first: no Markdown file was
        hand edited or left unrendered since it last looked (a stat per file when nothing
        changed). False: a read would import or render first (ADR 0083)."""
        return self._service.settled()

    # -- entries by id (ADR 0028) ----------------------------------------------------------

    def get(self, entry_id: str) -> EntryView | None:
        """The entry with this id (active, or an old version with `superseded_by` set) if this
        session may see it; None otherwise (also for a removed entry: see `removed`)."""
        need_text("entry_id", entry_id)
        return by_id.get(self._service, entry_id)

    def active_entry(self, entry_id: str, target: Target | str) -> EntryView | None:
        """The active entry with this id in `target`, if this session may see it: one O(1)
        lookup in the current document (`get` builds every view of every document; this is
        for per-hit reads such as auto-recall's categories, ADR 0049)."""
        need_text("entry_id", entry_id)
        doc = self._service.current(_target(target))
        entry = doc.index.entry(entry_id)
        if entry is None:  # a memory's stable id (ADR 0074): its current version, if here
            entry = next((e for e in doc.active if e.stable_id == entry_id), None)
        if entry is None or not self._service.settings.scope.visible(entry):
            return None
        return entry_view(entry)

    def active_entries(self, entry_ids: Sequence[str], target: Target | str) -> list[EntryView]:
        """The active entries of `target` named by these row (version) ids or stable ids, in
        the order asked, skipping unknown, inactive or invisible ones: one catch-up of the
        document for them all (none when this session's copy is the journal's head and the
        file is unchanged), O(1) per row id (ADR 0103: a search's hits, fetched in one
        pass; `active_entry` reads the document again per call)."""
        need_sequence("entry_ids", entry_ids)
        doc = self._service.current_cached(_target(target))
        visible = self._service.settings.scope.visible
        by_stable: dict[str, MemoryEntry] | None = None
        out: list[EntryView] = []
        for entry_id in entry_ids:
            need_text("entry_ids[]", entry_id)
            entry = doc.index.entry(entry_id)
            if entry is None:
                if by_stable is None:  # only when a stable id is asked: one pass for them all
                    by_stable = {e.stable_id: e for e in doc.active}
                entry = by_stable.get(entry_id)
            if entry is not None and entry.superseded_by is None and visible(entry):
                out.append(entry_view(entry))
        return out

    def revision(self, target: Target | str) -> int:
        """The journal version of `target`'s document (every process's writes, a waiting hand
        edit imported first): it changes whenever the document does, so a front end may keep
        an index over the entries and trust it while the revision is the one it last saw; one
        read of the journal's head, no fold or render (ADR 0103)."""
        return self._service.revision(_target(target))

    def history(self, entry_id: str) -> list[EntryView]:
        """The supersede chain `entry_id` belongs to, oldest first, the current version last
        (absent when it was removed), from the id of any version; [] for an unknown id."""
        need_text("entry_id", entry_id)
        return by_id.history(self._service, entry_id)

    def update(
        self,
        entry_id: str,
        content: str,
        *,
        category: FailureCategory | str | None = None,
        importance: float | None = None,
        kind: MemoryKind | str | None = None,
    ) -> WriteResult:
        """Replace the entry with this id by `content` (the old text is kept as history).
        `entry_id` is the memory's stable id (ADR 0074: the result keeps it, and every later
        call may use it again), `ID@N` or a version id. `not_found`, `gone` (removed) or
        `superseded` (`ID@N` or a version id of an old version: `entry_id` of the result is
        the memory's id) change nothing. `importance`/`kind` (ADR 0045): None
        keeps the entry's; a change of them alone is a new version too."""
        need_text("entry_id", entry_id)
        need_text("content", content)
        _category(category)
        _importance(importance)
        _kind(kind)
        found = by_id.locate(self._service, entry_id)
        if found is None:
            return by_id.unknown_id("replace")
        if found.entry is None:
            return by_id.gone_id("replace", found.target)
        command = attrs.evolve(
            self._replace("", content, found.target, category),
            old_id=by_id.write_reference(found),
            importance=_importance(importance),
            kind=_kind(kind),
        )
        self._writable(command.target)
        return self._service.execute(command)

    def delete(self, entry_id: str) -> WriteResult:
        """Remove the entry with this id (`restore` brings it back); statuses as `update`."""
        need_text("entry_id", entry_id)
        found = by_id.locate(self._service, entry_id)
        if found is None:
            return by_id.unknown_id("remove")
        if found.entry is None:
            return by_id.gone_id("remove", found.target)
        command = attrs.evolve(
            self._remove("", found.target, None), old_id=by_id.write_reference(found)
        )
        self._writable(command.target)
        return self._service.execute(command)

    def promote(self, old_text: str, *, force: bool = False) -> WriteResult:
        """Move one current-project entry (located by `old_text`) to global memory."""
        return self._move(commands.MoveDirection.PROMOTE, old_text, force)

    def demote(self, old_text: str, *, force: bool = False) -> WriteResult:
        """Move one global memory entry (located by `old_text`) into the current project."""
        return self._move(commands.MoveDirection.DEMOTE, old_text, force)

    def _move(
        self, direction: MoveDirection, old_text: str, force: bool, old_id: str | None = None
    ) -> WriteResult:
        need_text("old_text", old_text)
        need_flag("force", force)
        self._writable(Target.PROJECT, Target.MEMORY)
        return self._service.move(
            commands.MoveMemory(
                direction=direction,
                old_text=old_text,
                force=force,
                at=self._clock.now(),
                old_id=old_id,
            )
        )

    def batch(self, operations: Sequence[Mapping[str, Any]]) -> BatchResult:
        """Apply several add/replace/remove operations (memory/user/project) at once."""
        need_sequence("operations", operations)
        from pi_hermes_memory.tools.registry import parse_memory_arguments

        parsed = parse_memory_arguments({"operations": list(operations)})
        assert isinstance(parsed, list)
        return self._run_batch(parsed)

    def entries(
        self,
        target: Target | str | None = None,
        *,
        include_history: bool = False,
        scope: str | None = None,
    ) -> list[EntryView]:
        """Active entries visible to this session (plus superseded history if asked),
        optionally only those of one scope (global, agent:<id>, custom:<name>, user:<id>)."""
        need_flag("include_history", include_history)
        need_text("scope", scope, optional=True)
        views = self._service.entries(
            _target(target) if target is not None else None, include_history=include_history
        )
        if scope is None:
            return views
        wanted = _namespace(scope)
        return [v for v in views if v.scope == (wanted or GLOBAL_NAMESPACE)]

    def insights(self) -> Insights:
        """Counts, capacity use and newest entries of each target this session sees."""
        from pi_hermes_memory.memory.insights import insights

        docs = {t: self._service.document(t) for t in Target}
        return insights(docs, self._service.settings.scope, self._service.settings.limits)

    def project_overview(self) -> ProjectOverview:
        """Entries per real project attribution, plus unattributed counts (switch-project)."""
        from pi_hermes_memory.memory.insights import project_overview

        return project_overview(
            self._service.document(Target.PROJECT),
            self._service.document(Target.FAILURE),
            self.project,
        )

    def doctor(self) -> DoctorReport:
        """The store's health, read without changing anything (ADR 0036): paths and config,
        Markdown <-> SQLite per target, pending hand edits, embedding coverage, the session
        index, skills and every cross-scope near-duplicate. No provider call, no write."""
        from pi_hermes_memory.bootstrap import diagnose_config

        if self.config is None:
            raise InvalidArgument("doctor needs the configuration of an opened store")
        return diagnose_config(self.config, self.warnings)

    def sync_markdown(self) -> SyncReport:
        """Import Markdown changes, then verify and repair the search mirror (ADR 0013)."""
        from pi_hermes_memory.memory.sync import sync_markdown

        self._writable()
        return sync_markdown(self._service)

    def reembed(
        self,
        progress: Callable[[ReembedProgress], None] | None = None,
        *,
        everything: bool = False,
        batch_size: int = 64,  # ports.vectors.REEMBED_BATCH, spelt out (ADR 0105)
    ) -> ReembedReport:
        """Embed every row that lacks a vector of the current model (`everything`: every row),
        `batch_size` rows per request, calling `progress` after each batch. Hand edits of the
        Markdown are imported first. Raises HermesMemoryError when embeddings are off."""
        need_flag("everything", everything)
        need_int("batch_size", batch_size)
        embeddings = self._service.embeddings
        if embeddings is None:
            reason = getattr(self.config, "embedding_disabled_reason", None)
            raise HermesMemoryError(
                "embeddings are off: "
                + _OFF_REASONS.get(getattr(reason, "value", ""), "no embedding provider was given")
            )
        self._service.refresh()
        return embeddings.reembed(progress=progress, everything=everything, batch_size=batch_size)

    def search(
        self,
        query: str,
        *,
        target: Target | str | None = None,
        category: FailureCategory | str | None = None,
        limit: int = DEFAULT_LIMIT,
        include_superseded: bool = False,
    ) -> SearchResult:
        """Full-text search of the entries this session may see (the memory_search tool)."""
        need_text("query", query)
        need_flag("include_superseded", include_superseded)
        if self._search is None:
            raise HermesMemoryError(
                "search is not available: open() got a custom storage but no search_index"
            )
        return self._search.search(
            query,
            target=_target(target) if target is not None else None,
            category=_category(category),
            limit=limit,
            include_superseded=include_superseded,
        )

    # -- session history (ADR 0020, ADR 0021) ---------------------------------------------

    def _session_history(self) -> SessionHistory | None:
        if self._make_sessions is not None:
            self._sessions, self._make_sessions = self._make_sessions(), None
        return self._sessions

    def _history(self) -> SessionHistory:
        if self._session_history() is None and self.read_only is not None:
            raise type(self.read_only)(
                f"session history is not available: {self.read_only}", path=self.read_only.path
            )
        if self._sessions is None:
            raise HermesMemoryError(
                "session history is not available: a custom storage needs a session_index"
            )
        return self._sessions

    def index_sessions(
        self, progress: Callable[[IndexProgress], None] | None = None
    ) -> IndexReport:
        """Index the session files incrementally (unchanged files are not read, grown files
        from where the last run stopped, rewritten files again), calling `progress` after
        every window read."""
        return self._history().indexer.index_all(progress)

    def index_live(self, path: str | os.PathLike[str]) -> IndexReport:
        """Index the new complete lines of one session file (the running session's), cheaply
        enough to call on every turn."""
        if not isinstance(path, str | os.PathLike):
            raise InvalidArgument(f"path must be a string or a path; got a {type(path).__name__}")
        return self._history().indexer.index_file(path)

    def record_message(
        self,
        session_id: str,
        role: str,
        text: str,
        *,
        at: datetime | None = None,
        cwd: str | None = None,
        project: str | None = None,
    ) -> RecordResult:
        """Add one turn (role user, assistant or system) of a session that has no Pi JSONL
        file to the session index; `project` defaults to the one of `cwd`. `at`: aware
        datetime, default now. Raises ValueError for invalid arguments."""
        need_text("session_id", session_id)
        need_text("role", role)
        need_text("text", text)
        need_text("cwd", cwd, optional=True)
        need_text("project", project, optional=True)
        return self._history().indexer.record(
            session_id, role, text, at=at, cwd=cwd, project=project
        )

    def forget_recorded(self, session_id: str, *, keep: int = 0) -> int:
        """Take the turns of a session recorded with `record_message` past its first `keep`
        out of the session index (all of them, and the session, with 0): `session_search`
        no longer finds them. Returns how many were dropped (ADR 0103: a framework session's
        popped or cleared items)."""
        need_text("session_id", session_id)
        return self._history().indexer.unrecord(session_id, keep=keep)

    def session_search(
        self,
        query: str,
        *,
        project: str | None = None,
        role: str | None = None,
        limit: int = 5,  # ports.history.DEFAULT_SESSIONS (a test checks), not imported here
    ) -> SessionSearchResult:
        """The legacy session_search: sessions with turns matching `query`, the current
        project's first (`project`: only that one, '*': all alike)."""
        need_text("query", query)
        need_text("project", project, optional=True)
        need_text("role", role, optional=True)
        return self._history().search_service.search(query, project=project, role=role, limit=limit)

    def session_anchors(self, request: str) -> AnchorResult:
        """The anchors session_search: a Markdown request in, JSONL source ranges out."""
        need_text("request", request)
        return self._history().anchors(request)

    # -- knowledge base (ADR 0048) ----------------------------------------------------------

    @property
    def knowledge(self) -> KnowledgeBase:
        """The knowledge base over the configured folders (`knowledge.paths`): `index()`,
        `search()`, `stats()`. Without folders its calls raise KnowledgeNotConfigured."""
        if self._knowledge is None:
            if self._make_knowledge is None:
                raise HermesMemoryError(
                    "the knowledge base is not available: open() builds it from the config"
                )
            self._knowledge = self._make_knowledge()
        return self._knowledge

    # -- tool API -------------------------------------------------------------------------

    def _tools(self) -> dict[str, tuple[ToolDefinition, Callable[[Any], ToolResult]]]:
        """The tool registry: name -> (definition, handler taking the JSON arguments); the
        knowledge tools come last, with either tool set, when folders are configured
        (ADR 0048)."""
        tools = self._memory_tools()
        if self._make_knowledge is not None and self.config.knowledge.paths:
            from pi_hermes_memory.knowledge.tool import knowledge_handlers

            tools.update(knowledge_handlers(lambda: self.knowledge))
        return tools

    def _memory_tools(self) -> dict[str, tuple[ToolDefinition, Callable[[Any], ToolResult]]]:
        tools: dict[str, tuple[ToolDefinition, Callable[[Any], ToolResult]]] = {}
        sets = self.config.tool_sets if self.config is not None else ("hermes",)
        if "pi-memory" in sets:  # the second seed's tools (ADR 0045)
            from pi_hermes_memory.tools.pi_memory import pi_memory_handlers

            tools.update(pi_memory_handlers(self))
        if "hermes" not in sets:
            return tools
        # the tool registry loads with the first tool look-up, not with open() (ADR 0110)
        from pi_hermes_memory.search.search_tool import MEMORY_SEARCH_TOOL
        from pi_hermes_memory.tools.registry import MEMORY_TOOL

        tools[MEMORY_TOOL.name] = (MEMORY_TOOL, self._memory_tool)
        if self._search is not None:
            tools[MEMORY_SEARCH_TOOL.name] = (MEMORY_SEARCH_TOOL, self._search_tool)
        history = self._session_history()
        if history is not None:
            tools["session_search"] = (history.tool, history.run_tool)
        skills = self._skill_service()
        if skills is not None:
            from pi_hermes_memory.skills.tool import SKILL_TOOL, run_skill_tool

            tools[SKILL_TOOL.name] = (SKILL_TOOL, lambda args: run_skill_tool(skills, args))
            if skills.telemetry is not None:
                from pi_hermes_memory.skills.stats_tool import (
                    SKILL_STATS_TOOL,
                    run_skill_stats_tool,
                )

                tools[SKILL_STATS_TOOL.name] = (
                    SKILL_STATS_TOOL,
                    lambda args: run_skill_stats_tool(self.skill_stats, skills.project, args),
                )
        governance = self._skill_governance()
        if governance is not None and governance.child:
            from pi_hermes_memory.skills.governance.tool import CURATE_TOOL, run_curate_tool

            tools[CURATE_TOOL.name] = (CURATE_TOOL, lambda args: run_curate_tool(governance, args))
        return tools

    def system_prompt(self) -> str:
        """The memory part of the system prompt ("" when there is none): the memory policy
        (policy-only) or the policy and the remembered context (legacy-inject), and the
        user's standing instructions in every mode (ADR 0037). Call it once per session
        start; `preview_context` says the same with its size."""
        return self.preview_context().text

    def preview_context(self) -> ContextPreview:
        """Exactly what `system_prompt` returns, with the mode, the style, its size in
        characters and estimated tokens, and warnings about STANDING.md (ADR 0037)."""
        from pi_hermes_memory.lifecycle.prompt_context import build_context

        return build_context(
            config=self.config,
            service=self._service,
            tool_names=[d.name for d in self.tool_definitions()],
            today=self._clock.now().date(),
        )

    def tool_definitions(self) -> list[ToolDefinition]:
        return [definition for definition, _ in self._tools().values()]

    def tool_schemas(self, fmt: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:
        """The tool definitions as JSON for `fmt`: openai, openai-responses, anthropic or mcp;
        `strict`: OpenAI strict-mode schemas (ADR 0028)."""
        need_text("fmt", fmt)
        need_flag("strict", strict)
        from pi_hermes_memory.tools.schemas import render_all

        return render_all(self.tool_definitions(), fmt, strict=strict)

    def call_tool(self, name: str, arguments: Any) -> ToolResult:
        """Run tool `name` with JSON `arguments`; always returns a result object."""
        tools = self._tools()
        if not isinstance(name, str) or name not in tools:  # a host may pass anything
            shown = repr(name)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            message = f"Unknown tool {shown}; tools: {', '.join(tools)}"
            from pi_hermes_memory.tools.pi_memory import PI_MEMORY_TOOLS

            seed_tool = isinstance(name, str) and name in {d.name for d in PI_MEMORY_TOOLS}
            if seed_tool:  # offered only when tools.sets names them
                message += (
                    f'. {name} is one of the second seed\'s tools: add "pi-memory" to '
                    'tools.sets in hermes-memory-config.json (e.g. "tools": {"sets": '
                    '["hermes", "pi-memory"]})'
                )
            return {
                "success": False,
                "status": Status.UNKNOWN_TOOL,
                "message": message,
            }
        try:
            return tools[name][1](arguments)
        except ArgumentError as exc:
            from pi_hermes_memory.tools.registry import invalid

            return invalid(str(exc))
        except HermesMemoryError as exc:
            return {"success": False, "status": Status.ERROR, "message": str(exc)}
        except Exception as exc:  # the agent gets a result, never a traceback
            self._log.error("tool.failed", tool=name, exc_info=True)
            return {
                "success": False,
                "status": Status.ERROR,
                "message": f"The memory store failed ({type(exc).__name__}); nothing was "
                "reported saved. Details are in the application log.",
            }

    def _search_tool(self, arguments: Any) -> ToolResult:
        assert self._search is not None  # registered only with a search index
        from pi_hermes_memory.search.search_tool import run_search_tool

        return run_search_tool(self._search, arguments)

    def _memory_tool(self, arguments: Any) -> ToolResult:
        from pi_hermes_memory.tools.registry import (
            batch_result_json,
            parse_memory_arguments,
            write_result_json,
        )

        parsed = parse_memory_arguments(arguments)
        if isinstance(parsed, list):
            return batch_result_json(self._run_batch(parsed))
        if parsed.action == "purge":
            return self.purge(
                parsed.old_id or parsed.old_text or "", target=parsed.target
            ).to_json()
        if parsed.action in ("promote", "demote"):
            return write_result_json(
                self._move(
                    commands.MoveDirection(parsed.action),
                    parsed.old_text or "",
                    parsed.force,
                    parsed.old_id,
                )
            )
        command = self._command(parsed)
        self._writable(command.target)
        return write_result_json(self._execute(command))

    # -- helpers --------------------------------------------------------------------------

    def _execute(self, command: MemoryCommand) -> WriteResult:
        """One write; an add refused for capacity under auto-consolidate with an LLM
        consolidates the target and is decided once more (issue 12 §4)."""
        result = self._service.execute(command)
        if self._consolidator is None:
            return result
        from pi_hermes_memory.learning.consolidation import retry_add

        return retry_add(self._consolidator, command, result, self._service.execute)

    def consolidate(self, target: Target | str | None = None) -> list[ConsolidationResult]:
        """Consolidate `target` (default: every target) with the LLM: near-duplicates merged,
        entries compressed, all or nothing (see `pi_hermes_memory.learning.consolidation`). With the
        LLM off, one failed result per target saying so."""
        targets = [_target(target)] if target is not None else list(Target)
        if self._service.settings.scope.project is None:
            targets = [t for t in targets if t is not Target.PROJECT or target is not None]
        from pi_hermes_memory.learning.consolidation import ConsolidationResult as Result

        if self._consolidator is None:
            self._off_llm()
            why = self._llm_off.message if self._llm_off is not None else "no LLM is attached"
            return [
                Result(
                    success=False,
                    status=Status.FAILED,
                    message=f"Consolidation needs an LLM, and {why}.",
                    target=t.value,
                )
                for t in targets
            ]
        self._writable(*targets)
        return [self._consolidator.consolidate(t) for t in targets]

    def _add(
        self,
        content: str,
        target: Target | str,
        category: FailureCategory | str | None,
        force: bool,
        scope: str | None = None,
    ) -> AddMemory:
        return commands.AddMemory(
            target=_target(target),
            text=content,
            category=_category(category),
            force=force,
            entry_id=self._ids.new_id(),
            at=self._clock.now(),
            namespace=_namespace(scope),
        )

    def _replace(
        self,
        old_text: str,
        content: str,
        target: Target | str,
        category: FailureCategory | str | None,
        scope: str | None = None,
    ) -> ReplaceMemory:
        return commands.ReplaceMemory(
            target=_target(target),
            old_text=old_text,
            text=content,
            category=_category(category),
            entry_id=self._ids.new_id(),
            at=self._clock.now(),
            namespace=_namespace(scope),
        )

    def _remove(self, old_text: str, target: Target | str, scope: str | None) -> RemoveMemory:
        return commands.RemoveMemory(
            target=_target(target),
            old_text=old_text,
            at=self._clock.now(),
            namespace=_namespace(scope),
        )

    def _command(self, call: MemoryCall) -> MemoryCommand:
        if call.action == "add":
            return self._add(call.content or "", call.target, call.category, call.force, call.scope)
        if call.action == "replace":
            replace = self._replace(
                call.old_text or "", call.content or "", call.target, call.category, call.scope
            )
            return attrs.evolve(replace, old_id=call.old_id)
        return attrs.evolve(
            self._remove(call.old_text or "", call.target, call.scope), old_id=call.old_id
        )

    def _run_batch(self, parsed: Sequence[MemoryCall | ArgumentError]) -> BatchResult:
        from pi_hermes_memory.results import BatchResult, WriteResult

        items = [
            WriteResult(success=False, status=Status.INVALID_ARGUMENTS, message=str(p))
            if isinstance(p, ArgumentError)
            else self._command(p)
            for p in parsed
        ]
        self._writable(*(i.target for i in items if not isinstance(i, WriteResult)))
        results = self._service.execute_batch(items)
        if self._consolidator is not None:  # capacity-triggered consolidation (issue 12 §4)
            from pi_hermes_memory.learning.consolidation import retry_batch

            results = retry_batch(self._consolidator, items, results, self._service.execute_batch)
        ok = sum(r.success for r in results)
        status = Status.OK if ok == len(results) else (Status.PARTIAL if ok else Status.FAILED)
        return BatchResult(
            success=ok == len(results),
            status=status,
            message=f"{ok} of {len(results)} operations applied.",
            results=tuple(results),
        )
