"""The backend bundle handed to the per-port factories of `pi_hermes_memory.open` (ADR 0057).

Every storage-side keyword of `open(...)` (``storage``, ``search_index``, ``vector_store``,
``session_index``, ``session_source``, ``skill_telemetry``) takes either an instance (it is
used as it is) or a
*factory*: a callable that receives the `Backend` (the default parts of the configured
backend, built from the configuration) and returns the part to use instead. Only that part is
replaced; every other default stays::

    pi_hermes_memory.open(vector_store=lambda backend: MyStore(backend.rows))
    pi_hermes_memory.open(storage=lambda backend: Audited(backend.storage))

A value is a factory exactly when it is callable; no port's adapter is callable (none of the
Protocols in `pi_hermes_memory.ports` has ``__call__``). Nothing inspects signatures. The
configuration's ``adapters`` section names the same factories by import path, so the CLI and
the server use them too (ADR 0060).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import attrs

if TYPE_CHECKING:
    from pi_hermes_memory.config.settings import Config
    from pi_hermes_memory.ports.read_model import MemoryRows
    from pi_hermes_memory.ports.skills import SkillTelemetry
    from pi_hermes_memory.ports.store import (
        MarkdownStore,
        SearchIndex,
        SessionIndex,
        Storage,
        VectorStore,
    )

__all__ = ["Backend", "BackendKind", "Part", "split_part"]

T = TypeVar("T")

#: what a storage-side keyword of `open(...)` takes: an instance, or a factory of the backend
Part: TypeAlias = T | Callable[["Backend"], T]


class BackendKind(enum.StrEnum):
    #: `sessions.db` beside the Markdown files (the default)
    SQLITE = "sqlite"
    #: the shared PostgreSQL store of `storage.backend` (ADR 0050)
    POSTGRES = "postgres"
    #: a storage instance given to `open(storage=...)`: no default part comes with it
    CUSTOM = "custom"


@attrs.define(kw_only=True)
class Backend:
    """The default parts of one backend. A part the backend cannot offer is None (a custom
    storage instance comes with no search index, no vectors, no session history and no
    skill tables; `rows` is offered by the SQLite and PostgreSQL storages, see ADR 0057).

    `vector_store` and `skill_telemetry` are built on first access (numpy, the skill tables)."""

    kind: BackendKind
    config: Config
    logger: Any
    storage: Storage
    markdown: MarkdownStore
    rows: MemoryRows | None = None
    search_index: SearchIndex | None = None
    session_index: SessionIndex | None = None
    _vector_store: Callable[[], VectorStore] | None = attrs.field(default=None, alias="vectors")
    _skill_telemetry: Callable[[], SkillTelemetry] | None = attrs.field(
        default=None, alias="telemetry"
    )
    _built: dict[str, Any] = attrs.field(factory=dict, init=False)

    @property
    def vector_store(self) -> VectorStore | None:
        if self._vector_store is None:
            return None
        if "vectors" not in self._built:
            self._built["vectors"] = self._vector_store()
        store: VectorStore = self._built["vectors"]
        return store

    @property
    def skill_telemetry(self) -> SkillTelemetry | None:
        if self._skill_telemetry is None:
            return None
        if "telemetry" not in self._built:
            self._built["telemetry"] = self._skill_telemetry()
        tables: SkillTelemetry = self._built["telemetry"]
        return tables


def split_part(
    value: T | Callable[[Backend], T] | None,
) -> tuple[T | None, Callable[[Backend], T] | None]:
    """(instance, None), (None, factory) or (None, None)."""
    if value is None:
        return None, None
    if callable(value):
        return None, value
    return value, None
