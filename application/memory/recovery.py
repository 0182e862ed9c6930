"""The result of `pi_hermes_memory.recover` (ADR 0023)."""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.status import Status

__all__ = ["RecoveryReport"]


@attrs.frozen(kw_only=True)
class RecoveryReport:
    """What `recover` did.

    status: `healthy` (the database was sound; nothing was moved), `recovered` (the damaged
    database was moved aside and rebuilt from the event log), `rebuilt-from-markdown` (moved
    aside, but no event log held events: the entries came back from Markdown, without their
    history). `moved_aside`: the new names of the damaged files (never deleted).
    `log_rewritten`: the database was sound but its event log had damaged lines, and the log
    was written anew from the database (ADR 0118; the old log is among `moved_aside`).
    """

    status: Status
    database: str
    reason: str | None = None
    moved_aside: tuple[str, ...] = ()
    events: int = 0
    entries: int = 0
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    log_rewritten: bool = False

    @property
    def success(self) -> bool:
        return True

    @property
    def message(self) -> str:
        moved = ", ".join(self.moved_aside) or "nothing"
        if self.status == Status.HEALTHY and self.log_rewritten:
            return (
                f"{self.database} is sound; its event log had damaged lines, so the log was "
                f"written anew from the database ({self.events} events). The old log was kept "
                f"as {moved}."
            )
        if self.status == Status.HEALTHY:
            return f"{self.database} is sound; nothing to recover."
        if self.status == Status.RECOVERED:
            return (
                f"Recovered {self.database} from the event log: {self.events} events, "
                f"{self.entries} entries with their history and ids. The damaged files were "
                f"moved aside ({moved})."
            )
        return (
            f"Rebuilt {self.database} from the Markdown files (no event log held events, so "
            f"supersede history could not be recovered). The damaged files were moved aside "
            f"({moved})."
        )

    def to_json(self) -> dict[str, object]:
        return {"success": self.success, "message": self.message, **attrs.asdict(self)}
