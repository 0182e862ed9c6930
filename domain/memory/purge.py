"""Purging: erasing the text of an entry and of its whole supersede chain (ADR 0026).

`remove` keeps an entry's text in the journal (it can be restored); a purge erases it. The
decision here is pure: given every memory stream's events, find the chain a query names (by id
or by a unique part of any of its versions' texts), then produce

- the *redacted* copies of the earlier events that carry the chain's text (same stream, version,
  tag and ids; `text` blanked, `flagged` cleared) — the one documented exception to "stored
  events are never rewritten";
- one `MemoryPurged` event per stream that holds a version of the chain, appended at its head,
  so that every fold (a replay, a process whose cached state predates the purge, a rebuild
  from the event log) drops the chain's ids.

A chain is closed under every event that links two ids: a replace (old → new), a merge into an
equal entry (`MemorySuperseded`, `MemoryMergedInto` across documents) and a move (same id in
two documents). Purging any member purges every version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import assert_never

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.decide import Decision
from pi_hermes_memory.domain.memory.document import target_of
from pi_hermes_memory.domain.memory.events import Event, as_memory_event, stamp
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.similarity import Candidate
from pi_hermes_memory.domain.status import Status

#: what a purged event's text fields hold afterwards
REDACTED = ""

_Texty = (
    ev.MemoryAdded | ev.MemoryReplaced | ev.MemoryMovedIn | ev.MemoryRetagged | ev.MemoryRestored
)


def text_owner(event: Event) -> str | None:
    """The id whose text `event` carries, or None for an event without entry text."""
    match event := as_memory_event(event):
        case ev.MemoryAdded() | ev.MemoryMovedIn() | ev.MemoryRetagged() | ev.MemoryRestored():
            return event.entry_id
        case ev.MemoryReplaced():
            return event.new_id
        case (
            ev.MemorySuperseded()
            | ev.MemoryRemoved()
            | ev.MemoryReferenced()
            | ev.MemoryMovedOut()
            | ev.MemoryMergedInto()
            | ev.MemoryPurged()
        ):
            return None
        case _:
            assert_never(event)


def _links(event: Event) -> tuple[str, ...]:
    """The ids an event ties into one chain (a move keeps its id, so it needs no link)."""
    match event := as_memory_event(event):
        case ev.MemoryReplaced():
            return (event.old_id, event.new_id)
        case ev.MemorySuperseded():
            return (event.old_id, event.by_id)
        case ev.MemoryMergedInto():
            return (event.entry_id, event.into_id)
        case (
            ev.MemoryAdded()
            | ev.MemoryRemoved()
            | ev.MemoryReferenced()
            | ev.MemoryMovedOut()
            | ev.MemoryMovedIn()
            | ev.MemoryRetagged()
            | ev.MemoryRestored()
            | ev.MemoryPurged()
        ):
            return ()
        case _:
            assert_never(event)


def _mentions(event: Event) -> tuple[str, ...]:
    """Every entry id an event names."""
    owner = text_owner(event)
    ids = list(_links(event))
    if owner is not None:
        ids.append(owner)
    entry_id = getattr(event, "entry_id", None)
    if isinstance(entry_id, str):
        ids.append(entry_id)
    if isinstance(event, ev.MemoryPurged):
        ids.extend(event.entry_ids)
    return tuple(ids)


class _Chains:
    """Union-find over entry ids."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        parent = self._parent.setdefault(x, x)
        while parent != x:
            grand = self._parent.setdefault(parent, parent)
            self._parent[x] = grand
            x, parent = parent, grand
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._parent[ra] = rb


@attrs.frozen(kw_only=True)
class Version:
    """One version of an entry as the journal last described it (text, attribution)."""

    entry: MemoryEntry
    stream: str
    order: tuple[datetime, int]  # when its last describing event happened (newest = largest)


@attrs.frozen(kw_only=True)
class PurgeIndex:
    """Every entry version that ever held text, with the chain each belongs to."""

    versions: Mapping[tuple[str, str], Version]  # (entry id, stream): a move keeps the id
    chain_of: Mapping[str, str]  # entry id -> chain root
    purged: frozenset[str]  # ids already purged (a MemoryPurged names them)
    members: Mapping[str, frozenset[str]]  # chain root -> its ids

    def chain(self, entry_id: str) -> frozenset[str]:
        return self.members.get(self.chain_of.get(entry_id, ""), frozenset())


