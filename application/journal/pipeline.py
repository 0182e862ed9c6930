"""The write pipeline, generic over streams (ADR 0030).

One stream is one document a person can also edit by hand: a Markdown memory file, a skill's
SKILL.md with its support files. Every write runs the same steps, whatever the document:

    lock -> transaction -> catch up (snapshot + events) -> import hand edits -> decide ->
    append + project + fold -> snapshot -> commit -> render the stale replicas -> ledger

under the store-wide file lock (so the file writes of several processes never interleave),
inside one IMMEDIATE transaction (events, read models and the render ledger commit together),
and renders the touched files before the lock is released (ADR 0002). A crash anywhere leaves the
journal authoritative; the next operation converges. A large replica (`RenderLag`, ADR 0042) may
lag: a write within the interval after its last render leaves it unread and unrendered, pending,
until a later write, a read through the write path, `flush` (close) or the next open.

What differs per kind of document — its state and fold, its snapshot codec, the bytes its replica
renders to and how a hand edit becomes events — is a `DocumentKind`. Appending is done in one
place, `Batch.append`: events are stamped with their stream versions (`stamp`), appended,
projected and folded together.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs
from pi_hermes_memory.domain.errors import VersionConflict
from pi_hermes_memory.domain.memory.events import UNSTAMPED, Event, stamp
from pi_hermes_memory.errors import CorruptSnapshot, MarkdownChanged, MarkdownUnreadable
from pi_hermes_memory.journal.replica_check import ReplicaCheck, sha256
from pi_hermes_memory.ports.store import UNCHECKED, ReplicaProofs, Replicas, Storage, UnitOfWork

__all__ = [
    "DEFER_RENDER_BYTES",
    "RENDER_INTERVAL_S",
    "SNAPSHOT_EVERY",
    "Batch",
    "DocumentKind",
    "Imported",
    "Pipeline",
    "RenderLag",
    "Replicas",
    "StreamState",
    "sha256",
]

#: A stream's folded state is stored every this many events (ADR 0024).
SNAPSHOT_EVERY = 500
#: the replica of a stream could not be read (`MarkdownUnreadable`): never rewritten
_BLOCKED = "<unreadable>"
#: the replica of a stream was neither read nor rendered by this write: its render lags (ADR 0042)
_LAGGING = "<lagging>"
#: A replica this pipeline last rendered at least this large may lag its journal (ADR 0042).
DEFER_RENDER_BYTES = 1 << 20
#: ... by at most this long while a process writes: the first write after it renders again.
RENDER_INTERVAL_S = 1.0


@attrs.frozen(kw_only=True)
class RenderLag:
    """When the render of a large replica may lag the journal (ADR 0042).

    A write to a stream whose replica this pipeline last rendered at least `min_bytes` long, less
    than `interval_s` (by `clock`) ago, commits its events without reading or rendering the
    file: the stream is pending. The first write `interval_s` after the last render, any read
    through the write path, `Pipeline.flush` (run by `Memory.close`) and the next open in any
    process render it. `RenderLag.never()` renders on every write."""

    min_bytes: int = DEFER_RENDER_BYTES
    interval_s: float = RENDER_INTERVAL_S
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def never(cls) -> RenderLag:
        return cls(min_bytes=sys.maxsize, interval_s=0.0)


class StreamState(Protocol):
    """What the pipeline needs of any folded state."""

    @property
    def stream(self) -> str: ...

    @property
    def version(self) -> int: ...


S = TypeVar("S", bound=StreamState)
R = TypeVar("R")


@attrs.frozen
class Imported:
    """What a hand edit of a replica amounts to: the events that import it, and whether the
    file as read counts as rendered (`keep`: False for a file that is rendered again from the
    journal, such as an emptied one)."""

    events: tuple[Event, ...] = ()
    keep: bool = True
    #: what to log about the import (`markdown.imported` fields) when it appended events
    details: tuple[tuple[str, object], ...] = ()


class DocumentKind(Protocol[S]):
    """How one kind of stream is kept: its empty state, fold, snapshot codec and replica."""

    @property
    def replicas(self) -> Replicas: ...

    def empty(self, stream: str) -> S: ...

    def fold(self, state: S, events: Sequence[Event]) -> S: ...

    def encode(self, state: S) -> str:
        """The state as a snapshot (ADR 0024)."""
        ...

    def decode(self, data: str) -> S:
        """A snapshot back; raises `CorruptSnapshot` when it does not decode."""
        ...

    def render(self, state: S, store: str) -> bytes:
        """The bytes of the stream's replica; `store` is the journal's identity."""
        ...

    def import_edit(
        self,
        uow: UnitOfWork,
        state: S,
        data: bytes,
        recorded: tuple[int, str] | None,
        warnings: list[str],
    ) -> Imported:
        """`data` (the replica as read) differs from what the ledger recorded and from what the
        state renders to: the events that import the person's change. `recorded` is the
        ledger's (version, sha256) of the last render of this replica. Raise
        `MarkdownUnreadable` when the replica cannot be read as this kind of document."""
        ...


@attrs.define(eq=False)
class Batch(Generic[S]):
    """The states of one write, inside its transaction; `append` is the one way in."""

    uow: UnitOfWork
    states: dict[str, S]
    _kind: DocumentKind[S]
    #: how many events the hand-edit import appended to each stream when the batch opened
    imported: dict[str, int] = attrs.Factory(dict)
    _after: list[Callable[[], None]] = attrs.Factory(list)

    def append(self, stream: str, events: Sequence[Event]) -> S:
        """Stamp `events` with the next versions of `stream`, append them to the journal,
        project them and fold them into the stream's state; returns the new state."""
        state = self.states[stream]
        stamped = numbered(stream, state.version, events)
        if not stamped:
            return state
        self.uow.journal.append(stream, state.version, stamped)
        self.uow.projection.apply(stamped)
        self.states[stream] = state = self._kind.fold(state, stamped)
        return state

    def after_publish(self, step: Callable[[], None]) -> None:
        """Run `step` once the replicas are rendered, still under the store lock."""
        self._after.append(step)


