"""The `Replicas` contract suite: the files of one kind of document, addressed by stream.

The write pipeline (`pi_hermes_memory.journal.pipeline`, ADR 0022) reads a replica, remembers
its `stamp`, renders, and writes back with `expected=` that stamp, so that a person's save made
meanwhile is never overwritten; the render ledger is keyed by `replica(stream)`. This suite
checks exactly that. A replica's bytes depend on its kind (a skill folder is a packed byte
string), so a subclass provides the ``replicas`` fixture (fresh, empty) and three hooks::

    class TestMyReplicas(ReplicasContract):
        @pytest.fixture
        def replicas(self, tmp_path):
            return MyReplicas(tmp_path)

        def stream_name(self, n): return f"skill:global:s{n}"      # n = 0, 1, 2
        def document(self, n): return pack({"SKILL.md": b"..." * (n + 1)})
        def edit_by_hand(self, replicas, stream, data): ...  # as a person would save it

`document(n)` must return valid, distinct documents of distinct lengths (a stamp may be
made of size and mtime, and two saves within one clock tick then differ only by size).
"""

from __future__ import annotations

from typing import Any

from pi_hermes_memory.errors import MarkdownChanged

__all__ = ["ReplicasContract"]

#: what a replica that does not exist reads as: None, or the kind's empty document
_ABSENT = (None, b"")


class ReplicasContract:
    """Every `Replicas` passes these tests (memory documents, skill folders, or your own)."""

    # -- the hooks a subclass provides ------------------------------------------------------

    def stream_name(self, n: int) -> str:
        """A stream of this kind of document, distinct for n = 0, 1, 2."""
        raise NotImplementedError("a ReplicasContract subclass defines stream_name")

    def document(self, n: int) -> bytes:
        """A valid document, distinct (and of a distinct length) for n = 0, 1, 2, 3."""
        raise NotImplementedError("a ReplicasContract subclass defines document")

    def edit_by_hand(self, replicas: Any, stream: str, data: bytes) -> None:
        """Make the replica of `stream` hold `data` the way a person would, not through
        `write` (e.g. save the file in place)."""
        raise NotImplementedError("a ReplicasContract subclass defines edit_by_hand")

    # -- the contract -------------------------------------------------------------------------

    def test_an_unwritten_replica_is_absent(self, replicas: Any) -> None:
        stream = self.stream_name(0)
        assert replicas.read(stream) in _ABSENT
        assert replicas.stamp(stream) is None

    def test_write_then_read_gives_the_bytes(self, replicas: Any) -> None:
        stream = self.stream_name(0)
        replicas.write(stream, self.document(3))
        assert replicas.read(stream) == self.document(3)
        replicas.write(stream, self.document(0))
        assert replicas.read(stream) == self.document(0), "a write replaces the whole replica"

    def test_streams_are_independent(self, replicas: Any) -> None:
        a, b = self.stream_name(0), self.stream_name(1)
        replicas.write(a, self.document(1))
        replicas.write(b, self.document(2))
        assert replicas.read(a) == self.document(1)
        assert replicas.read(b) == self.document(2)
        assert replicas.read(self.stream_name(2)) in _ABSENT

    def test_the_stamp_changes_with_the_replica(self, replicas: Any) -> None:
        stream = self.stream_name(0)
        replicas.write(stream, self.document(0))
        first = replicas.stamp(stream)
        assert first is not None
        assert replicas.stamp(stream) == first, "an unchanged replica keeps its stamp"
        replicas.write(stream, self.document(1))
        written = replicas.stamp(stream)
        assert written != first
        self.edit_by_hand(replicas, stream, self.document(2))
        assert replicas.stamp(stream) != written, "a save by hand changes the stamp"
        assert replicas.read(stream) == self.document(2)

    def test_a_write_with_the_current_stamp_succeeds(self, replicas: Any) -> None:
        stream = self.stream_name(0)
        replicas.write(stream, self.document(0), expected=replicas.stamp(stream))
        assert replicas.read(stream) == self.document(0)
        replicas.write(stream, self.document(1), expected=replicas.stamp(stream))
        assert replicas.read(stream) == self.document(1)

    def test_a_save_made_since_the_read_is_never_overwritten(self, replicas: Any) -> None:
        stream = self.stream_name(0)
        replicas.write(stream, self.document(0))
        seen = replicas.stamp(stream)
        self.edit_by_hand(replicas, stream, self.document(2))
        try:
            replicas.write(stream, self.document(1), expected=seen)
        except MarkdownChanged:
            pass
        else:
            raise AssertionError("a write with a stale stamp raises MarkdownChanged")
        assert replicas.read(stream) == self.document(2), "the person's save is left alone"

    def test_a_replica_created_since_the_read_is_never_overwritten(self, replicas: Any) -> None:
        stream = self.stream_name(0)
        seen = replicas.stamp(stream)
        self.edit_by_hand(replicas, stream, self.document(2))
        try:
            replicas.write(stream, self.document(1), expected=seen)
        except MarkdownChanged:
            pass
        else:
            raise AssertionError("a write expecting no replica raises MarkdownChanged")
        assert replicas.read(stream) == self.document(2)

    def test_each_stream_has_its_own_name_and_identity(self, replicas: Any) -> None:
        streams = [self.stream_name(n) for n in range(3)]
        names = [replicas.describe(s) for s in streams]
        identities = [replicas.replica(s) for s in streams]
        assert all(isinstance(x, str) and x for x in (*names, *identities))
        assert len(set(names)) == 3
        assert len(set(identities)) == 3, "the render ledger keys each replica on its own"
        replicas.write(streams[0], self.document(0))
        assert replicas.replica(streams[0]) == identities[0], "the identity is stable"
