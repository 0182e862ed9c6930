"""Consolidation (issue 12 §4, the seed's 自动整理): merge, rewrite or drop a target's entries
with the LLM, all or nothing.

1. The input boundary (`boundary`): memory/user the rows of one namespace (the global layer by
   default); project the current project's own rows; failure the current project's rows plus
   the unattributed global failures. `projectMemorySharing` never widens it.
2. Offline pre-clustering (`pi_hermes_memory.domain.learning.clustering`) with the stored vectors
of the
   current model only: consolidation never calls the embedding provider.
3. At most `max_calls` LLM calls per run (a second only when the first reply could not be
   read), each within what is left of `timeout` seconds (consolidationTimeoutMs); the
   completer caps the reply size; a prompt over `max_prompt_chars` is not sent.
4. The plan (`{"operations": [...]}`, read by `parse_reply`) is applied whole or not at all,
   in one transaction over every target it names, removes first, then replaces, then adds
   (so a merged entry is not refused as a near-duplicate of the rows it replaces). Nothing is
   applied unless (ADR 0062): the reply has no operation the parser dropped; every operation
   succeeds; it touches only rows of the boundary read before the call (other targets may
   only receive adds); the boundary's characters shrink; every entry it drops is covered by
   a replace or add of the plan (`pi_hermes_memory.domain.learning.coverage`); and it deletes
   at most `max_removals` of the boundary's entries (`consolidationMaxRemovedShare`).
   replace keeps supersede chains. Every outcome is handed to `record` (review status).
5. One consolidation per store target at a time across processes: a lock file per target in
   memoryDir, taken without waiting (`busy`: retry in a moment).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.learning.clustering import CLUSTER_COSINE, CosineLinks, cluster, render
from pi_hermes_memory.domain.learning.coverage import (
    DEFAULT_MAX_REMOVED_SHARE,
    first_uncovered,
    max_removals,
)
from pi_hermes_memory.domain.learning.llm_reply import MemoryAction, MemoryOperation, parse_reply
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MemoryCommand,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.decide import Decision, WritePolicy, decide
from pi_hermes_memory.domain.memory.document import MemoryDocument, WorkingDocument
from pi_hermes_memory.domain.memory.events import (
    MemoryAdded,
    MemoryRemoved,
    MemoryReplaced,
    MemorySuperseded,
)
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.scanning.scanner import scan
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CompletionFailed
from pi_hermes_memory.learning.llm import guarded_complete
from pi_hermes_memory.ports.llm import Completer
from pi_hermes_memory.ports.search import ScopeClause
from pi_hermes_memory.ports.store import Clock, IdFactory
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.results import WriteResult

if TYPE_CHECKING:
    from pi_hermes_memory.memory.service import MemoryService

__all__ = [
    "MAX_CALLS",
    "MAX_PROMPT_CHARS",
    "ConsolidationResult",
    "Consolidator",
    "Recorder",
    "TryLock",
    "apply_plan",
    "boundary",
    "retry_add",
    "retry_batch",
]

#: LLM calls one consolidation may make (a runaway loop is impossible by construction)
MAX_CALLS: Final = 2
#: characters of the user prompt; a larger input is refused rather than sent
MAX_PROMPT_CHARS: Final = 200_000

SYSTEM_PROMPT: Final = (
    "You consolidate an agent's long-term memory entries, which are over their size limit. "
    "Merge near-duplicates and compress wordy entries, keeping every distinct fact. Entries "
    "in a [Near-duplicate cluster N] block are probably the same fact: merge them by replacing "
    "one with the merged text and removing the others. Never drop a fact: an entry may be "
    "removed only when a replace or add of your answer keeps its facts (every number, path, "
    "command and name, and most of its words), and at most a few entries may be removed. "
    'Answer with one JSON object {"operations": [...]}: each item '
    '{"action": "replace", "target": T, "old_text": <a unique part of the entry>, '
    '"content": <new text>}, {"action": "remove", "target": T, "old_text": ...} or '
    '{"action": "add", "target": T, "content": ...}. The result must be shorter than the input. '
    "Touch only the entries shown."
)


@attrs.frozen(kw_only=True)
class ConsolidationResult:
    success: bool
    status: Status
    message: str
    target: str
    #: characters of the boundary before and after (after == before when nothing applied)
    before: int = 0
    after: int = 0
    applied: int = 0
    calls: int = 0
    clusters: int = 0

    def as_dict(self) -> dict[str, object]:
        return attrs.asdict(self)


def boundary(
    rows: Sequence[MemoryEntry], target: Target, scope: SessionScope, namespace: str | None = None
) -> list[MemoryEntry]:
    """The rows a consolidation of `target` may read and change (see the module docstring)."""
    if target is Target.PROJECT:
        return [e for e in rows if scope.project is not None and e.project == scope.project]
    if target is Target.FAILURE:
        return [e for e in rows if e.project is None or e.project == scope.project]
    return [e for e in rows if e.namespace == namespace]


def _used(rows: Sequence[MemoryEntry]) -> int:
    return sum(len(e.text) for e in rows)


_ORDER = {MemoryAction.REMOVE: 0, MemoryAction.REPLACE: 1, MemoryAction.ADD: 2}


def _command(
    op: MemoryOperation, target: Target, namespace: str | None, clock: Clock, ids: IdFactory
) -> MemoryCommand:
    at = clock.now()
    if op.action is MemoryAction.ADD:
        return AddMemory(
            target=target,
            text=op.content or "",
            entry_id=ids.new_id(),
            at=at,
            category=op.category,
            namespace=namespace,
        )
    if op.action is MemoryAction.REPLACE:
        return ReplaceMemory(
            target=target,
            old_text=op.old_text or "",
            old_id=op.old_id,
            text=op.content or "",
            entry_id=ids.new_id(),
            at=at,
            category=op.category,
            namespace=namespace,
        )
    return RemoveMemory(
        target=target, old_text=op.old_text or "", old_id=op.old_id, at=at, namespace=namespace
    )


def _touched(decision: Decision) -> set[str]:
    """Ids of existing rows the decision's events change (new rows are not counted)."""
    out: set[str] = set()
    for event in decision.events:
        if isinstance(event, MemoryReplaced):
            out.add(event.old_id)
        elif isinstance(event, MemorySuperseded):
            out.update((event.old_id, event.by_id))
        elif isinstance(event, MemoryRemoved):
            out.add(event.entry_id)
        elif not isinstance(event, MemoryAdded):
            out.add(f"<{type(event).__name__}>")  # an event kind a plan never needs
    return out


