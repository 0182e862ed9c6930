"""Importing hand edits of a Markdown document as events: a three-way merge (ADR 0022).

A person edits a replica of the journal. What they changed is the difference between the version
their editor loaded (`base`: the journal folded to the version named in the file's version line)
and the file they saved (`parsed`); that change is applied on top of the current state (`head`),
which may hold writes the editor never saw. So:

- an entry of `base` that the file no longer holds was deleted by the person: removed from
  `head` if it is still active there (removals are undoable: `restore`);
- an entry the agent added after `base` is not in `base`, so its absence from the file means
  nothing: it survives;
- an entry of the file that `base` lacks was added by the person. If its text changed but its
  `created` date (and project, scope) match a vanished `base` entry, it is a revision: the old
  row becomes superseded history. If the agent changed or removed that entry meanwhile, both
  changes are kept (the person's text is added) and a warning says so;
- an entry whose text is unchanged but whose metadata comment now says another `project=`,
  `created=`, `scope=`, `category=`, `importance=` or `kind=` is retagged (same id, same text);
- text the person wrote is scanned like a tool write; a finding does not refuse the text (it is
  the person's file) but flags the entry, which keeps it out of search until it is fixed.

Linear in the sizes of the three documents: every lookup is a dict, no state is refolded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import assert_never

import attrs
from pi_hermes_memory.domain.memory import events as ev
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.events import (
    Event,
    Origin,
    RemovalReason,
    as_memory_event,
    stamp,
)
from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument, ParsedEntry
from pi_hermes_memory.domain.memory.model import (
    SEPARATOR_LINE,
    FailureCategory,
    MemoryEntry,
    MemoryKind,
    Target,
    clean_entry_text,
    namespace_problem,
    normalize_text,
)


@attrs.frozen(kw_only=True)
class Reconciliation:
    events: tuple[Event, ...]
    warnings: tuple[str, ...]
    added: int = 0
    revised: int = 0
    removed: int = 0
    retagged: int = 0
    flagged: int = 0


def _category(
    target: Target, raw: str | None, fallback: FailureCategory | None
) -> FailureCategory | None:
    if target is not Target.FAILURE:
        return None
    if raw is not None and raw in FailureCategory._value2member_map_:
        return FailureCategory(raw)
    return fallback or FailureCategory.FAILURE


def _kind(raw: str | None) -> MemoryKind | None:
    """The file's `kind=` (the parser dropped an invalid one); None: keep the stored value."""
    return MemoryKind(raw) if raw is not None else None


def _project(target: Target, raw: str | None) -> str | None:
    return raw if target in (Target.PROJECT, Target.FAILURE) else None


def _split_on_separators(entries: tuple[ParsedEntry, ...]) -> list[ParsedEntry]:
    """A `§` line inside a parsed text (e.g. after CR-only line breaks) starts a new entry."""
    out: list[ParsedEntry] = []
    for p in entries:
        text = clean_entry_text(p.text)
        pieces = [""]
        for line in text.split("\n"):
            if line.strip() == SEPARATOR_LINE:
                pieces.append("")
            else:
                pieces[-1] += ("\n" if pieces[-1] else "") + line
        pieces = [clean_entry_text(x) for x in pieces if x.strip()]
        if len(pieces) == 1 and pieces[0] == p.text:
            out.append(p)
        else:
            out.extend(attrs.evolve(p, text=piece) for piece in pieces)
    return out


def scan_finding(text: str) -> str | None:
    """Why hand-written `text` must stay out of search (None: it passes the content scan)."""
    from pi_hermes_memory.domain.scanning.scanner import scan  # many patterns: loaded when used

    result = scan(text)
    return result.message() if result.blocked else None


_Slot = tuple[str, str | None, str | None]  # (normalized text, project, namespace)


