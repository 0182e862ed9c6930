"""Decisions: ``decide(state, command, policy) -> Decision`` holding the events to append.

Nothing here mutates: a Decision lists events; the application appends them and folds them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory import commands as cmds
from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.capacity import LIMIT_SETTING, OverflowStrategy, usage
from pi_hermes_memory.domain.memory.commands import AddMemory
from pi_hermes_memory.domain.memory.document import DocumentState
from pi_hermes_memory.domain.memory.events import Event, RemovalReason, stamp
from pi_hermes_memory.domain.memory.model import (
    GLOBAL_NAMESPACE,
    FailureCategory,
    MemoryEntry,
    Target,
    clean_entry_text,
    entry_text_problem,
    importance_problem,
    namespace_problem,
    normalize_text,
)
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.similarity import Candidate, near_duplicates, token_set
from pi_hermes_memory.domain.status import SUCCESS, Status

if TYPE_CHECKING:  # an add never resolves a reference: identity loads on the first by-id write
    from pi_hermes_memory.domain.memory.identity import Reference


# --- capacity: the plan of one write (moved from `capacity`, ADR 0110: a search does not
# build its class) -------------------------------------------------------------------------

#: a target as messages name it ("memory memory" read as a stutter)
_NAMES: dict[Target, str] = {
    Target.USER: "the user profile",
    Target.MEMORY: "memory",
    Target.PROJECT: "project memory",
    Target.FAILURE: "failure memory",
}


@attrs.frozen(kw_only=True)
class CapacityPlan:
    fits: bool
    evict: tuple[MemoryEntry, ...] = ()
    needs_consolidation: bool = False
    message: str = ""


def plan_capacity(
    *,
    target: Target,
    own: Sequence[MemoryEntry],
    adding: int,
    replacing: MemoryEntry | None,
    limit: int,
    strategy: OverflowStrategy,
    consolidation_available: bool,
) -> CapacityPlan:
    """Decide whether `adding` characters fit in the session's own rows of `target`.

    `own` are the rows that count against the limit and may be evicted (already filtered by
    scope); `replacing` is the row the new text replaces, which neither counts nor is evicted.
    """
    kept = [e for e in own if replacing is None or e.id != replacing.id]
    used = usage(kept)
    if used + adding <= limit:
        return CapacityPlan(fits=True)
    setting = LIMIT_SETTING[target]
    over = (
        f"{_NAMES.get(target, target.value)} would hold {used + adding} characters, over its "
        "limit of "
        f"{limit} ({setting}; {used} used now, this entry needs {adding})"
    )
    if strategy is OverflowStrategy.FIFO_EVICT:
        if adding > limit:
            return CapacityPlan(
                fits=False, message=f"Refused: {over}; the entry alone is too long."
            )
        evict: list[MemoryEntry] = []
        # Oldest first by created date; file order breaks ties (sorted() is stable).
        for entry in sorted(kept, key=lambda e: e.created):
            if used + adding <= limit:
                break
            evict.append(entry)
            used -= len(entry.text)
        return CapacityPlan(fits=True, evict=tuple(evict))
    if strategy is OverflowStrategy.AUTO_CONSOLIDATE:
        if consolidation_available:
            return CapacityPlan(fits=False, needs_consolidation=True, message=over)
        return CapacityPlan(
            fits=False,
            message=(
                f"Refused: {over}. memoryOverflowStrategy is auto-consolidate, but no LLM is "
                "configured for consolidation, so it behaves as reject: remove or replace "
                "entries first."
            ),
        )
    return CapacityPlan(fits=False, message=f"Refused: {over}. Remove or replace entries first.")


@attrs.frozen(kw_only=True)
class WritePolicy:
    scope: SessionScope
    char_limit: int
    overflow: OverflowStrategy = OverflowStrategy.REJECT
    consolidation_available: bool = False


@attrs.frozen(kw_only=True)
class Decision:
    status: Status
    message: str
    events: tuple[Event, ...] = ()
    entry_id: str | None = None
    candidates: tuple[Candidate, ...] = ()
    evicted: tuple[MemoryEntry, ...] = ()
    matches: tuple[str, ...] = ()

    @property
    def success(self) -> bool:
        return self.status in SUCCESS


_WHERE = {
    Target.MEMORY: "global memory",
    Target.USER: "the user profile",
    Target.PROJECT: "project memory",
    Target.FAILURE: "failure memory",
}


def preview(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _namespace_gate(target: Target, namespace: str | None, scope: SessionScope) -> Decision | None:
    """Refuse an invalid namespace, or one this session's access map does not grant."""
    problem = namespace_problem(namespace, target)
    if problem:
        return Decision(status=Status.INVALID, message=f"Refused: {problem}.")
    if not scope.can_use(namespace):
        return Decision(
            status=Status.FORBIDDEN,
            message=f"Refused: this session has no access to scope "
            f"{shown(namespace or GLOBAL_NAMESPACE)} (see scopes.agentAccess).",
        )
    return None


