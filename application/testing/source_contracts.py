"""The `SessionSource` contract suite (see `pi_hermes_memory.testing`).

A session source lists session files and reads their bytes; the indexer (ADR 0020) relies on
it to notice new, grown, rewritten and deleted files. The suite cannot create files in an
unknown medium, so a subclass provides the `session_source` fixture *and* three hooks that
change the medium behind it: `write_session`, `append_session` and `remove_session`, each given
a relative name such as ``"--home-me-web--/a.jsonl"``::

    class TestMySource(SessionSourceContract):
        @pytest.fixture
        def session_source(self, tmp_path):
            return MySource(tmp_path)

        def write_session(self, source, name, data):
            (source.root / name).parent.mkdir(parents=True, exist_ok=True)
            (source.root / name).write_bytes(data)
        ...
"""

from __future__ import annotations

from typing import Any

__all__ = ["SessionSourceContract"]

LINE = b'{"type":"message","message":{"role":"user","content":"deploy needs the VPN"}}\n'


class SessionSourceContract:
    """Every `SessionSource` passes these tests (the Pi files tree, in memory, or your own)."""

    # -- the hooks a subclass provides ------------------------------------------------------

    def write_session(self, source: Any, name: str, data: bytes) -> None:
        """Create the session file `name` (relative) holding `data`."""
        raise NotImplementedError("a SessionSourceContract subclass defines write_session")

    def append_session(self, source: Any, name: str, data: bytes) -> None:
        """Append `data` to the existing session file `name` (the same file: same identity)."""
        raise NotImplementedError("a SessionSourceContract subclass defines append_session")

    def remove_session(self, source: Any, name: str) -> None:
        """Delete the session file `name`."""
        raise NotImplementedError("a SessionSourceContract subclass defines remove_session")

    # -- helpers ------------------------------------------------------------------------------

    def _created(self, source: Any, name: str, data: bytes) -> Any:
        before = {f.path for f in source.files()}
        self.write_session(source, name, data)
        new = [f for f in source.files() if f.path not in before]
        assert len(new) == 1, f"writing {name!r} should add one file to files(); got {new}"
        return new[0]

    # -- the contract -------------------------------------------------------------------------

    def test_a_new_file_is_listed_once_with_its_size(self, session_source: Any) -> None:
        listed = self._created(session_source, "--home-me-web--/a.jsonl", LINE * 3)
        assert listed.size == len(LINE) * 3
        paths = [f.path for f in session_source.files()]
        assert len(paths) == len(set(paths)), "files() lists every file once"

    def test_stat_agrees_with_files(self, session_source: Any) -> None:
        listed = self._created(session_source, "--home-me-web--/a.jsonl", LINE)
        assert session_source.stat(listed.path) == listed

    def test_reads_return_the_bytes_asked_for(self, session_source: Any) -> None:
        data = LINE * 4
        listed = self._created(session_source, "--home-me-web--/a.jsonl", data)
        assert session_source.read(listed.path, 0, listed.size) == data
        assert session_source.read(listed.path, 5, 10) == data[5:15]
        assert session_source.read(listed.path, len(data) - 3, 100) == data[-3:]
        assert session_source.read(listed.path, len(data), 100) == b""
        assert session_source.read(listed.path, 0, 0) == b""

    def test_an_append_grows_the_same_file(self, session_source: Any) -> None:
        name = "--home-me-web--/a.jsonl"
        before = self._created(session_source, name, LINE)
        more = b'{"type":"message","message":{"role":"assistant","content":"ok"}}\n'
        self.append_session(session_source, name, more)
        after = session_source.stat(before.path)
        assert after is not None and after.size == before.size + len(more)
        assert (after.device, after.inode) == (before.device, before.inode)
        assert session_source.read(before.path, before.size, len(more)) == more

    def test_a_removed_file_is_gone(self, session_source: Any) -> None:
        name = "--home-me-web--/a.jsonl"
        listed = self._created(session_source, name, LINE)
        self.remove_session(session_source, name)
        assert listed.path not in {f.path for f in session_source.files()}
        assert session_source.stat(listed.path) is None
        try:
            session_source.read(listed.path, 0, 10)
        except OSError:
            pass
        else:
            raise AssertionError("reading a removed file raises OSError")

    def test_an_unknown_path_has_no_stat(self, session_source: Any) -> None:
        assert session_source.stat("/no/such/session.jsonl") is None

    def test_files_of_several_projects_are_all_listed(self, session_source: Any) -> None:
        a = self._created(session_source, "--home-me-web--/a.jsonl", LINE)
        b = self._created(session_source, "--home-me-api--/b.jsonl", LINE)
        assert {a.path, b.path} <= {f.path for f in session_source.files()}
        assert a.path != b.path