class _Merge:
    """The events of one import, emitted against a light index of `head` (no refolding)."""

    def __init__(
        self, head: MemoryDocument, new_id: Callable[[], str], at: datetime, today: date
    ) -> None:
        self.stream = head.stream
        self.target = head.target
        self.new_id = new_id
        self.at = at
        self.today = today
        self.active: dict[str, MemoryEntry] = {e.id: e for e in head.active}
        self.slots: dict[_Slot, str] = {}
        for e in head.active:
            self.slots.setdefault((e.key, e.project, e.namespace), e.id)
        self.events: list[Event] = []
        self.warnings: list[str] = []
        self.counts = {"added": 0, "revised": 0, "removed": 0, "retagged": 0, "flagged": 0}

    def holder(self, slot: _Slot) -> str | None:
        entry_id = self.slots.get(slot)
        return entry_id if entry_id in self.active else None

    def _retire(self, entry: MemoryEntry) -> None:
        del self.active[entry.id]
        slot = (entry.key, entry.project, entry.namespace)
        if self.slots.get(slot) == entry.id:
            del self.slots[slot]

    def _activate(self, entry: MemoryEntry) -> None:
        self.active[entry.id] = entry
        self.slots[(entry.key, entry.project, entry.namespace)] = entry.id

    def _flag(self, text: str) -> str | None:
        finding = scan_finding(text)
        if finding is not None:
            self.counts["flagged"] += 1
            self.warnings.append(
                f"{self.target.value}: a hand-edited entry fails the content scan and is kept "
                f"out of search until its text is fixed: {finding}"
            )
        return finding

    def add(self, p: ParsedEntry, text: str, project: str | None, namespace: str | None) -> None:
        created = p.created or self.today
        entry = MemoryEntry(
            id=self.new_id(),
            target=self.target,
            text=text,
            project=project,
            category=_category(self.target, p.category, None),
            created=created,
            last_referenced=max(p.last or created, created),
            namespace=namespace,
            flagged=self._flag(text),
            importance=p.importance,
            kind=_kind(p.kind),
        )
        self.events.append(
            ev.MemoryAdded(
                stream=self.stream,
                at=self.at,
                entry_id=entry.id,
                target=self.target,
                text=entry.text,
                project=entry.project,
                category=entry.category,
                created=entry.created,
                last_referenced=entry.last_referenced,
                origin=Origin.MARKDOWN,
                namespace=entry.namespace,
                flagged=entry.flagged,
                importance=entry.importance,
                kind=entry.kind,
            )
        )
        self._activate(entry)
        self.counts["added"] += 1

    def revise(self, old: MemoryEntry, p: ParsedEntry, text: str, project: str | None) -> None:
        existing = self.holder((normalize_text(text), project, old.namespace))
        if existing is not None:  # the new text equals another active entry: merge into it
            self.events.append(
                ev.MemorySuperseded(
                    stream=self.stream,
                    at=self.at,
                    old_id=old.id,
                    by_id=existing,
                    on=self.today,
                    origin=Origin.MARKDOWN,
                )
            )
            self._retire(old)
        else:
            new = attrs.evolve(
                old,
                id=self.new_id(),
                text=text,
                project=project,
                category=_category(self.target, p.category, old.category),
                last_referenced=p.last or self.today,
                flagged=self._flag(text),
                importance=old.importance if p.importance is None else p.importance,
                kind=_kind(p.kind) or old.kind,
            )
            self.events.append(
                ev.MemoryReplaced(
                    stream=self.stream,
                    at=self.at,
                    old_id=old.id,
                    new_id=new.id,
                    text=new.text,
                    project=new.project,
                    category=new.category,
                    created=new.created,
                    last_referenced=new.last_referenced,
                    origin=Origin.MARKDOWN,
                    flagged=new.flagged,
                    importance=p.importance,
                    kind=_kind(p.kind),
                )
            )
            self._retire(old)
            self._activate(new)
        self.counts["revised"] += 1

    def retag(self, entry: MemoryEntry, p: ParsedEntry) -> None:
        """Import a metadata-only edit of an unchanged entry (project, created, scope, category,
        importance, kind: ADR 0045)."""
        project = _project(self.target, p.project)
        namespace = p.namespace
        if namespace_problem(namespace, self.target) is not None:
            self.warnings.append(
                f"{self.target.value}: scope={namespace} does not belong in this file; the "
                "entry keeps its scope"
            )
            namespace = entry.namespace
        created = p.created or entry.created
        category = _category(self.target, p.category, entry.category)
        importance = entry.importance if p.importance is None else p.importance
        kind = _kind(p.kind) or entry.kind
        if (project, namespace, created, category, importance, kind) == (
            entry.project,
            entry.namespace,
            entry.created,
            entry.category,
            entry.importance,
            entry.kind,
        ):
            return
        existing = self.holder((entry.key, project, namespace))
        if existing is not None and existing != entry.id:
            # the new attribution already holds this text: the edited row merges into it
            self.events.append(
                ev.MemorySuperseded(
                    stream=self.stream,
                    at=self.at,
                    old_id=entry.id,
                    by_id=existing,
                    on=self.today,
                    origin=Origin.MARKDOWN,
                )
            )
            self._retire(entry)
            self.counts["retagged"] += 1
            return
        retagged = attrs.evolve(
            entry,
            project=project,
            namespace=namespace,
            created=created,
            category=category,
            importance=importance,
            kind=kind,
        )
        self.events.append(
            ev.MemoryRetagged(
                stream=self.stream,
                at=self.at,
                entry_id=entry.id,
                text=entry.text,
                project=project,
                category=category,
                created=created,
                last_referenced=entry.last_referenced,
                namespace=namespace,
                flagged=entry.flagged,
                importance=None if importance == entry.importance else importance,
                kind=None if kind == entry.kind else kind,
            )
        )
        self._retire(entry)
        self._activate(retagged)
        self.counts["retagged"] += 1

    def remove(self, entry_id: str) -> None:
        self.events.append(
            ev.MemoryRemoved(
                stream=self.stream,
                at=self.at,
                entry_id=entry_id,
                reason=RemovalReason.MARKDOWN,
            )
        )
        self._retire(self.active[entry_id])
        self.counts["removed"] += 1