def numbered(stream: str, after: int, events: Sequence[Event]) -> tuple[Event, ...]:
    """`events` as the versions after `after` of `stream`: unversioned ones are numbered by
    the domain's `stamp` (the one place versions are assigned); ones a decision already
    stamped (its fold checked them as it went) must be exactly those versions."""
    if events and all(e.version == UNSTAMPED for e in events):
        return stamp(stream, after, events)
    for i, event in enumerate(events, start=1):
        if event.stream != stream or event.version != after + i:
            raise VersionConflict(stream, after + i, event.version)
    return tuple(events)


class Pipeline(Generic[S]):
    """The write path of one kind of document, over any number of its streams."""

    def __init__(
        self,
        *,
        storage: Storage,
        kind: DocumentKind[S],
        lock: Callable[[float], contextlib.AbstractContextManager[object]],
        logger: Any,
        lock_timeout: float = 30.0,
        lag: RenderLag | None = None,
        proofs: ReplicaProofs | None = None,
        check: ReplicaCheck | None = None,
    ) -> None:
        self._storage = storage
        self._kind = kind
        self._files = kind.replicas
        #: proofs outside the store that a replica is unchanged (ADR 0089): a replica with a
        #: recorded digest for its exact stamp is compared without being read
        self._proofs = proofs
        self._lock = lock
        self._log = logger
        self._lock_timeout = lock_timeout
        self._states: dict[str, S] = {}
        #: the replica check (ADR 0105): given, it is a reader's that proved the replicas
        #: before this pipeline was built, and its stamps are this pipeline's from then on
        self._check = check if check is not None else ReplicaCheck(self._files, proofs)
        self._stamps = self._check.stamps  # replica change tokens after our last sync
        self._seen: dict[str, object] = {}  # replica stamps as read by the last import
        self._snapshotted: dict[str, int] = {}  # stream -> version of its stored snapshot
        # stream -> the bytes this pipeline last wrote to its replica and their sha256: a file
        # read back equal to them has that digest without hashing it again (ADR 0039)
        self._written: dict[str, tuple[bytes, str]] = {}
        # stream -> the size of the render this pipeline last wrote to its replica, in full or
        # by appending (ADR 0088): what `RenderLag.min_bytes` is compared with
        self._sizes: dict[str, int] = {}
        self._store: str | None = None  # the journal's identity, read once
        self._lag = lag if lag is not None else RenderLag()
        # streams whose replica lags the journal by this pipeline's writes, and when this
        # pipeline last rendered each replica (its clock): ADR 0042
        self._pending: set[str] = set()
        self._rendered_at: dict[str, float] = {}
        self.warnings: collections.deque[str] = collections.deque(maxlen=200)
        # stream -> events imported from hand edits since `take_imported` last asked: a
        # report (sync-markdown) names the edits an earlier read of this session imported
        self._imported: dict[str, int] = {}
        # stream -> (the replica's stamp taken before it was read, its sha256) when it was
        # found to be what the ledger recorded: unchanged since, it needs no import (ADR 0084)
        self._verified = self._check.verified
        # stream -> when an indexed write first left its unread replica lagging (ADR 0084)
        self._lag_since: dict[str, float] = {}
        # streams whose render stood back for a person's save (`MarkdownChanged`): imported
        # at the end of the operation (`import_raced`, ADR 0116)
        self._raced: set[str] = set()
        self._importing_raced = False

    def take_imported(self, streams: Iterable[str]) -> dict[str, int]:
        """The events imported from hand edits of `streams` since the last call (a count of
        an import whose transaction then failed is included: the next read imports it again)."""
        return {s: self._imported.pop(s, 0) for s in streams}

    @property
    def kind(self) -> DocumentKind[S]:
        return self._kind

    def cached(self, stream: str) -> S | None:
        """The state of `stream` as of this pipeline's last read or write (no I/O)."""
        return self._states.get(stream)

    # -- state ----------------------------------------------------------------------------

    def catch_up(self, uow: UnitOfWork, stream: str) -> S:
        state = self._states.get(stream) or self._from_snapshot(uow, stream)
        return self._kind.fold(state, uow.journal.read(stream, after=state.version))

    def _from_snapshot(self, uow: UnitOfWork, stream: str) -> S:
        """The stream's stored snapshot, else the empty state (ADR 0024): opening costs the live
        state plus the events after the snapshot, not all history. A snapshot that does not
        decode, or does not fit the journal, is ignored: the events are the truth."""
        empty = self._kind.empty(stream)
        stored = uow.journal.snapshot(stream)
        if stored is None:
            return empty
        version, data = stored
        try:
            state = self._kind.decode(data)
            if state.stream != stream or state.version != version:
                raise CorruptSnapshot(f"it names {state.stream} v{state.version}")
            if version > uow.journal.version(stream):
                raise CorruptSnapshot(f"it is ahead of the journal (v{version})")
        except CorruptSnapshot as exc:
            self._log.warning("snapshot.ignored", stream=stream, error=str(exc))
            return empty
        self._snapshotted[stream] = version
        return state

    def _keep_snapshots(self, uow: UnitOfWork, states: Iterable[S]) -> None:
        """Inside the write transaction: store a stream's folded state once SNAPSHOT_EVERY
        events have been appended since its last snapshot."""
        for state in states:
            last = self._snapshotted.get(state.stream)
            if last is None:
                stored = uow.journal.snapshot_version(state.stream)
                last = self._snapshotted[state.stream] = stored or 0
            if state.version - last >= SNAPSHOT_EVERY:
                uow.journal.save_snapshot(state.stream, state.version, self._kind.encode(state))
                self._snapshotted[state.stream] = state.version

    def snapshot_due(self, uow: UnitOfWork, stream: str, version: int) -> bool:
        """Whether a write that brings `stream` to `version` would store a snapshot on the
        write path (`_keep_snapshots`'s rule). An indexed add stores none (ADR 0084), so a
        process that holds the folded state writes through the fold when one is due: its
        snapshots keep their cadence (ADR 0104)."""
        last = self._snapshotted.get(stream)
        if last is None:
            stored = uow.journal.snapshot_version(stream)
            last = self._snapshotted[stream] = stored or 0
        return version - last >= SNAPSHOT_EVERY

    def replace_snapshot(self, uow: UnitOfWork, state: S) -> None:
        """Replace the stored snapshot of `state`'s stream by `state` (when one is stored): a
        purge's snapshot must not keep the text it erased (ADR 0026)."""
        if uow.journal.snapshot_version(state.stream) is not None:
            uow.journal.save_snapshot(state.stream, state.version, self._kind.encode(state))
            self._snapshotted[state.stream] = state.version

    def settled(self, streams: Sequence[str]) -> dict[str, S] | None:
        """The states read on a snapshot, without the store lock, when every replica is what
        the ledger recorded for the head: no hand edit to import, no render to finish. None
        when one needs the write path. Readers never wait for writers (ADR 0024)."""
        with self._storage.snapshot() as uow:
            states = {s: self.catch_up(uow, s) for s in streams}
            if not all(self._replica_is(uow, s, state.version) for s, state in states.items()):
                return None
        self._states.update(states)
        self._remember_stamps(states)
        return states

    def converged(self, streams: Sequence[str]) -> bool:
        """Whether every replica of `streams` is what the ledger recorded for the stream's head,
        checked on a snapshot without the store lock and without folding or decoding anything:
        the journal's version and each file's sha256 (ADR 0038). True: nothing to import or
        render, and the stamps are remembered so `changed` is a stat per file until one
        changes; the states are read from the journal only when someone asks for them."""
        return self._check.converged(self._storage, streams, self._digest)

    def converge(self, streams: Sequence[str], warnings: list[str]) -> None:
        """Make every replica of `streams` what the journal says, importing hand edits first:
        the hash check of `converged` when nothing needs work, else the write path (which
        folds, imports and renders; a replica that cannot be read is reported, never raised)."""
        if not self.converged(streams):
            self.read(streams, warnings)

    def store_id(self, uow: UnitOfWork) -> str:
        if self._store is None:
            self._store = uow.ledger.store_id()
        return self._store

    def render(self, uow: UnitOfWork, state: S) -> bytes:
        return self._kind.render(state, self.store_id(uow))

    def _replica_is(self, uow: UnitOfWork, stream: str, version: int) -> bool:
        """Whether the replica of `stream` holds what the ledger recorded for `version`
        (`ReplicaCheck.replica_is`)."""
        return self._check.replica_is(uow, stream, version, self._digest)

    # -- the indexed write path (ADR 0084) ----------------------------------------------------

    def locked(self) -> contextlib.AbstractContextManager[object]:
        """The store lock, as `writing` takes it."""
        return self._lock(self._lock_timeout)

    def unedited(self, uow: UnitOfWork, stream: str) -> tuple[object, str] | None:
        """Under the lock, in the write transaction: (the replica's stamp, its sha256) when it
        is exactly the last render the ledger recorded, so a write needs no hand-edit import;
        None otherwise (or when it is missing or cannot be read: the write path reports it).
        A stat when the replica is unchanged since it was last found so; else a read."""
        try:
            stamp = self._files.stamp(stream)
        except OSError:
            return None
        rendered = uow.ledger.rendered(stream, self._files.replica(stream))
        if rendered is None or stamp is None:
            return None
        known = self._verified.get(stream)
        if known is None or known[0] != stamp:
            try:
                data = self._files.read(stream)
            except (MarkdownUnreadable, OSError):
                return None
            if data is None:
                return None
            known = (stamp, self._digest(stream, data))
            if self._files.stamp(stream) != stamp:
                return None  # saved while it was read
            self._verified[stream] = known
        return known if rendered[1] == known[1] else None

    def may_lag(self, stream: str) -> bool:
        """Whether a write may leave `stream`'s replica unread and unrendered, as `writing`
        decides it (ADR 0042): this pipeline rendered it recently."""
        return self._may_lag(stream)

    def may_lag_unread(self, stream: str, size: int) -> bool:
        """Whether an indexed write may leave `stream`'s replica, found to be the last render,
        as it is (ADR 0084): it is at least `min_bytes` long, this pipeline has not rendered
        it, and its first write that left it so was less than `interval_s` ago (a new
        process's first adds do not render a large file; the first write after the interval,
        `flush` and the next open do)."""
        if size < self._lag.min_bytes or stream in self._rendered_at:
            return False
        since = self._lag_since.setdefault(stream, self._lag.clock())
        return self._lag.clock() - since < self._lag.interval_s

    def lagging(self, stream: str) -> None:
        """`stream`'s replica lags the journal by this pipeline's write (ADR 0042)."""
        self._pending.add(stream)

    def publish_unread(self, state: S, data: bytes, seen: object) -> list[str]:
        """After COMMIT, under the lock: write `data`, the render of `state`, over a replica
        whose stamp was `seen` when it was found unedited, and record it (as `writing` does)."""
        self._seen[state.stream] = seen
        warnings = self._publish([(state, data, sha256(data))])
        self._remember_stamps([state.stream])
        return warnings

    def recorded(self, uow: UnitOfWork, stream: str) -> tuple[int, str] | None:
        """The ledger's (version, sha256) of the last render of `stream`'s replica."""
        return uow.ledger.rendered(stream, self._files.replica(stream))

    def publish_appended(
        self,
        stream: str,
        version: int,
        append: Callable[[object], tuple[str, int, object | None] | None],
        seen: object,
    ) -> list[str] | None:
        """After COMMIT, under the lock: bring `stream`'s replica, found to be the last
        render when its stamp was `seen`, to `version` by `append(seen)` (ADR 0088: the
        render at `version` only appends entries to it), and record it as `_publish` does.
        `append` answers (the sha256 of the render written, its size, the replica's stamp
        when it is provably the file written, else None), or None when the replica is not
        what the append was planned on: nothing was written and None is returned (render it
        in full). Warnings as `publish_unread`'s.

        A proven stamp is remembered as the one that was verified (ADR 0100): the next
        indexed write's `unedited` is then a stat, not a read and hash of the whole file."""
        self._rendered_at.pop(stream, None)
        warnings: list[str] = []
        written, done = self._replace_replica(stream, lambda: append(seen), warnings)
        proven: object | None = None
        if written:
            if done is None:
                return None
            digest, size, proven = done
            self._log.debug("markdown.appended", stream=stream, version=version, size=size)
            self._written.pop(stream, None)  # not held: the next read hashes the file...
            if proven is not None:  # ...unless its stamp still proves it ours
                self._verified[stream] = (proven, digest)
            self._sizes[stream] = size
            self._rendered_at[stream] = self._lag.clock()
            self._pending.discard(stream)
            warnings.extend(self._record([(stream, version, digest)]))
        if proven is None:
            self._remember_stamps([stream])
        else:
            self._stamps[stream] = proven
        return warnings

    def _replace_replica(
        self, stream: str, write: Callable[[], R], warnings: list[str]
    ) -> tuple[bool, R | None]:
        """Run `write`, which replaces `stream`'s replica after COMMIT: (True, its answer),
        or (False, None) when it did not. A person's save after we read the file
        (`MarkdownChanged`) is left alone and imported by the next operation (replacing it
        would lose it, ADR 0022); an OSError leaves the old bytes, rewritten by the next
        operation, and is a warning on a successful result, not an error (ADR 0011)."""
        try:
            return True, write()
        except MarkdownChanged:
            self._log.info("markdown.changed_meanwhile", stream=stream)
            self._raced.add(stream)
        except OSError as exc:
            self._log.error("markdown.write_failed", stream=stream, error=str(exc))
            warnings.append(
                f"Saved in the journal, but {self._files.describe(stream)} could not "
                f"be rewritten ({exc}); it will be rewritten by the next operation."
            )
        return False, None

    def _digest(self, stream: str, data: bytes) -> str:
        """sha256 of `data`, the replica of `stream` as read: equal bytes, equal digest, so a
        file that still holds what this pipeline last wrote is compared (memcmp), not hashed."""
        written = self._written.get(stream)
        if written is not None and written[0] == data:
            return written[1]
        return sha256(data)

    def _import_hand_edits(
        self, uow: UnitOfWork, state: S, warnings: list[str]
    ) -> tuple[S, str | None]:
        """If the replica changed behind our back, import the change as events first.

        Returns the state and the sha256 of the replica as read (None when it is missing or
        the kind renders it again from the journal)."""
        stream = state.stream
        # what the file was when read: a render replaces only that (never a save made since)
        self._seen[stream] = self._files.stamp(stream)
        data = self._files.read(stream)
        if data is None:
            return state, None
        replica = self._files.replica(stream)
        digest = self._digest(stream, data)
        recorded = uow.ledger.rendered(stream, replica)
        if recorded is not None and recorded[1] == digest:
            return state, digest
        if sha256(self.render(uow, state)) == digest:  # written, then crashed before the ledger
            uow.ledger.record(stream, replica, state.version, digest)
            return state, digest
        imported = self._kind.import_edit(uow, state, data, recorded, warnings)
        if not imported.keep:
            return state, None
        if imported.events:
            batch = Batch(uow, {stream: state}, self._kind)
            state = batch.append(stream, imported.events)
            self._imported[stream] = self._imported.get(stream, 0) + len(imported.events)
            self._log.info("markdown.imported", **dict(imported.details))
        uow.ledger.record(stream, replica, state.version, digest)
        return state, digest

    def open(
        self,
        uow: UnitOfWork,
        streams: Iterable[str],
        warnings: list[str],
        *,
        strict: bool = True,
        lagging: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, S], dict[str, str | None], dict[str, int]]:
        """Catch up and import hand edits, counting the events each import appended.
        `strict`: a replica that cannot be read raises (a write to it must not proceed);
        otherwise that stream is read from the journal, its replica left untouched, and the
        others keep working. `lagging` streams are caught up only: their replica is neither
        read nor rendered by this write (ADR 0042)."""
        states: dict[str, S] = {}
        on_disk: dict[str, str | None] = {}
        imported: dict[str, int] = {}
        # in one order (sorted): a storage that locks each stream at its first read (the
        # PostgreSQL one, ADR 0051) then never deadlocks two writers of the same streams
        for stream in sorted(streams):
            caught = self.catch_up(uow, stream)
            if stream in lagging:
                states[stream], on_disk[stream], imported[stream] = caught, _LAGGING, 0
                continue
            try:
                states[stream], on_disk[stream] = self._import_hand_edits(uow, caught, warnings)
            except MarkdownUnreadable as exc:
                if strict:
                    raise
                warnings.append(str(exc))
                states[stream], on_disk[stream] = caught, _BLOCKED
            imported[stream] = states[stream].version - caught.version
        return states, on_disk, imported

    def _stale(
        self, uow: UnitOfWork, states: dict[str, S], on_disk: dict[str, str | None]
    ) -> list[tuple[S, bytes, str]]:
        """The streams whose replica is not what their state renders to (inside the txn). A
        replica that could not be read (`_BLOCKED`) is never rewritten: it holds something a
        person must fix first."""
        stale = []
        for stream, state in states.items():
            if on_disk[stream] == _LAGGING:
                self._pending.add(stream)
                continue
            if on_disk[stream] == _BLOCKED:
                continue
            data = self.render(uow, state)
            digest = sha256(data)
            if on_disk[stream] != digest or uow.ledger.rendered(
                stream, self._files.replica(stream)
            ) != (state.version, digest):
                stale.append((state, data, digest))
            else:
                self._pending.discard(stream)
        return stale

    def _publish(self, stale: Sequence[tuple[S, bytes, str]]) -> list[str]:
        """Write the stale replicas atomically, then record what was written (one txn, not
        synced where the storage offers `bookkeeping`: ADR 0085).

        Runs after COMMIT: the change is already durable in the journal. A replica that cannot
        be written keeps its old bytes and is rewritten by the next operation, so the failure
        is a warning on a successful result, not an error (ADR 0011)."""
        written: list[tuple[str, int, str]] = []
        warnings: list[str] = []
        for state, data, digest in stale:
            stream = state.stream
            # until it is rendered, the next write of this stream reads and renders it in full
            # (a stream that lagged stays pending until then)
            self._rendered_at.pop(stream, None)
            expected = self._seen.pop(stream, UNCHECKED)
            done, _ = self._replace_replica(
                stream,
                lambda: self._files.write(stream, data, expected=expected),  # noqa: B023
                warnings,
            )
            if done:
                written.append((state.stream, state.version, digest))
                self._written[stream] = (data, digest)
                self._sizes[stream] = len(data)
                self._rendered_at[stream] = self._lag.clock()
                self._pending.discard(stream)
        warnings.extend(self._record(written))
        return warnings

    def _record(self, written: Sequence[tuple[str, int, str]]) -> list[str]:
        """Record the renders written, (stream, version, sha256) each, in the ledger."""
        if not written:
            return []
        # not durable-critical (ADR 0085): a crash before this record reaches the disk leaves
        # files that render(state) recognises ("written, then crashed before the ledger"), so
        # a storage may commit it without a sync
        begin = getattr(self._storage, "bookkeeping", self._storage.transaction)
        try:
            with begin() as uow:
                for stream, version, digest in written:
                    uow.ledger.record(stream, self._files.replica(stream), version, digest)
        except OSError as exc:  # the next operation recognises the files as rendered
            self._log.error("markdown.ledger_failed", error=str(exc))
            return [f"Saved; recording the Markdown render failed ({exc})."]
        return []

    # -- the write path --------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(
        self,
        streams: Iterable[str],
        warnings: list[str],
        *,
        strict: bool = True,
        erasing: bool = False,
        publish_first: str | None = None,
        defer: bool = False,
    ) -> Iterator[Batch[S]]:
        """Lock, open one transaction, catch up and import the hand edits of `streams`, and
        yield their states; the caller appends through the batch. On leaving: snapshots, commit,
        render the stale replicas (`publish_first`'s first), record them, then the batch's
        `after_publish` steps, all before the lock is released. `erasing`: the transaction is
        the storage's erasing one (a purge, ADR 0026). `defer`: a large replica rendered
        recently (`RenderLag`) is left as it is, its stream pending (ADR 0042); never
        `publish_first` nor an erasing write."""
        wanted = list(dict.fromkeys(streams))
        with self._lock(self._lock_timeout):
            lagging = (
                frozenset(s for s in wanted if s != publish_first and self._may_lag(s))
                if defer and not erasing
                else frozenset()
            )
            begin = self._storage.erasing if erasing else self._storage.transaction
            with begin() as uow:
                states, on_disk, imported = self.open(
                    uow, wanted, warnings, strict=strict, lagging=lagging
                )
                batch = Batch(uow, states, self._kind, imported)
                yield batch
                self._keep_snapshots(uow, batch.states.values())
                stale = self._stale(uow, batch.states, on_disk)
            stale.sort(key=lambda item: item[0].stream != publish_first)
            self._states.update(batch.states)
            warnings.extend(self._publish(stale))
            # a lagging replica keeps the stamp of its last sync: a person's save meanwhile is
            # still `changed`, so a search imports it (and renders) as before (ADR 0042)
            self._remember_stamps(s for s in batch.states if s not in lagging)
            for step in batch._after:
                step()
        if not self._importing_raced:
            self.import_raced(warnings)

    def import_raced(self, warnings: list[str]) -> None:
        """Import now the person's saves that made a render of this operation stand back
        (`MarkdownChanged`: saved while it was rendered, or put back by the late-save rescue),
        not at the next operation: an editor that reloaded the render in between holds a
        buffer without the save, and its next save must find the save in the journal, not
        only in the file it overwrites (ADR 0116). Once: a save racing this import too is
        imported by the next operation."""
        raced = sorted(self._raced)
        self._raced.clear()
        if not raced:
            return
        self._importing_raced = True
        try:
            self.read(raced, warnings)
        finally:
            self._importing_raced = False

    def read(self, streams: Sequence[str], warnings: list[str]) -> dict[str, S]:
        """The current states of `streams`: read on a snapshot when every replica is settled,
        else through the write path (which imports hand edits and renders what is stale; a
        replica that cannot be read is then reported, never raised)."""
        settled = self.settled(streams)
        if settled is not None:
            return settled
        with self.writing(streams, warnings, strict=False) as batch:
            states = dict(batch.states)
        return states

    def _may_lag(self, stream: str) -> bool:
        """Whether a write may leave `stream`'s replica as it is (ADR 0042): this pipeline
        rendered it, at least `min_bytes` long, less than `interval_s` ago, and nothing it
        wrote since failed."""
        size = self._sizes.get(stream)
        rendered_at = self._rendered_at.get(stream)
        if size is None or rendered_at is None or size < self._lag.min_bytes:
            return False
        return self._lag.clock() - rendered_at < self._lag.interval_s

    @property
    def pending(self) -> tuple[str, ...]:
        """The streams whose replica lags the journal by this pipeline's writes (ADR 0042)."""
        return tuple(sorted(self._pending))

    def flush(self, warnings: list[str]) -> None:
        """Render every pending replica now, importing hand edits made meanwhile first (a
        three-way merge against the version the file names). A replica that cannot be
        written stays pending and is reported in `warnings`."""
        pending = self.pending
        if not pending:
            return
        if self.converged(pending):  # another process rendered them meanwhile
            self._pending.difference_update(pending)
            return
        self.read(pending, warnings)

    def _remember_stamps(self, streams: Iterable[str]) -> None:
        self._check.remember(streams)

    def changed(self, streams: Iterable[str]) -> list[str]:
        """The streams whose replica changed since this pipeline last synced (one stat each)."""
        return self._check.changed(streams)

    def forget(self, stream: str) -> None:
        """Drop the cached state of `stream` (it is read from the journal again)."""
        self._states.pop(stream, None)
        self._verified.pop(stream, None)
        self._written.pop(stream, None)
        self._sizes.pop(stream, None)
        self._stamps.pop(stream, None)
        self._rendered_at.pop(stream, None)
