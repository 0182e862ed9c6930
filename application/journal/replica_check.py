"""Whether the replicas of some streams are what the ledger recorded for the journal's head.

The proof that a read needs no write first (ADR 0038, ADR 0089, ADR 0100): per stream the
journal's version, the ledger's (version, sha256) of the replica's last render, and the file,
compared by its stamp against a recorded proof or else read and hashed. Then, until a stamp
changes, `changed` is one stat per file.

The write pipeline (`pipeline.py`) keeps its stamps here, so a `MemoryService` can answer
`open()`'s converge and a search's refresh with this check alone, and import the pipeline, the
document fold and the events only when the check fails or a write comes (ADR 0105). This module
loads nothing of those.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence

from pi_hermes_memory.errors import MarkdownUnreadable
from pi_hermes_memory.ports.store import ReplicaProofs, Replicas, Storage, UnitOfWork

__all__ = ["ReplicaCheck", "sha256"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ReplicaCheck:
    """The replica stamps of one pipeline (shared with it) and the check against the ledger."""

    def __init__(self, files: Replicas, proofs: ReplicaProofs | None = None) -> None:
        self.files = files
        #: proofs outside the store that a replica is unchanged (ADR 0089): a replica with a
        #: recorded digest for its exact stamp is compared without being read
        self.proofs = proofs
        #: stream -> the replica's change token after our last sync
        self.stamps: dict[str, object] = {}
        #: stream -> (the replica's stamp taken before it was read, its sha256) when it was
        #: found to be what the ledger recorded: unchanged since, it needs no import (ADR 0084)
        self.verified: dict[str, tuple[object, str]] = {}

    def replica_is(
        self,
        uow: UnitOfWork,
        stream: str,
        version: int,
        digest: Callable[[str, bytes], str] | None = None,
    ) -> bool:
        """Whether the replica of `stream` holds what the ledger recorded for `version`: no
        hand edit to import, no render to finish. False also when the file is missing or
        cannot be read (the write path reports it). `digest(stream, data)`: the pipeline's
        (it knows the bytes it last wrote); sha256 otherwise."""
        files, proofs = self.files, self.proofs
        token: object | None = None
        try:
            before = files.stamp(stream)
            if proofs is not None:
                proven = proofs.proven(stream)
                if proven is not None and files.stamp(stream) == before:
                    rendered = uow.ledger.rendered(stream, files.replica(stream))
                    if rendered == (version, proven):
                        self.verified[stream] = (before, proven)
                        return True
                token = proofs.token(stream)  # anything else: read it, as without a proof
            data = files.read(stream)
        except (MarkdownUnreadable, OSError):
            return False
        if data is None:
            return False
        rendered = uow.ledger.rendered(stream, files.replica(stream))
        hashed = digest(stream, data) if digest is not None else sha256(data)
        if rendered is not None and rendered[1] == hashed:
            self.verified[stream] = (before, hashed)
        if proofs is not None and token is not None:
            proofs.prove(stream, token, hashed)
        return rendered == (version, hashed)

    def converged(
        self,
        storage: Storage,
        streams: Sequence[str],
        digest: Callable[[str, bytes], str] | None = None,
    ) -> bool:
        """Whether every replica of `streams` is what the ledger recorded for the stream's
        head, checked on a snapshot without the store lock and without folding or decoding
        anything (ADR 0038). True: the stamps are remembered, so `changed` is a stat per file
        until one changes."""
        with storage.snapshot() as uow:
            if not all(self.replica_is(uow, s, uow.journal.version(s), digest) for s in streams):
                return False
        self.remember(streams)
        return True

    def remember(self, streams: Iterable[str]) -> None:
        for stream in streams:
            self.stamps[stream] = self.files.stamp(stream)

    def changed(self, streams: Iterable[str]) -> list[str]:
        """The streams whose replica changed since the last sync (one stat each); a stream
        never synced counts as changed."""
        stamps, files = self.stamps, self.files
        return [s for s in streams if s not in stamps or files.stamp(s) != stamps[s]]