def _gone_since_base(events: Iterable[Event], active: dict[str, MemoryEntry]) -> set[str]:
    """Normalized texts that entered the document after the base and are not active now."""
    entered: dict[str, str] = {}
    for any_event in events:
        match event := as_memory_event(any_event):
            case ev.MemoryAdded() | ev.MemoryRestored() | ev.MemoryMovedIn():
                entered[event.entry_id] = event.text
            case ev.MemoryReplaced():
                entered[event.new_id] = event.text
            case (
                ev.MemorySuperseded()
                | ev.MemoryRemoved()
                | ev.MemoryReferenced()
                | ev.MemoryMovedOut()
                | ev.MemoryMergedInto()
                | ev.MemoryRetagged()
                | ev.MemoryPurged()
            ):
                pass
            case _:
                assert_never(event)
    live = {e.key for e in active.values()}
    return {key for key in map(normalize_text, entered.values()) if key not in live}


#: ids a warning names at most
_NAMED_IDS = 5


def _kept_unseen(
    base: MemoryDocument, parsed: ParsedDocument, head: MemoryDocument, merge: _Merge
) -> str | None:
    """A warning for the entries written after `base` that the saved file lacks: the merge keeps
    them (that buffer never showed them), but the same file is what a person saves who deleted
    them from an up-to-date buffer, so the keep is said, with the command that deletes them."""
    in_base = {e.id for e in base.active}
    in_file = {
        normalize_text(clean_entry_text(p.text)) for p in _split_on_separators(parsed.entries)
    }
    ids = [
        e.stable_id
        for e in head.active
        if e.id not in in_base and e.key not in in_file and e.id in merge.active
    ]
    if not ids:
        return None
    named = ", ".join(ids[:_NAMED_IDS]) + (
        f" and {len(ids) - _NAMED_IDS:,} more" if len(ids) > _NAMED_IDS else ""
    )
    first = ids[0]
    return (
        f"{merge.target.value}: the saved file lacks {len(ids):,} entr"
        f"{'y' if len(ids) == 1 else 'ies'} written after the version it was loaded from "
        f"({named}); kept, since that buffer never showed "
        f"{'it' if len(ids) == 1 else 'them'}. If you meant to delete "
        f"{'it' if len(ids) == 1 else 'them'}, run `pi-hermes-memory delete {first}`"
        f"{' (one id at a time)' if len(ids) > 1 else ''}"
    )


