"""Importing hand edits of a Markdown document as events.

Markdown is the human-facing truth. When a file no longer holds what was last rendered into it,
the difference between that rendered state (`base`) and the parsed file becomes events appended
after the current journal head, so nothing a person wrote is overwritten or lost:

- an entry whose text is unchanged is kept (metadata edits and reordering are not imported);
- an entry whose text changed but whose `created` (and project) still match a vanished entry
  is a revision: the old row becomes superseded history (origin ``markdown``);
- an entry that vanished is removed; a new one is added.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

import attrs
from pi_hermes_memory.domain.document import MemoryDocument, fold
from pi_hermes_memory.domain.events import (
    Event,
    MemoryAdded,
    MemoryRemoved,
    MemoryReplaced,
    MemorySuperseded,
    Origin,
    RemovalReason,
)
from pi_hermes_memory.domain.markdown_doc import ParsedDocument, ParsedEntry
from pi_hermes_memory.domain.model import (
    SEPARATOR_LINE,
    FailureCategory,
    MemoryEntry,
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


def _category(
    target: Target, raw: str | None, fallback: FailureCategory | None
) -> FailureCategory | None:
    if target is not Target.FAILURE:
        return None
    if raw is not None and raw in FailureCategory._value2member_map_:
        return FailureCategory(raw)
    return fallback or FailureCategory.FAILURE


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


def reconcile(
    *,
    base: MemoryDocument,
    parsed: ParsedDocument,
    head: MemoryDocument,
    new_id: Callable[[], str],
    at: datetime,
) -> Reconciliation:
    target = head.target
    today: date = at.date()
    unmatched_base: dict[str, list[MemoryEntry]] = {}
    for entry in base.active:
        unmatched_base.setdefault(entry.key, []).append(entry)
    new_entries: list[ParsedEntry] = []
    for p in _split_on_separators(parsed.entries):
        bucket = unmatched_base.get(normalize_text(clean_entry_text(p.text)))
        if bucket:
            bucket.pop(0)
        else:
            new_entries.append(p)
    vanished = [e for bucket in unmatched_base.values() for e in bucket]
    vanished.sort(key=lambda e: base.active.index(e))

    events: list[Event] = []
    warnings: list[str] = list(parsed.warnings)
    state = head
    counts = {"added": 0, "revised": 0, "removed": 0}

    def emit(event: Event) -> None:
        nonlocal state
        events.append(event)
        state = fold(state, (event,))

    def active_same(key: str, project: str | None, namespace: str | None) -> MemoryEntry | None:
        for e in state.active:
            if e.key == key and e.project == project and e.namespace == namespace:
                return e
        return None

    def is_active(entry_id: str) -> bool:
        return any(e.id == entry_id for e in state.active)

    def version() -> int:
        return state.version + 1

    for p in new_entries:
        text = clean_entry_text(p.text)
        key = normalize_text(text)
        project = _project(target, p.project)
        namespace = p.namespace if namespace_problem(p.namespace, target) is None else None
        revised_from = next(
            (
                b
                for b in vanished
                if p.created is not None
                and b.created == p.created
                and b.project == project
                and b.namespace == namespace
            ),
            None,
        )
        if revised_from is not None:
            vanished.remove(revised_from)
        existing = active_same(key, project, namespace)
        if revised_from is not None and is_active(revised_from.id):
            if existing is not None:
                emit(
                    MemorySuperseded(
                        stream=state.stream,
                        version=version(),
                        at=at,
                        old_id=revised_from.id,
                        by_id=existing.id,
                        on=today,
                        origin=Origin.MARKDOWN,
                    )
                )
            else:
                emit(
                    MemoryReplaced(
                        stream=state.stream,
                        version=version(),
                        at=at,
                        old_id=revised_from.id,
                        new_id=new_id(),
                        text=text,
                        project=project,
                        category=_category(target, p.category, revised_from.category),
                        created=revised_from.created,
                        last_referenced=p.last or today,
                        origin=Origin.MARKDOWN,
                    )
                )
            counts["revised"] += 1
            continue
        if existing is not None:
            warnings.append(
                f"{target.value}: an entry in the file repeats an active entry of the same "
                "scope; it is kept once"
            )
            continue
        created = p.created or today
        if namespace != p.namespace:
            warnings.append(
                f"{target.value}: scope={p.namespace} does not belong in this file; the entry "
                "was imported into the global layer"
            )
        emit(
            MemoryAdded(
                stream=state.stream,
                version=version(),
                at=at,
                entry_id=new_id(),
                target=target,
                text=text,
                project=project,
                category=_category(target, p.category, None),
                created=created,
                last_referenced=max(p.last or created, created),
                origin=Origin.MARKDOWN,
                namespace=namespace,
            )
        )
        counts["added"] += 1

    for b in vanished:
        if is_active(b.id):
            emit(
                MemoryRemoved(
                    stream=state.stream,
                    version=version(),
                    at=at,
                    entry_id=b.id,
                    reason=RemovalReason.MARKDOWN,
                )
            )
            counts["removed"] += 1
    return Reconciliation(events=tuple(events), warnings=tuple(warnings), **counts)