def apply_plan(
    docs: Mapping[Target, MemoryDocument],
    commands: Sequence[MemoryCommand],
    *,
    target: Target,
    allowed: frozenset[str],
    policies: Mapping[Target, WritePolicy],
    scope: SessionScope,
    namespace: str | None = None,
    max_removed_share: float = DEFAULT_MAX_REMOVED_SHARE,
) -> tuple[list[tuple[Target, Decision]], str | None]:
    """Decide `commands` in a row on `docs` (every target they name): (decisions, None) when
    the whole plan may be applied, else ([], why). Pure. `target`: the target consolidated;
    `allowed`: ids of its boundary read before the LLM call. The plan may only add to other
    targets; every entry it drops must be covered (`domain.learning.coverage`), and it may
    delete at most `max_removals` of the boundary's entries."""
    if not commands:
        return [], "the LLM proposed no operation"
    missing = {c.target for c in commands} - set(docs)
    if missing or target not in docs:
        return [], "the plan names a target that was not loaded"
    inside = boundary(docs[target].active, target, scope, namespace)
    before = _used(inside)
    inside_ids = {e.id for e in inside}
    outside = {(e.id, e.text) for e in docs[target].active if e.id not in inside_ids}
    work = {t: WorkingDocument(d) for t, d in docs.items()}
    out: list[tuple[Target, Decision]] = []
    deleted: set[str] = set()
    new_ids: set[str] = set()
    for n, command in enumerate(commands, start=1):
        if isinstance(command, AddMemory | ReplaceMemory):
            scanned = scan(command.text)
            if scanned.blocked:
                return [], f"operation {n} was refused by the content scan: {scanned.message()}"
        decision = decide(work[command.target], command, policies[command.target])
        if not decision.success:
            return [], f"operation {n} failed ({decision.status.value}): {decision.message}"
        stray = _touched(decision) - allowed
        if stray:
            return [], f"operation {n} touched an entry outside the consolidation's input"
        for event in decision.events:
            if isinstance(event, MemoryRemoved):
                deleted.add(event.entry_id)
            elif isinstance(event, MemoryAdded):
                new_ids.add(event.entry_id)
            elif isinstance(event, MemoryReplaced):
                new_ids.add(event.new_id)
            elif isinstance(event, MemorySuperseded):
                new_ids.add(event.by_id)
        work[command.target].apply(decision.events)
        out.append((command.target, decision))
    after_rows = boundary(work[target].active, target, scope, namespace)
    after = _used(after_rows)
    after_ids = {e.id for e in after_rows}
    now_outside = {(e.id, e.text) for e in work[target].active if e.id not in after_ids}
    if now_outside != outside:
        return [], "the plan changed entries outside the consolidation's input"
    for t, doc in docs.items():
        if t is not target and not {(e.id, e.text) for e in doc.active} <= {
            (e.id, e.text) for e in work[t].active
        }:
            return [], f"the plan changed entries of the {t.value} target"
    if after >= before:
        return [], f"the plan does not shrink the target ({before} -> {after} characters)"
    outputs = [e.text for w in work.values() for e in w.active if e.id in new_ids]
    gone = [(e.id, e.text) for e in inside if e.id not in after_ids]
    uncovered = first_uncovered(gone, outputs)
    if uncovered is not None:
        return [], (
            f"the plan drops the entry {shown(uncovered[1], 60)} and no replace or add of the "
            "plan keeps its facts (every number, path and identifier, and at least a third of "
            "its other words)"
        )
    limit = max_removals(len(inside), max_removed_share)
    if len(deleted) > limit:
        return [], (
            f"the plan deletes {len(deleted)} of the target's {len(inside)} entries; one plan "
            f"may delete at most {limit} (consolidationMaxRemovedShare {max_removed_share:g})"
        )
    return out, None


