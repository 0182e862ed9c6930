"""The keyword index stays in few FTS5 segments (ADR 0102), on real SQLite files.

- single-row write transactions (as `Memory.add` commits them) leave `memories_fts` in at
  most a handful of segments, where FTS5's automerge alone leaves many more, and the
  searches answer exactly as on the same index merged into one segment;
- a real child process is SIGKILLed inside the merge step that follows an acknowledged
  write (from SQLite's progress handler, i.e. while FTS5 is reading and writing its
  segments): every acknowledged row is there, the index passes FTS5's integrity check and
  finds the last row.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
import pytest
from pi_hermes_memory.adapters.sqlite import fts
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.ports.search import SearchQuery
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

_WORDS = [
    "deploy",
    "invoice",
    "vault",
    "retry",
    "signed",
    "archive",
    "payment",
    "script",
    "network",
    "cache",
]
_ZH = "部署脚本需要公司网络发票签名归档重试缓存"


def _text(n: int) -> str:
    words = [_WORDS[(n * k + k) % len(_WORDS)] for k in range(1, 6)]
    zh = _ZH[n % 15 : n % 15 + 4] if n % 3 == 0 else ""
    return f"note {n} {' '.join(words)} {zh}".strip()


def _segments(path: Path) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(DISTINCT segid) FROM memories_fts_idx").get)
    finally:
        conn.close()


def _search(storage: SqliteStorage, text: str) -> list[tuple[str, float]]:
    clauses = search_clauses(SessionScope(project=None), Target.MEMORY)
    query = SearchQuery(text=text, clauses=clauses, limit=20)
    return [(h.id, h.score) for h in SqliteSearchIndex(storage).search(query)]


def _write(path: Path, rows: int) -> None:
    storage = SqliteStorage(path)
    try:
        writer = EventWriter(storage)
        for n in range(rows):
            writer.add(_text(n))
            if n % 7 == 6:  # a replace rewrites a row's index entries
                writer.replace(f"s{writer.n - 2:04d}", _text(n + 1000))
    finally:
        storage.close()


def test_single_row_writes_keep_the_keyword_index_in_few_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged, unmerged = tmp_path / "merged.db", tmp_path / "unmerged.db"
    _write(merged, 300)
    monkeypatch.setattr("pi_hermes_memory.adapters.sqlite.storage.merge_step", lambda c: True)
    _write(unmerged, 300)
    monkeypatch.undo()
    # about one segment per level (usermerge 2), against FTS5's automerge of 4 alone
    assert _segments(merged) <= 4 < _segments(unmerged)
    one = tmp_path / "one.db"
    shutil.copy(merged, one)
    conn = apsw.Connection(str(one))
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
    conn.close()
    assert _segments(one) == 1
    a, b = SqliteStorage(merged), SqliteStorage(one)
    try:
        for text in ["deploy", "invoice vault", "note 12", "部署", "网络发票", "retry cache x"]:
            found = _search(a, text)
            assert found == _search(b, text), text
        assert _search(a, "invoice vault")  # the queries are not all empty
    finally:
        a.close()
        b.close()


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from pi_hermes_memory.adapters.sqlite import fts, storage as storage_module
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
    from pi_hermes_memory.testing.contracts import EventWriter
    from tests.integration.test_keyword_index_merge import _text

    kill_at = int(sys.argv[2])
    calls = 0

    def progress():
        global calls
        calls += 1
        if calls >= kill_at:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        return False

    def merge_then_die(conn):
        # called after the add's COMMIT: the row is durable, the add has not returned yet
        print("committed", f"s{writer.n:04d}", flush=True)
        if writer.n >= 5:
            conn.set_progress_handler(progress, 1)
        try:
            return fts.merge_step(conn)
        finally:
            conn.set_progress_handler(None)

    storage_module.merge_step = merge_then_die
    storage = SqliteStorage(Path(sys.argv[1]))
    writer = EventWriter(storage)
    for n in range(10_000):
        entry = writer.add(_text(n))
        print("acked", entry, flush=True)  # written by the add's COMMIT, before the merge
    """
)


@pytest.mark.parametrize("kill_at", [1, 40, 400, 4000])
def test_a_sigkill_inside_the_merge_loses_no_acknowledged_row(tmp_path: Path, kill_at: int) -> None:
    path = tmp_path / "sessions.db"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(kill_at)],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    acked = [w[1] for w in lines if w[0] == "acked"]
    committed = [w[1] for w in lines if w[0] == "committed"]
    assert len(acked) >= 4 and committed[-1] not in acked  # killed inside a merge
    storage = SqliteStorage(path)
    try:
        conn = storage.connection
        ids = {str(r[0]) for r in conn.execute("SELECT id FROM memories")}
        assert set(acked) <= set(committed) <= ids
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
        last = len(committed) - 1
        assert committed[-1] in [i for i, _ in _search(storage, f"note {last}")]
        assert fts.merge_step(conn)  # the next merge runs on the index as it was left
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        storage.close()
