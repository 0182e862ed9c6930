"""Our connection settings read back exactly as `apsw.bestpractice`'s (ADR 0004, ADR 0080):
the factory writes the few settings out so that opening a store does not import `apsw.ext`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import apsw
import apsw.bestpractice as bp
import pytest
from pi_hermes_memory.adapters.sqlite import connection as ours

Setting = Callable[[apsw.Connection], None]

PAIRS: list[tuple[str, Setting, Setting]] = [
    ("foreign_keys", ours.enable_foreign_keys, bp.connection_enable_foreign_keys),
    ("recursive_triggers", ours.recursive_triggers, bp.connection_recursive_triggers),
    ("dqs", ours.no_double_quoted_strings, bp.connection_dqs),
]


def _state(conn: apsw.Connection) -> tuple[object, ...]:
    return (
        conn.pragma("foreign_keys"),
        conn.pragma("recursive_triggers"),
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, -1),
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, -1),
    )


@pytest.mark.parametrize(("name", "mine", "theirs"), PAIRS, ids=[p[0] for p in PAIRS])
def test_each_setting_reads_back_as_bestpractice(
    tmp_path: Path, name: str, mine: Setting, theirs: Setting
) -> None:
    a, b = apsw.Connection(str(tmp_path / "a.db")), apsw.Connection(str(tmp_path / "b.db"))
    before = _state(a)
    mine(a)
    theirs(b)
    assert _state(a) == _state(b) != before, name


def test_the_factory_connection_matches_bestpractice_and_refuses_double_quoted_strings(
    tmp_path: Path,
) -> None:
    conn = ours.connect(tmp_path / "store.db")
    reference = apsw.Connection(str(tmp_path / "ref.db"))
    bp.connection_busy_timeout(reference, ours.BUSY_TIMEOUT_MS)
    bp.connection_enable_foreign_keys(reference)
    bp.connection_dqs(reference)
    bp.connection_recursive_triggers(reference)
    assert _state(conn) == _state(reference)
    conn.execute("CREATE TABLE t(x)")
    with pytest.raises(apsw.SQLError):
        conn.execute('SELECT "not a column" FROM t')


def test_opening_a_connection_does_not_import_apsw_ext(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; "
        "from pi_hermes_memory.adapters.sqlite.connection import connect; "
        f"connect(Path({str(tmp_path / 'x.db')!r})).execute('select 1'); "
        "print('apsw.ext' in sys.modules, 'apsw.bestpractice' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