#: takes a lock file without waiting; yields whether it was taken (the composition root passes
#: `pi_hermes_memory.adapters.markdown.atomic.try_file_lock`)
TryLock = Callable[[Path], AbstractContextManager[bool]]

#: called with the outcome of every consolidation that read its target (`review-status`)
Recorder = Callable[[ConsolidationResult], None]


class Consolidator:
    def __init__(
        self,
        *,
        service: MemoryService,
        completer: Completer,
        clock: Clock,
        ids: IdFactory,
        lock_dir: Path,
        try_lock: TryLock,
        timeout: float,
        max_calls: int = MAX_CALLS,
        max_prompt_chars: int = MAX_PROMPT_CHARS,
        max_removed_share: float = DEFAULT_MAX_REMOVED_SHARE,
        record: Recorder | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._service = service
        self._completer = completer
        self._clock = clock
        self._ids = ids
        self._lock_dir = lock_dir
        self._try_lock = try_lock
        self._timeout = timeout
        self._max_calls = max(1, max_calls)
        self._max_prompt = max_prompt_chars
        self._max_removed_share = max_removed_share
        self._record = record
        self._monotonic = monotonic

    def lock_path(self, target: Target, namespace: str | None = None) -> Path:
        suffix = (
            "" if namespace is None else "-" + "".join(c if c.isalnum() else "_" for c in namespace)
        )
        return self._lock_dir / f".consolidate-{target.value}{suffix}.lock"

    def consolidate(self, target: Target, namespace: str | None = None) -> ConsolidationResult:
        with self._try_lock(self.lock_path(target, namespace)) as held:
            if not held:
                return self._fail(
                    target,
                    Status.BUSY,
                    f"another consolidation of the {target.value} target is running; "
                    "retry in a moment",
                )
            result = self._run(target, namespace)
        if self._record is not None and result.status not in (Status.NOOP, Status.BUSY):
            self._record(result)
        return result

    def _fail(self, target: Target, status: Status, why: str, **kw: int) -> ConsolidationResult:
        return ConsolidationResult(
            success=False,
            status=status,
            message=f"Consolidation failed: {why}.",
            target=target.value,
            **kw,
        )

    def _links(self, rows: Sequence[MemoryEntry]) -> CosineLinks | None:
        """Cosine links of the rows with a stored vector of the current model, by one matrix
        product (no provider call); None without embeddings or vectors."""
        embeddings = self._service.embeddings
        if embeddings is None or not rows:
            return None
        import numpy as np

        wanted = {e.id for e in rows}
        try:
            ids, matrix = embeddings.candidates(VectorScope(clauses=(ScopeClause(rows[0].target),)))
        except Exception:  # a damaged vector table: cluster by tokens
            return None
        keep = [n for n, i in enumerate(ids) if i in wanted]
        if not keep:
            return None
        kept = [ids[n] for n in keep]
        sub = matrix[keep]
        a, b = np.nonzero(np.triu(sub @ sub.T >= CLUSTER_COSINE, k=1))
        pairs = frozenset(
            (min(kept[x], kept[y]), max(kept[x], kept[y]))
            for x, y in zip(a.tolist(), b.tolist(), strict=True)
        )
        return CosineLinks(covered=frozenset(kept), pairs=pairs)

    def _run(self, target: Target, namespace: str | None) -> ConsolidationResult:
        scope = self._service.settings.scope
        doc = self._service.document(target)
        rows = boundary(doc.active, target, scope, namespace)
        before = _used(rows)
        if not rows:
            return ConsolidationResult(
                success=True,
                status=Status.NOOP,
                message=f"the {target.value} target has no entry to consolidate.",
                target=target.value,
            )
        entries = [(e.id, e.text) for e in rows]
        clustering = cluster(entries, links=self._links(rows))
        user = (
            f"Target: {target.value} ({before} characters, limit "
            f"{self._service.settings.limits[target]}).\n\n{render(entries, clustering)}"
        )
        n_clusters = len(clustering.clusters)
        if len(user) > self._max_prompt:
            return self._fail(
                target,
                Status.FAILED,
                f"its input ({len(user):,} characters) is over the prompt limit of "
                f"{self._max_prompt:,}",
                before=before,
                after=before,
            )
        deadline = self._monotonic() + self._timeout
        calls = 0
        why = ""
        while calls < self._max_calls:
            left = deadline - self._monotonic()
            if left <= 0:
                why = why or "the consolidation timeout was reached"
                break
            calls += 1
            try:
                reply = guarded_complete(self._completer, SYSTEM_PROMPT, user, timeout=left)
            except CompletionFailed as exc:
                why = f"the LLM call failed ({exc.reason.value}): {exc}"
                break
            parsed = parse_reply(reply, skills=False)
            if not parsed.readable:
                why = f"the LLM reply could not be read ({parsed.note})"
                continue  # one more call within the budget
            if parsed.dropped_count:  # applying the rest would apply part of the plan
                return self._fail(
                    target,
                    Status.FAILED,
                    f"{parsed.dropped_count} operation(s) of the plan cannot be applied "
                    f"({parsed.note}); a plan is applied whole or not at all, so nothing "
                    "was changed",
                    before=before,
                    after=before,
                    calls=calls,
                    clusters=n_clusters,
                )
            return self._apply(
                target,
                namespace,
                parsed.operations,
                frozenset(e.id for e in rows),
                before,
                calls,
                n_clusters,
            )
        return self._fail(
            target,
            Status.FAILED,
            why,
            before=before,
            after=before,
            calls=calls,
            clusters=n_clusters,
        )

    def _apply(
        self,
        target: Target,
        namespace: str | None,
        operations: Sequence[MemoryOperation],
        allowed: frozenset[str],
        before: int,
        calls: int,
        n_clusters: int,
    ) -> ConsolidationResult:
        ops = sorted(operations, key=lambda o: (_ORDER[o.action], o.index))
        commands = [
            _command(o, o.target, _namespace_for(o.target, namespace), self._clock, self._ids)
            for o in ops
        ]
        settings = self._service.settings
        named = {target, *(c.target for c in commands)}
        policies = {
            t: WritePolicy(
                scope=settings.scope,
                char_limit=settings.limits[t],
                overflow=OverflowStrategy.REJECT,
                consolidation_available=False,
            )
            for t in named
        }
        problem: list[str] = []

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            decisions, why = apply_plan(
                docs,
                commands,
                target=target,
                allowed=allowed,
                policies=policies,
                scope=settings.scope,
                namespace=namespace,
                max_removed_share=self._max_removed_share,
            )
            if why is not None:
                problem.append(why)
                return []
            return decisions

        # every target the plan names in one transaction: all of it commits, or none
        self._service.run(named, plan, publish_first=target)
        if problem:
            return self._fail(
                target,
                Status.FAILED,
                problem[0] + "; nothing was changed",
                before=before,
                after=before,
                calls=calls,
                clusters=n_clusters,
            )
        doc = self._service.document(target)
        after = _used(boundary(doc.active, target, settings.scope, namespace))
        return ConsolidationResult(
            success=True,
            status=Status.CONSOLIDATED,
            message=f"Consolidated the {target.value} target: {before} -> {after} characters "
            f"({len(commands)} operation(s)).",
            target=target.value,
            before=before,
            after=after,
            applied=len(commands),
            calls=calls,
            clusters=n_clusters,
        )


def _namespace_for(target: Target, namespace: str | None) -> str | None:
    """The namespace of a plan's write to `target`: memory/user keep the consolidated
    namespace (the global layer by default); project and failure have none."""
    return namespace if target in (Target.MEMORY, Target.USER) else None


# -- capacity-triggered consolidation (Memory.add, the memory tool, batches) -------------------


def _namespace_of(command: MemoryCommand) -> str | None:
    return command.namespace if command.target in (Target.MEMORY, Target.USER) else None


def _refused(result: WriteResult, why: str) -> WriteResult:
    return attrs.evolve(
        result,
        status=Status.CAPACITY_EXCEEDED,
        message=f"{result.message.rstrip('.')}; {why} Nothing was saved.",
    )


def retry_add(
    consolidator: Consolidator,
    command: MemoryCommand,
    result: WriteResult,
    execute: Callable[[MemoryCommand], WriteResult],
) -> WriteResult:
    """When `result` is a capacity refusal that asks for consolidation: consolidate the
    target, then decide `command` once more against fresh state (its near-duplicate check
    included, unless it is a `force` add). A failed consolidation says why in the result."""
    if result.status is not Status.NEEDS_CONSOLIDATION:
        return result
    outcome = consolidator.consolidate(command.target, _namespace_of(command))
    if not outcome.success:
        return _refused(result, f"auto-consolidation did not help: {outcome.message}")
    retried = execute(command)
    if retried.status is Status.NEEDS_CONSOLIDATION:
        return _refused(retried, f"it still does not fit after consolidation ({outcome.message})")
    return attrs.evolve(retried, warnings=(*retried.warnings, outcome.message))


def retry_batch(
    consolidator: Consolidator,
    items: Sequence[MemoryCommand | WriteResult],
    results: Sequence[WriteResult],
    execute_batch: Callable[[Sequence[MemoryCommand | WriteResult]], list[WriteResult]],
) -> list[WriteResult]:
    """The batch form of `retry_add`: the operations refused for capacity are run again, in
    their order, after one consolidation per target; each result keeps its operation's
    position in the batch."""
    blocked = [
        i
        for i, r in enumerate(results)
        if r.status is Status.NEEDS_CONSOLIDATION and not isinstance(items[i], WriteResult)
    ]
    if not blocked:
        return list(results)
    out = list(results)
    outcomes: dict[tuple[Target, str | None], ConsolidationResult] = {}
    retry: list[int] = []
    for i in blocked:
        command = items[i]
        assert not isinstance(command, WriteResult)
        key = (command.target, _namespace_of(command))
        if key not in outcomes:
            outcomes[key] = consolidator.consolidate(*key)
        if outcomes[key].success:
            retry.append(i)
        else:
            out[i] = _refused(out[i], f"auto-consolidation did not help: {outcomes[key].message}")
    if retry:
        again = execute_batch([items[i] for i in retry])
        for i, result in zip(retry, again, strict=True):
            command = items[i]
            assert not isinstance(command, WriteResult)
            done = outcomes[(command.target, _namespace_of(command))]
            if result.status is Status.NEEDS_CONSOLIDATION:
                result = _refused(
                    result, f"it still does not fit after consolidation ({done.message})"
                )
            else:
                result = attrs.evolve(result, warnings=(*result.warnings, done.message))
            out[i] = result
    return out