def _id_gate(cmd: cmds.ReplaceMemory | cmds.RemoveMemory, scope: SessionScope) -> Decision | None:
    """The namespace gate of a replace/remove; an edit by id without a scope needs none:
    the row it names is edited only when the session may see it (`locate_id`)."""
    if cmd.old_id is not None and cmd.namespace is None:
        return None
    return _namespace_gate(cmd.target, cmd.namespace, scope)


def _project_problem(target: Target, scope: SessionScope) -> str | None:
    if target is Target.PROJECT and scope.project is None:
        return "there is no current project (set projectName or run inside a project directory)"
    return None


def _group(
    doc: DocumentState, scope: SessionScope, project: str | None, namespace: str | None
) -> tuple[str | None, ...]:
    """The index group of one (target, project, namespace) scope; none when the session
    owns no rows there (`scope.own` depends only on the target and the project)."""
    if doc.target in (Target.USER, Target.MEMORY):
        return (namespace,)
    first = doc.index.first(project)
    return (project,) if first is not None and scope.own(first) else ()


def same_scope(
    doc: DocumentState, scope: SessionScope, project: str | None, namespace: str | None = None
) -> list[MemoryEntry]:
    """The active own rows of one (target, project, namespace) scope: what a new row is deduped
    against and what counts against its capacity."""
    return [e for group in _group(doc, scope, project, namespace) for e in doc.index.rows(group)]


def near_candidates(
    doc: DocumentState,
    scope: SessionScope,
    project: str | None,
    namespace: str | None,
    text: str,
    cosines: Mapping[str, float] | None,
) -> list[MemoryEntry]:
    """The rows of `same_scope` that the near-duplicate rule could flag for `text`: those the
    token index finds (`ScopeIndex.near_candidates`) and those with a given cosine. The rule
    then decides exactly as over the whole scope, without visiting every row (issue 9 §3)."""
    found: dict[str, MemoryEntry] = {}
    for group in _group(doc, scope, project, namespace):
        for entry in doc.index.near_candidates(group, token_set(text)):
            found[entry.id] = entry
        for entry_id in cosines or ():
            if entry_id not in found and doc.index.holds(group, entry_id):
                entry = doc.index.row(group, entry_id)
                found[entry.id] = entry
    return list(found.values())


def same_text(
    doc: DocumentState,
    scope: SessionScope,
    project: str | None,
    namespace: str | None,
    key: str,
) -> MemoryEntry | None:
    """`exact(same_scope(...), key)` without building the scope's rows (O(1) on the index)."""
    for group in _group(doc, scope, project, namespace):
        return doc.index.exact(group, key)
    return None


def exact(rows: Sequence[MemoryEntry], key: str) -> MemoryEntry | None:
    """The row whose normalized text equals `key`."""
    for entry in rows:
        if entry.key == key:
            return entry
    return None


def locate(
    doc: DocumentState, scope: SessionScope, old_text: str, namespace: str | None = None
) -> tuple[MemoryEntry, ...]:
    """Visible active rows of `namespace` containing `old_text` (verbatim, else
    whitespace-insensitive)."""
    visible = [e for e in doc.active if e.namespace == namespace and scope.visible(e)]
    found = [e for e in visible if old_text in e.text]
    if not found:
        needle = normalize_text(old_text)
        found = [e for e in visible if needle in e.key]
    return tuple(found)


def current_id(doc: DocumentState, entry: MemoryEntry) -> str:
    """Follow `superseded_by` from `entry` to the last id of its chain in this document (an
    active row, or an id that left it); bounded by the document's size, cycle-safe."""
    seen = {entry.id}
    current = entry
    while current.superseded_by is not None and current.superseded_by not in seen:
        seen.add(current.superseded_by)
        successor = doc.find(current.superseded_by)
        if successor is None:
            return current.superseded_by
        current = successor
    return current.id