def _has_metadata(p: ParsedEntry) -> bool:
    # our comment always carries created=; without it the person removed the comment, which
    # says nothing about the entry's attribution
    return p.created is not None


def reconcile(
    *,
    base: MemoryDocument,
    parsed: ParsedDocument,
    head: MemoryDocument,
    new_id: Callable[[], str],
    at: datetime,
    since_base: Iterable[Event] = (),
    later_render: bool = True,
) -> Reconciliation:
    """The events that apply the person's change (`base` → `parsed`) on top of `head`.

    `since_base`: the journal's events after `base` up to `head`. A text that appeared there
    and is no longer active (the agent removed or replaced it after an earlier save of the same
    buffer) is not brought back by a file that still shows it. `later_render`: whether a render
    newer than `base` was written to the file, so that a buffer may have shown entries written
    after `base` (False: the file lagged the journal, and the entries it lacks were never in it,
    so keeping them needs no word)."""
    target = head.target
    merge = _Merge(head, new_id, at, at.date())
    merge.warnings.extend(parsed.warnings)

    unmatched: dict[str, list[MemoryEntry]] = {}
    for entry in base.active:
        unmatched.setdefault(entry.key, []).append(entry)
    kept: list[tuple[MemoryEntry, ParsedEntry]] = []
    new_entries: list[ParsedEntry] = []
    for p in _split_on_separators(parsed.entries):
        bucket = unmatched.get(normalize_text(clean_entry_text(p.text)))
        if bucket:
            kept.append((bucket.pop(0), p))
        else:
            new_entries.append(p)
    kept_ids = {b.id for b, _ in kept}
    vanished = [e for e in base.active if e.id not in kept_ids]
    # a changed text keeps its created date (and project, scope): the revision candidates
    by_origin: dict[tuple[date, str | None, str | None], list[MemoryEntry]] = {}
    for b in vanished:
        by_origin.setdefault((b.created, b.project, b.namespace), []).append(b)
    revised: set[str] = set()
    gone = _gone_since_base(since_base, merge.active)

    for b, p in kept:
        current = merge.active.get(b.id)
        if current is not None and _has_metadata(p):
            merge.retag(current, p)

    for p in new_entries:
        text = clean_entry_text(p.text)
        project = _project(target, p.project)
        namespace = p.namespace if namespace_problem(p.namespace, target) is None else None
        candidates = by_origin.get((p.created, project, namespace)) if p.created else None
        old = candidates.pop(0) if candidates else None
        if old is not None:
            revised.add(old.id)
            current = merge.active.get(old.id)
            if current is not None:
                merge.revise(current, p, text, project)
                continue
            merge.warnings.append(
                f"{target.value}: an entry edited by hand was also changed or removed by the "
                "agent since the file was loaded; both versions are kept"
            )
        if normalize_text(text) in gone:
            merge.warnings.append(
                f"{target.value}: an entry in the file was removed or replaced after the file "
                "was loaded; it was not brought back (restore brings a removed entry back)"
            )
            continue
        if merge.holder((normalize_text(text), project, namespace)) is not None:
            merge.warnings.append(
                f"{target.value}: an entry in the file repeats an active entry of the same "
                "scope; it is kept once"
            )
            continue
        if namespace != p.namespace:
            merge.warnings.append(
                f"{target.value}: scope={p.namespace} does not belong in this file; the entry "
                "was imported into the global layer"
            )
        merge.add(p, text, project, namespace)

    for b in vanished:
        if b.id not in revised and b.id in merge.active:
            merge.remove(b.id)
    # only a file the person changed was saved by them: one that shows the base unchanged is a
    # render that lags the journal (a large file, a killed writer, a copied store), not a save
    edited = new_entries or vanished or merge.counts["retagged"]
    if later_render and edited and (unseen := _kept_unseen(base, parsed, head, merge)):
        merge.warnings.append(unseen)
    return Reconciliation(
        events=stamp(head.stream, head.version, merge.events),
        warnings=tuple(merge.warnings),
        **merge.counts,
    )
