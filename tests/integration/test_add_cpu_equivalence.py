"""ADR 0119: the digests an add takes from bytes it compared, not hashed, are the digests it
would have computed, on real files and a real SQLite store.

Two stores on disk receive the same operations (sequential ids, a stepping clock): in one the
Markdown files and the storage keep what they remember between operations (the sampled bytes
of each stamp, the bytes of the last appended file and sidecar with their sha256); in the
other that memory is emptied before every operation, so every digest is computed as before
this ADR. Between operations a person may change the Markdown file or its sidecar in place
keeping its size (the case a byte comparison must catch, as the hash did). After each step the
journal, the read models, the render ledger, the Markdown files and the sidecars of the two
stores are byte for byte equal.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import apsw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles, _copy_known, _remembered
from pi_hermes_memory.adapters.sqlite import eventlog
from pi_hermes_memory.adapters.sqlite.checked import StampCache, stamp_of
from pi_hermes_memory.adapters.sqlite.eventlog import EventRecord
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.commands import AddMemory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.streams import stream_for, target_of
from pi_hermes_memory.memory.service import MemoryService

from tests.support.builders import settings as memory_settings
from tests.support.fakes import SequentialIds, StepClock

WORDS = ["build", "cache", "deploy", "tests", "flaky", "redis", "queue", "ravi", "pins", "sdk"]
texts = st.lists(st.sampled_from(WORDS), min_size=3, max_size=7).map(" ".join)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), texts),
        st.tuples(st.just("adds"), st.lists(texts, min_size=2, max_size=4).map(tuple)),
        st.tuples(st.just("flip"), st.sampled_from(["file", "sidecar"])),
    ),
    min_size=1,
    max_size=14,
)


class _Store:
    def __init__(self, root: Path, *, forget: bool) -> None:
        self.dir = root / "pi-hermes-memory"
        self.storage = SqliteStorage(self.dir / "sessions.db")
        # quiet_s 0: a person's change is imported at once in both stores (no wait)
        self.markdown = MarkdownFiles(self.dir, root / "projects-memory", quiet_s=0.0)
        self.clock, self.ids, self.forget = StepClock(), SequentialIds(), forget
        self.svc = self._service()

    def _service(self) -> MemoryService:
        svc = MemoryService(
            storage=self.storage,
            markdown=self.markdown,
            fmt=MarkdownFormat(),
            clock=self.clock,
            ids=self.ids,
            settings=memory_settings("app", limit=100_000),
        )
        svc.converge()
        return svc

    def _amnesia(self) -> None:
        """Every digest computed, as before ADR 0119."""
        if self.forget:
            self.markdown._hashed.clear()
            self.storage._stamps._sampled.clear()

    def run(self, step: tuple[str, object]) -> None:
        kind, arg = step
        if kind == "flip":
            path = self.markdown.path_for(Target.MEMORY)
            if arg == "sidecar":
                path = self.markdown.sidecar_for(Target.MEMORY)
            _flip_last_letter(path)
            return
        texts = [arg] if kind == "add" else list(arg)  # type: ignore[call-overload]
        for text in texts:
            self._amnesia()
            self.svc.execute(
                AddMemory(
                    target=Target.MEMORY,
                    text=str(text),
                    entry_id=self.ids.new_id(),
                    at=self.clock.now(),
                )
            )

    def state(self) -> dict[str, object]:
        files = {}
        for target in Target:
            for path in (self.markdown.path_for(target), self.markdown.sidecar_for(target)):
                files[path.name + str(target)] = path.read_bytes() if path.exists() else None
        conn = self.storage.connection
        tables = {
            name: conn.execute(f"SELECT * FROM {name} ORDER BY 1, 2").fetchall()
            for name in (
                "events",
                "memories",
                "write_rows",
                "write_tokens",
                "write_postings",
                "write_groups",
                "write_index",
            )
        }
        ledger = conn.execute(
            "SELECT stream, version, sha256 FROM markdown_replicas ORDER BY stream"
        ).fetchall()
        return {"files": files, "tables": tables, "ledger": ledger}


def _flip_last_letter(path: Path) -> None:
    """A person's change in place that keeps the size: the last letter of the file changes
    case (within the same clock tick as our write, in practice)."""
    if not path.exists():
        return
    data = bytearray(path.read_bytes())
    for i in range(len(data) - 1, -1, -1):
        if chr(data[i]).isalpha():
            data[i] ^= 0x20
            break
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, bytes(data), 0)
    finally:
        os.close(fd)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=steps)
def test_remembered_digests_equal_computed_ones(plan: list[tuple[str, object]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="phm-addcpu-"))
    _Store(root / "base", forget=False).storage.close()  # one store id for both
    for name in ("warm", "cold"):
        shutil.copytree(root / "base", root / name)
    warm, cold = (_Store(root / name, forget=name == "cold") for name in ("warm", "cold"))
    try:
        assert warm.state() == cold.state()
        # two adds first: the second appends (the first renders the empty file in full)
        first = [("add", "the first fact about the build"), ("add", "a second about redis")]
        for step in [*first, *plan, ("add", "the last fact about pins")]:
            warm.run(step)
            cold.run(step)
            assert warm.state() == cold.state(), step
        assert warm.markdown._hashed and warm.storage._stamps._sampled  # it did remember
        # the sidecar's header names the sha256 of the render the sidecar holds
        side = warm.markdown.sidecar_for(Target.MEMORY).read_bytes()
        file_sha = hashlib.sha256(warm.markdown.path_for(Target.MEMORY).read_bytes()).hexdigest()
        assert file_sha.encode() in side.split(b"\n", 1)[0]
    finally:
        warm.storage.close()
        cold.storage.close()
        shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=3000),
    prefix=st.binary(max_size=40),
    known=st.sampled_from(["none", "same", "other bytes", "other prefix"]),
    extra=st.binary(max_size=200),
)
def test_copy_known_answers_the_sha256_of_what_it_copied(
    data: bytes, prefix: bytes, known: str, extra: bytes
) -> None:
    """On a real file and descriptor: the digest is sha256(prefix + bytes) whatever `known`
    holds, the bytes copied are the file's, `also` sees them, and `_remembered` remembers the
    digest of what it says it holds."""
    folder = Path(tempfile.mkdtemp(prefix="phm-copy-"))
    try:
        source, target = folder / "source", folder / "target"
        source.write_bytes(data)
        facts = {
            "none": None,
            "same": _remembered(prefix, data, b"", hashlib.sha256(prefix + data)),
            "other bytes": _remembered(prefix, data + b"x", b"", hashlib.sha256(prefix + data)),
            "other prefix": _remembered(prefix + b"p", data, b"", hashlib.sha256(prefix + data)),
        }
        also = hashlib.sha256(b"also")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            with source.open("rb") as f:
                digest, size, last, whole = _copy_known(f, fd, prefix, facts[known], also)
        finally:
            os.close(fd)
        if known != "other bytes":  # the forged fact lies about its bytes: never consulted
            assert digest.hexdigest() == hashlib.sha256(prefix + data).hexdigest()
        assert (size, last, whole) == (len(data), data[-1:], data)
        assert target.read_bytes() == data
        assert also.hexdigest() == hashlib.sha256(b"also" + data).hexdigest()
        digest.update(extra)
        fact = _remembered(prefix, whole, extra, digest)
        assert fact is not None
        remembered = fact.prefix + fact.head + fact.tail
        assert fact.state.hexdigest() == hashlib.sha256(remembered).hexdigest()
        assert fact.holds(prefix, data + extra) and not fact.holds(prefix, data + extra + b"!")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@settings(max_examples=40, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 200_000), st.binary(min_size=1, max_size=8)),
        min_size=1,
        max_size=12,
    )
)
def test_a_stamp_from_remembered_samples_equals_a_computed_one(
    writes: list[tuple[int, bytes]],
) -> None:
    """A real SQLite database and WAL, then writes in place of a few bytes anywhere (the same
    size, the same clock tick): the stamp with the cache (sampled bytes compared) equals the
    stamp without it (every digest computed) after every write."""
    folder = Path(tempfile.mkdtemp(prefix="phm-stamp-"))
    try:
        db = folder / "s.db"
        conn = apsw.Connection(str(db))
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", [(os.urandom(200),) for _ in range(400)])
        cache = StampCache()
        assert stamp_of(db, cache) == stamp_of(db)
        for offset, patch in writes:
            for path in (db, db.with_name("s.db-wal")):
                size = path.stat().st_size
                if size:
                    fd = os.open(path, os.O_WRONLY)
                    try:
                        os.pwrite(fd, patch, offset % size)
                    finally:
                        os.close(fd)
            assert stamp_of(db, cache) == stamp_of(db)
            assert stamp_of(db, cache) == stamp_of(db)  # again: now from the remembered bytes
        conn.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_target_of_is_the_inverse_of_stream_for() -> None:
    for target in Target:
        assert target_of(stream_for(target)) is target
        assert target_of("other:" + target.value) is target  # parsed as before


def _last_record_before(path: Path, size: int) -> EventRecord | None:
    """`EventLog._last_record` as it was before ADR 0119 (split the block, walk it back)."""
    block = eventlog._TAIL_BLOCK
    with open(path, "rb") as f:
        while True:
            start = max(0, size - block)
            f.seek(start)
            lines = f.read(size - start).split(b"\n")
            if start > 0:
                lines = lines[1:]
            for raw in reversed(lines):
                payload = eventlog._parse(raw) if raw else None
                record = None if payload is None else eventlog._record(payload)
                if record is not None:
                    return record
            if start == 0:
                return None
            block *= 4


def _event_line(seq: int, data: str) -> bytes:
    row = {"seq": seq, "stream": "memory:memory", "version": seq, "tag": "t", "at": "a"}
    return eventlog._line({**row, "data": data})


log_pieces = st.lists(
    st.one_of(
        st.builds(_event_line, st.integers(1, 10**6), st.text(max_size=40_000)),
        st.binary(max_size=300),  # damaged lines, torn pieces, bare newlines
        st.just(b"\n"),
    ),
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(pieces=log_pieces, cut=st.integers(0, 10**6))
def test_the_last_valid_line_is_found_as_before(pieces: list[bytes], cut: int) -> None:
    """On a real log file (valid lines up to ~120 KiB, so the 64 KiB block grows; damaged and
    torn lines): the last event line found by cutting lines from the end is the one the
    split found, whatever size the read stops at."""
    folder = Path(tempfile.mkdtemp(prefix="phm-log-"))
    try:
        path = folder / "sessions.journal.jsonl"
        data = b"".join(pieces)
        path.write_bytes(data)
        size = cut % (len(data) + 1)
        log = eventlog.EventLog(path)
        assert log._last_record(size) == _last_record_before(path, size)
        assert log._last_record(len(data)) == _last_record_before(path, len(data))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_block_starting_inside_a_damaged_line_skips_its_first_piece(tmp_path: Path) -> None:
    """The 64 KiB block starts exactly where a valid event line sits after garbage on the same
    line: that piece is the end of a longer, damaged line, never the last event."""
    first = _event_line(1, "a")
    bare = len(_event_line(2, ""))
    second = _event_line(2, "b" * (eventlog._TAIL_BLOCK - bare))
    assert len(second) == eventlog._TAIL_BLOCK
    path = tmp_path / "sessions.journal.jsonl"
    path.write_bytes(first + b"xx" + second)
    log = eventlog.EventLog(path)
    found = log._last_record(path.stat().st_size)
    assert found == _last_record_before(path, path.stat().st_size)
    assert found is not None and found.seq == 1