def _named(doc: DocumentState, ref: Reference) -> MemoryEntry | None:
    """The row `ref` names in `doc` (ADR 0074). A stable id names its memory's current version
    (also when it is an alias: the first version of a chain that joined another one); `ID@N`
    names version N while it is the head, and the memory's first version (history, so a write
    answers `superseded`) when N is older; a version id names that version."""
    if ref.version is not None:
        head = next((e for e in doc.active if e.stable_id == ref.id), None)
        if head is not None and ref.version <= head.version_no:
            return head if ref.version == head.version_no else doc.find(ref.id)
        return None
    entry = doc.find(ref.id)
    if entry is not None and (entry.stable_id != ref.id or entry.superseded_by is None):
        return entry  # a version id, or a memory whose first version is its head (O(1))
    head = next((e for e in doc.active if e.stable_id == ref.id), None)
    if head is not None:
        return head
    if entry is not None and entry.superseded_by is not None:
        successor = doc.find(current_id(doc, entry))
        if successor is not None and successor.superseded_by is None:
            return successor  # an alias: its chain joined this one
    return entry


def locate_id(
    doc: DocumentState, scope: SessionScope, entry_id: str, namespace: str | None = None
) -> MemoryEntry | Decision:
    """The visible active row with this id (of `namespace` when one is given); else why not:
    `superseded` (an old version: the decision's entry_id is the current one), `gone`
    (removed, evicted or moved out: restore brings a removed one back) or `not_found`."""
    from pi_hermes_memory.domain.memory.identity import parse_reference  # ADR 0109

    ref = parse_reference(entry_id)
    entry = _named(doc, ref)
    where = doc.target.value
    if (
        entry is None
        or not scope.visible(entry)
        or (namespace is not None and entry.namespace != namespace)
    ):
        if entry is None and doc.was_removed(ref.id):
            return Decision(
                status=Status.GONE,
                message=f"The {where} entry with this id was removed (or moved to another "
                "document); nothing was changed. `restore` brings a removed entry back.",
            )
        return Decision(
            status=Status.NOT_FOUND,
            message=f"No visible {where} entry has this id; nothing was changed.",
        )
    if entry.superseded_by is None:
        return entry
    if ref.version is None and entry.stable_id == ref.id:  # the memory, not one version
        return Decision(
            status=Status.GONE,
            message=f"The {where} memory with this id was removed (or moved to another "
            "document); nothing was changed. `restore` brings a removed entry back.",
        )
    head = current_id(doc, entry)
    active = doc.find(head)
    if active is not None and active.superseded_by is None and scope.visible(active):
        return Decision(
            status=Status.SUPERSEDED,
            message=f"This id names an old version of a {where} entry; the current version is "
            f"{head}. Nothing was changed: use the memory's id {active.stable_id}, which "
            "always names its current version (ADR 0074).",
            entry_id=head,
        )
    return Decision(
        status=Status.SUPERSEDED,
        message=f"This id names an old version of a {where} entry whose current version was "
        "removed or moved; nothing was changed.",
    )


def locate_one(
    doc: DocumentState,
    scope: SessionScope,
    old_text: str,
    namespace: str | None = None,
    old_id: str | None = None,
) -> MemoryEntry | Decision:
    """The entry `old_id` names, else the one unique entry `old_text` locates."""
    if old_id is not None:
        return locate_id(doc, scope, old_id, namespace)
    if not old_text.strip():
        return Decision(status=Status.INVALID, message="old_text is required and cannot be empty")
    found = locate(doc, scope, old_text, namespace)
    if not found:
        return Decision(
            status=Status.NOT_FOUND,
            message=f"No {doc.target.value} entry contains old_text; nothing was changed.",
        )
    if len({e.key for e in found}) > 1:
        previews = tuple(preview(e.text) for e in found[:5])
        listing = "; ".join(f"[{i + 1}] {p}" for i, p in enumerate(previews))
        return Decision(
            status=Status.AMBIGUOUS,
            message=(
                f"old_text matches {len(found)} {doc.target.value} entries; use a longer, unique "
                f"old_text. Matches: {listing}"
            ),
            matches=previews,
        )
    return found[0]


def capacity_events(
    doc: DocumentState,
    policy: WritePolicy,
    *,
    adding: int,
    replacing: MemoryEntry | None,
    command: AddMemory | cmds.ReplaceMemory | cmds.MoveMemory,
    namespace: str | None = None,
) -> tuple[tuple[Event, ...], tuple[MemoryEntry, ...]] | Decision:
    if _own_usage(doc, policy.scope, namespace, replacing) + adding <= policy.char_limit:
        return (), ()  # fits: what plan_capacity says, without listing the own rows
    own = policy.scope.own_rows(doc.active, doc.target)
    if doc.target in (Target.USER, Target.MEMORY):
        own = [e for e in own if e.namespace == namespace]  # each namespace has its budget
    plan = plan_capacity(
        target=doc.target,
        own=own,
        adding=adding,
        replacing=replacing,
        limit=policy.char_limit,
        strategy=policy.overflow,
        consolidation_available=policy.consolidation_available,
    )
    if not plan.fits:
        status = (
            Status.NEEDS_CONSOLIDATION if plan.needs_consolidation else Status.CAPACITY_EXCEEDED
        )
        return Decision(status=status, message=plan.message)
    events = tuple(
        ev.MemoryRemoved(
            stream=doc.stream, at=command.at, entry_id=e.id, reason=RemovalReason.EVICTED
        )
        for e in plan.evict
    )
    return events, plan.evict


