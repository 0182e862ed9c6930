"""The results of calls other than one write (ADR 0111): a batch of writes, a listed entry, a
tool's outcome. `pi_hermes_memory.results` hands them out by name; they live here so that a
process that writes one entry (a CLI `add`) does not build their classes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.domain.status import Status

if TYPE_CHECKING:
    from pi_hermes_memory.results import WriteResult

__all__ = ["BatchResult", "EntryView", "ToolOutcome"]


@attrs.frozen(kw_only=True)
class BatchResult:
    success: bool
    status: Status
    message: str
    results: tuple[WriteResult, ...]
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class EntryView:
    id: str
    target: str
    text: str
    project: str | None
    category: str | None
    created: date
    last_referenced: date
    superseded_by: str | None = None
    superseded_at: date | None = None
    scope: str = "global"  # memory/user rows: global, agent:<id>, custom:<name>, user:<id>
    #: why a hand-edited entry failed the content scan; it stays out of search until fixed
    flagged: str | None = None
    #: the second seed's fields (ADR 0045); None: not set (importance then ranks as 0.7)
    importance: float | None = None
    kind: str | None = None
    #: ADR 0074: `id` is the memory's stable id, the same for all its versions; this version
    #: is number `version` (1 the first) with its own id `version_id` (what `superseded_by`
    #: names); None only for a view built without them
    version: int | None = None
    version_id: str | None = None


def _copied(payload: Mapping[str, Any]) -> dict[str, Any]:
    return dict(payload)


@attrs.frozen
class ToolOutcome(Mapping[str, Any]):
    """The outcome of a call that runs a tool (`Memory.interview`, `Memory.learn_skill`,
    `AgentSession.learn_skill`): `success`, `status` and `message` typed, and the tool's JSON
    object as `to_json()`. It is also a read-only mapping of that object (`outcome["skill"]`),
    so code written against the JSON keeps working."""

    payload: Mapping[str, Any] = attrs.field(converter=_copied)

    @property
    def success(self) -> bool:
        return bool(self.payload.get("success"))

    @property
    def status(self) -> Status:
        return Status(self.payload["status"])

    @property
    def message(self) -> str:
        return str(self.payload.get("message", ""))

    def to_json(self) -> dict[str, Any]:
        return dict(self.payload)

    def __getitem__(self, key: str) -> Any:
        return self.payload[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.payload)

    def __len__(self) -> int:
        return len(self.payload)
