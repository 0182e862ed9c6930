"""The skills as a kind of stream for the write pipeline (ADR 0030): one stream per skill,
replicated as its folder (SKILL.md plus support files) packed into one byte string."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import cattrs
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.skills.bundle import pack, unpack
from pi_hermes_memory.domain.skills.events import SKILL_EVENT_TYPES, SkillEvent
from pi_hermes_memory.domain.skills.hand_edits import import_folder, person_edit
from pi_hermes_memory.domain.skills.skill import SkillState, fold
from pi_hermes_memory.domain.skills.skill_md import SKILL_FILE, render_skill
from pi_hermes_memory.errors import CorruptSnapshot, MarkdownUnreadable, SkillFolderProblem
from pi_hermes_memory.journal.pipeline import Imported, Replicas
from pi_hermes_memory.ports.store import Clock, UnitOfWork

__all__ = ["SkillDocuments"]

_converter = cattrs.Converter(forbid_extra_keys=True)
_converter.register_unstructure_hook(datetime, lambda d: d.isoformat())
_converter.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))


class SkillDocuments:
    """`DocumentKind[SkillState]`."""

    def __init__(self, *, replicas: Replicas, clock: Clock) -> None:
        self.replicas = replicas
        self._clock = clock

    def empty(self, stream: str) -> SkillState:
        return SkillState.empty(stream)

    def fold(self, state: SkillState, events: Sequence[Event]) -> SkillState:
        return fold(state, [_skill_event(e) for e in events])

    def encode(self, state: SkillState) -> str:
        return json.dumps(_converter.unstructure(state), ensure_ascii=False)

    def decode(self, data: str) -> SkillState:
        try:
            return _converter.structure(json.loads(data), SkillState)
        except (ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
            raise CorruptSnapshot(f"a skill snapshot does not decode: {exc}") from exc

    def render(self, state: SkillState, store: str) -> bytes:
        """The packed folder: SKILL.md and the support files; nothing for no skill."""
        if not state.exists:
            return b""
        files = {path: content.encode("utf-8") for path, content in state.files}
        files[SKILL_FILE] = render_skill(state).encode("utf-8")
        return pack(files)

    def import_edit(
        self,
        uow: UnitOfWork,
        state: SkillState,
        data: bytes,
        recorded: tuple[int, str] | None,
        warnings: list[str],
    ) -> Imported:
        where = self.replicas.describe(state.stream)
        try:
            edit = person_edit(self._base(uow, state, recorded), state, unpack(data))
            if edit is None:
                return Imported(keep=False)  # rendered again from the journal
            result = import_folder(state, edit, at=self._clock.now(), where=where)
        except (SkillFolderProblem, InvariantViolation) as exc:
            raise MarkdownUnreadable(str(exc)) from exc
        warnings.extend(result.warnings)
        details = (("stream", state.stream), ("events", len(result.events)))
        return Imported(events=result.events, details=details)

    def _base(
        self, uow: UnitOfWork, state: SkillState, recorded: tuple[int, str] | None
    ) -> SkillState:
        """What the folder held when the ledger last recorded it: the state at the recorded
        version (a render, or a hand edit imported as that version), `state` when the render
        is not behind the journal, no skill when it was never recorded."""
        if recorded is None:
            return self.empty(state.stream)
        if recorded[0] >= state.version:
            return state
        return self.fold(self.empty(state.stream), uow.journal.read(state.stream, upto=recorded[0]))


def _skill_event(event: Event) -> SkillEvent:
    if not isinstance(event, SKILL_EVENT_TYPES):
        raise InvariantViolation(f"{type(event).__name__} is not a skill event")
    return event  # type: ignore[return-value]
