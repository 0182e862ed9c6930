"""The shared-journal contract: several agent roots replicate one journal (ADR 0022).

Each root keeps its own Markdown files and the journal (a `Storage`) is shared. A storage that
serves many roots (a shared folder today, a server-side store later) must keep each replica's
render ledger apart, so that a render by one root is never taken for a hand edit of another.

Provide fixtures ``storage`` (a fresh, empty Storage) and ``document_format`` (the
DocumentFormat the roots render with: the scenarios write the Markdown format's `§` separators,
so use ``pi_hermes_memory.adapters.markdown.codec.MarkdownFormat()``).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from pi_hermes_memory.domain.memory.commands import AddMemory
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.errors import MarkdownChanged
from pi_hermes_memory.memory.service import MemoryService, MemorySettings
from pi_hermes_memory.ports.store import UNCHECKED, DocumentFormat, Storage


class _Replica:
    """One root's Markdown files, as bytes in a dict (a real MarkdownStore)."""

    def __init__(self, name: str, lock: threading.RLock) -> None:
        self.name = name
        self.files: dict[Target, bytes] = {}
        self._lock = lock

    def read(self, target: Target) -> bytes | None:
        return self.files.get(target)

    def write(self, target: Target, data: bytes, *, expected: object = UNCHECKED) -> None:
        if expected is not UNCHECKED and self.stamp(target) != expected:
            raise MarkdownChanged(f"{self.name}/{target.value} changed")
        self.files[target] = data

    def lock(self, timeout: float = 30.0) -> contextlib.AbstractContextManager[object]:
        return self._lock

    def describe(self, target: Target) -> str:
        return f"{self.name}/{target.value}"

    def replica(self, target: Target) -> str:
        return f"{self.name}/{target.value}"

    def distinct_roots(self) -> bool:
        return True

    def stamp(self, target: Target) -> object:
        data = self.files.get(target)
        return None if data is None else hashlib.sha256(data).digest()


class _Clock:
    def __init__(self) -> None:
        self.now_ = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.now_ += timedelta(seconds=1)
        return self.now_


class _Ids:
    def __init__(self, prefix: str) -> None:
        self.prefix, self.n = prefix, 0

    def new_id(self) -> str:
        self.n += 1
        return f"{self.prefix}{self.n:06d}"


def _root(
    storage: Storage, fmt: DocumentFormat, name: str, lock: threading.RLock
) -> tuple[MemoryService, _Replica]:
    replica = _Replica(name, lock)
    service = MemoryService(
        storage=storage,
        markdown=replica,
        fmt=fmt,
        clock=_Clock(),
        ids=_Ids(name),
        settings=MemorySettings(
            scope=SessionScope(project="web", sharing=False),
            limits=dict.fromkeys(Target, 100_000),
        ),
    )
    return service, replica


def _add(service: MemoryService, text: str, target: Target = Target.PROJECT) -> None:
    result = service.execute(
        AddMemory(target=target, text=text, entry_id=f"{text[:8]}-id", at=service.clock.now())
    )
    assert result.status == "added", result.message


def _texts(service: MemoryService, target: Target = Target.PROJECT) -> list[str]:
    return sorted(e.text for e in service.entries(target))


class SharedJournalContract:
    def test_two_roots_never_delete_each_others_entries(
        self, storage: Any, document_format: Any
    ) -> None:
        lock = threading.RLock()
        a, files_a = _root(storage, document_format, "root-a", lock)
        b, files_b = _root(storage, document_format, "root-b", lock)
        _add(a, "web deploys need the VPN")
        before = MemoryEntry.create(
            id="x",
            target=Target.PROJECT,
            text="root b knew this before it joined",
            project="web",
            category=None,
            created=datetime(2026, 1, 1, tzinfo=UTC).date(),
        )
        files_b.files[Target.PROJECT] = document_format.render([before], Target.PROJECT).encode()
        want = ["root b knew this before it joined", "web deploys need the VPN"]
        assert _texts(b) == want  # joined as additions, nothing deleted
        _add(b, "web uses port 8080")
        want = sorted([*want, "web uses port 8080"])
        for service in (a, b, a, b):
            assert _texts(service) == want
        assert files_a.files[Target.PROJECT] == files_b.files[Target.PROJECT]

    def test_a_stale_save_on_one_root_keeps_the_other_roots_writes(
        self, storage: Any, document_format: Any
    ) -> None:
        lock = threading.RLock()
        a, files_a = _root(storage, document_format, "root-a", lock)
        b, _ = _root(storage, document_format, "root-b", lock)
        _add(a, "first global fact", Target.MEMORY)
        loaded = files_a.files[Target.MEMORY]
        _add(b, "written by the other root", Target.MEMORY)
        assert _texts(a, Target.MEMORY) == ["first global fact", "written by the other root"]
        files_a.files[Target.MEMORY] = loaded.rstrip(b"\n") + "\n§\nadded by hand on a\n".encode()
        want = ["added by hand on a", "first global fact", "written by the other root"]
        assert _texts(a, Target.MEMORY) == want
        assert _texts(b, Target.MEMORY) == want
