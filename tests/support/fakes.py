"""Deterministic clock and ids for tests (real adapters of the Clock/IdFactory ports)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class StepClock:
    """Starts at `start` and advances by `step` on every call to now()."""

    def __init__(self, start: datetime | None = None, step: timedelta = timedelta(seconds=1)):
        self.current = start or datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
        self.step = step

    def now(self) -> datetime:
        value = self.current
        self.current += self.step
        return value

    def advance(self, delta: timedelta) -> None:
        self.current += delta


class SequentialIds:
    def __init__(self, prefix: str = "e") -> None:
        self.prefix = prefix
        self.n = 0

    def new_id(self) -> str:
        self.n += 1
        return f"{self.prefix}{self.n:06d}"
