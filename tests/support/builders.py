"""Builders for services and facades over in-memory or on-disk adapters."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.memory.service import MemoryService, MemorySettings
from pi_hermes_memory.ports.store import MarkdownStore, Storage

from tests.support.fakes import SequentialIds, StepClock

if TYPE_CHECKING:  # numpy: only the embedding tests load it
    from pi_hermes_memory.search.embedding import EmbeddingService


def settings(
    project: str | None = "app",
    *,
    sharing: bool = False,
    limit: int = 100_000,
    overflow: OverflowStrategy = OverflowStrategy.REJECT,
) -> MemorySettings:
    return MemorySettings(
        scope=SessionScope(project=project, sharing=sharing),
        limits=dict.fromkeys(Target, limit),
        overflow=overflow,
    )


def service(
    storage: Storage | None = None,
    markdown: MarkdownStore | None = None,
    *,
    clock: StepClock | None = None,
    ids: SequentialIds | None = None,
    embeddings: EmbeddingService | None = None,
    **kw: object,
) -> MemoryService:
    return MemoryService(
        storage=storage or InMemoryStorage(),
        markdown=markdown or InMemoryMarkdown(),
        fmt=MarkdownFormat(),
        clock=clock or StepClock(),
        ids=ids or SequentialIds(),
        settings=settings(**kw),  # type: ignore[arg-type]
        embeddings=embeddings,
    )


def disk_service(root: Path, **kw: object) -> MemoryService:
    from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

    memory_dir = root / "pi-hermes-memory"
    return service(
        SqliteStorage(memory_dir / "sessions.db"),
        MarkdownFiles(memory_dir, root / "projects-memory"),
        **kw,  # type: ignore[arg-type]
    )