def _own_usage(
    doc: DocumentState, scope: SessionScope, namespace: str | None, replacing: MemoryEntry | None
) -> int:
    """Characters of the own rows that count against the limit, less `replacing` (as
    `plan_capacity` counts them), from the index: the global targets budget per namespace;
    the project and failure targets' own rows are the groups of no project and of the
    current project that the session owns."""
    if doc.target in (Target.USER, Target.MEMORY):
        groups: tuple[str | None, ...] = (namespace,)
    else:
        groups = tuple({None: None, scope.project: None})
    used = 0
    for group in groups:
        first = doc.index.first(group)
        if first is None or not scope.own(first):
            continue
        used += doc.index.used(group)
        if replacing is not None and doc.index.holds(group, replacing.id):
            used -= len(replacing.text)
    return used


def decide_add(doc: DocumentState, cmd: AddMemory, policy: WritePolicy) -> Decision:
    scope = policy.scope
    text = clean_entry_text(cmd.text)
    problem = (
        _project_problem(cmd.target, scope)
        or entry_text_problem(text)
        or _importance_problem(cmd.importance)
    )
    if problem:
        return Decision(status=Status.INVALID, message=f"Refused: {problem}.")
    gate = _namespace_gate(cmd.target, cmd.namespace, scope)
    if gate:
        return gate
    project = scope.attribution(cmd.target)
    key = normalize_text(text)
    same = same_text(doc, scope, project, cmd.namespace, key)
    if same is not None:
        return Decision(
            status=Status.NOOP,
            message="This exact entry is already saved; nothing was added.",
            entry_id=same.id,
        )
    if not cmd.force and cmd.target is not Target.FAILURE:
        rows = near_candidates(doc, scope, project, cmd.namespace, text, cmd.cosines)
        candidates = near_duplicates(text, [(e.id, e.text) for e in rows], cmd.cosines)
        if candidates:
            listing = "; ".join(f"[{i + 1}] {preview(c.text)}" for i, c in enumerate(candidates))
            return Decision(
                status=Status.NEAR_DUPLICATE,
                message=(
                    "Not saved: similar entries already exist. Use action 'replace' with one of "
                    "them as old_text to update it, add again with force: true if this is a "
                    f"different fact, or drop it. Similar: {listing}"
                ),
                candidates=candidates,
            )
    capacity = capacity_events(
        doc,
        policy,
        adding=len(text),
        replacing=None,
        command=cmd,
        namespace=cmd.namespace,
    )
    if isinstance(capacity, Decision):
        return capacity
    evictions, evicted = capacity
    added = ev.MemoryAdded(
        stream=doc.stream,
        at=cmd.at,
        entry_id=cmd.entry_id,
        target=cmd.target,
        text=text,
        project=project,
        category=_category(cmd.target, cmd.category, None),
        created=cmd.at.date(),
        last_referenced=cmd.at.date(),
        namespace=cmd.namespace,
        importance=cmd.importance,
        kind=cmd.kind,
    )
    note = (
        f" Evicted {len(evicted)} oldest entr{'y' if len(evicted) == 1 else 'ies'}."
        if evicted
        else ""
    )
    return Decision(
        status=Status.ADDED,
        message=f"Saved to {_WHERE[cmd.target] if cmd.namespace is None else cmd.namespace}."
        + note,
        events=stamp(doc.stream, doc.version, (*evictions, added)),
        entry_id=cmd.entry_id,
        evicted=evicted,
    )


def _category(
    target: Target, asked: FailureCategory | None, old: FailureCategory | None
) -> FailureCategory | None:
    if target is not Target.FAILURE:
        return None
    return asked or old or FailureCategory.FAILURE


def _importance_problem(importance: float | None) -> str | None:
    return None if importance is None else importance_problem(importance)