def index(streams: Mapping[str, Sequence[Event]]) -> PurgeIndex:
    """Read every memory stream's events once (O(events))."""
    chains = _Chains()
    versions: dict[tuple[str, str], Version] = {}
    namespaces: dict[str, str | None] = {}
    purged: set[str] = set()
    for stream in sorted(streams):
        for event in streams[stream]:
            for a, b in zip(_links(event), _links(event)[1:], strict=False):
                chains.union(a, b)
            for entry_id in _mentions(event):
                chains.find(entry_id)
            if isinstance(event, ev.MemoryPurged):
                purged.update(event.entry_ids)
                continue
            if isinstance(event, ev.MemoryReplaced):
                namespaces[event.new_id] = namespaces.get(event.old_id)
            owner = text_owner(event)
            if owner is None or not isinstance(event, _Texty):
                continue
            namespace = getattr(event, "namespace", namespaces.get(owner))
            namespaces[owner] = namespace
            versions[(owner, stream)] = Version(
                entry=MemoryEntry(
                    id=owner,
                    target=target_of(stream),
                    text=event.text,
                    project=event.project,
                    category=event.category,
                    created=event.created,
                    last_referenced=event.last_referenced,
                    namespace=None if isinstance(event, ev.MemoryMovedIn) else namespace,
                ),
                stream=stream,
                order=(event.at, event.version),
            )
    chain_of = {i: chains.find(i) for i in list(chains._parent)}
    members: dict[str, set[str]] = {}
    for entry_id, root in chain_of.items():
        members.setdefault(root, set()).add(entry_id)
    return PurgeIndex(
        versions={k: v for k, v in versions.items() if k[0] not in purged},
        chain_of=chain_of,
        purged=frozenset(purged),
        members={root: frozenset(ids) for root, ids in members.items()},
    )


@attrs.frozen(kw_only=True)
class PurgePlan:
    """What a purge writes: redacted copies of earlier events and one MemoryPurged per stream."""

    ids: frozenset[str]
    redacted: tuple[Event, ...]
    purges: Mapping[str, ev.MemoryPurged]
    newest: MemoryEntry  # the chain's newest version (for the message)
    #: the texts erased (kept in memory only, never stored: callers may check leftover copies)
    texts: tuple[str, ...]

    @property
    def versions(self) -> int:
        return len(self.ids)


def select(
    idx: PurgeIndex, target: Target, query: str, scope: SessionScope
) -> frozenset[str] | Decision:
    """The chain `query` names in `target`: an exact id, else the chains of every version whose
    text contains it (case-insensitive) among those this session may see. A Decision when it
    names none (`not_found`, also for an id already purged) or several chains (`ambiguous`)."""
    wanted = query.strip()
    mine = [v for v in idx.versions.values() if v.entry.target is target and scope.visible(v.entry)]
    by_id = [v for v in mine if v.entry.id == wanted]
    if by_id:
        return idx.chain(wanted)
    if wanted in idx.purged:
        return Decision(
            status=Status.NOT_FOUND,
            message=f"The entry {wanted} was already purged; nothing is left to purge.",
        )
    needle = wanted.casefold()
    hits = [v for v in mine if needle and needle in v.entry.text.casefold()]
    roots: dict[str, Version] = {}
    for v in hits:
        root = idx.chain_of[v.entry.id]
        newest = newest_version(idx, idx.chain(v.entry.id))
        roots.setdefault(root, newest)
    if not roots:
        return Decision(
            status=Status.NOT_FOUND,
            message=f"No {target.value} entry (active, removed or history) matches {shown(query)}; "
            "nothing was purged.",
        )
    if len(roots) > 1:
        found = sorted(roots.values(), key=lambda v: v.order, reverse=True)
        return Decision(
            status=Status.AMBIGUOUS,
            message=f"{len(found)} entries match {shown(query)}; name one by its id (or a longer "
            "part of its text). Nothing was purged.",
            matches=tuple(v.entry.id for v in found),
            candidates=tuple(
                Candidate(entry_id=v.entry.id, text=v.entry.text, score=1.0, basis="purge")
                for v in found
            ),
        )
    return idx.chain(hits[0].entry.id)


def newest_version(idx: PurgeIndex, ids: Iterable[str]) -> Version:
    wanted = set(ids)
    return max((v for k, v in idx.versions.items() if k[0] in wanted), key=lambda v: v.order)


def redact(event: Event) -> Event:
    """`event` with its entry text blanked (and the scan finding, which may quote it)."""
    if not isinstance(event, _Texty):
        return event
    return attrs.evolve(event, text=REDACTED, flagged=None)


def plan_purge(
    streams: Mapping[str, Sequence[Event]],
    idx: PurgeIndex,
    ids: frozenset[str],
    at: datetime,
) -> PurgePlan:
    """The events that erase the chain `ids` from every stream that holds one of its versions;
    `streams` are complete (from version 1) and end at each stream's head."""
    redacted: list[Event] = []
    purges: dict[str, ev.MemoryPurged] = {}
    texts: list[str] = []
    for stream in sorted(streams):
        events = streams[stream]
        here: set[str] = set()
        for event in events:
            named = set(_mentions(event)) & ids
            if not named:
                continue
            here |= named
            owner = text_owner(event)
            if (
                owner in ids
                and isinstance(event, _Texty)
                and (event.text != REDACTED or event.flagged is not None)
            ):
                texts.append(event.text)
                redacted.append(redact(event))
        if here:
            head = events[-1].version if events else 0
            (purges[stream],) = stamp(
                stream,
                head,
                (ev.MemoryPurged(stream=stream, at=at, entry_ids=tuple(sorted(here))),),
            )
    return PurgePlan(
        ids=ids,
        redacted=tuple(redacted),
        purges=purges,
        newest=newest_version(idx, ids).entry,
        texts=tuple(dict.fromkeys(t for t in texts if t)),
    )