def _owner_policy(policy: WritePolicy, old: MemoryEntry) -> WritePolicy:
    """The policy a replace of `old` is decided under (ADR 0027).

    A row of another project (visible only with projectMemorySharing) stays that project's: the
    new version keeps its attribution, is deduplicated against that project's rows and must
    fit that project's budget. Automatic maintenance never touches another project's rows, so
    there an overflow is refused (no eviction, no consolidation), whatever the strategy.
    """
    scope = policy.scope
    if old.project is None or old.project == scope.project:
        return policy
    return attrs.evolve(
        policy,
        scope=attrs.evolve(scope, project=old.project),
        overflow=OverflowStrategy.REJECT,
    )


def decide_replace(doc: DocumentState, cmd: cmds.ReplaceMemory, policy: WritePolicy) -> Decision:
    scope = policy.scope
    text = clean_entry_text(cmd.text)
    problem = (
        _project_problem(cmd.target, scope)
        or entry_text_problem(text)
        or _importance_problem(cmd.importance)
    )
    if problem:
        return Decision(status=Status.INVALID, message=f"Refused: {problem}.")
    gate = _id_gate(cmd, scope)
    if gate:
        return gate
    located = locate_one(doc, scope, cmd.old_text, cmd.namespace, cmd.old_id)
    if isinstance(located, Decision):
        return located
    old = located
    key = normalize_text(text)
    owner = _owner_policy(policy, old)
    project = owner.scope.attribution(cmd.target)
    category = _category(cmd.target, cmd.category, old.category)
    importance = old.importance if cmd.importance is None else cmd.importance
    kind = old.kind if cmd.kind is None else cmd.kind
    if (
        key == old.key
        and project == old.project
        and category == old.category
        and (importance, kind) == (old.importance, old.kind)
    ):
        return Decision(
            status=Status.NOOP, message="The entry already has this content.", entry_id=old.id
        )
    same = same_text(doc, owner.scope, project, old.namespace, key)
    if same is not None and same.id != old.id:
        merged = ev.MemorySuperseded(
            stream=doc.stream,
            at=cmd.at,
            old_id=old.id,
            by_id=same.id,
            on=cmd.at.date(),
        )
        return Decision(
            status=Status.MERGED,
            message="An entry with this content already exists; the old entry now points to it.",
            events=stamp(doc.stream, doc.version, (merged,)),
            entry_id=same.id,
        )
    capacity = capacity_events(
        doc,
        owner,
        adding=len(text),
        replacing=old,
        command=cmd,
        namespace=old.namespace,
    )
    if isinstance(capacity, Decision):
        return capacity
    evictions, evicted = capacity
    replaced = ev.MemoryReplaced(
        stream=doc.stream,
        at=cmd.at,
        old_id=old.id,
        new_id=cmd.entry_id,
        text=text,
        project=project,
        category=category,
        created=cmd.at.date(),
        last_referenced=cmd.at.date(),
        importance=cmd.importance,
        kind=cmd.kind,
    )
    return Decision(
        status=Status.REPLACED,
        message=f"Replaced the {cmd.target.value} entry; the old text is kept as history.",
        events=stamp(doc.stream, doc.version, (*evictions, replaced)),
        entry_id=cmd.entry_id,
        evicted=evicted,
    )


def decide_remove(doc: DocumentState, cmd: cmds.RemoveMemory, policy: WritePolicy) -> Decision:
    problem = _project_problem(cmd.target, policy.scope)
    if problem:
        return Decision(status=Status.INVALID, message=f"Refused: {problem}.")
    gate = _id_gate(cmd, policy.scope)
    if gate:
        return gate
    located = locate_one(doc, policy.scope, cmd.old_text, cmd.namespace, cmd.old_id)
    if isinstance(located, Decision):
        return located
    removed = ev.MemoryRemoved(
        stream=doc.stream,
        at=cmd.at,
        entry_id=located.id,
        reason=RemovalReason.TOOL,
    )
    return Decision(
        status=Status.REMOVED,
        message=f"Removed the {cmd.target.value} entry.",
        events=stamp(doc.stream, doc.version, (removed,)),
        entry_id=located.id,
    )


def decide(doc: DocumentState, cmd: cmds.MemoryCommand, policy: WritePolicy) -> Decision:
    if doc.target is not cmd.target:
        raise ValueError(f"{type(cmd).__name__} for {cmd.target} given the {doc.target} document")
    match cmd:
        case AddMemory():
            return decide_add(doc, cmd, policy)
        case cmds.ReplaceMemory():
            return decide_replace(doc, cmd, policy)
        case cmds.RemoveMemory():
            return decide_remove(doc, cmd, policy)
