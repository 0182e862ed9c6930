"""A PostgreSQL store whose database goes away while it is open (issue 16): the error says
why (the pool alone says only how long it waited), and what was acknowledged before stays."""

from __future__ import annotations

import psycopg
import pytest
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.errors import StorageFailed
from pi_hermes_memory.testing.contracts import EventWriter
from psycopg.conninfo import conninfo_to_dict


def test_a_dropped_database_is_named_as_the_reason(pg_dsn: str, pg_admin_dsn: str) -> None:
    storage = PgStorage(pg_dsn, timeout=2)
    try:
        EventWriter(storage).add("acknowledged before the drop")
        name = conninfo_to_dict(pg_dsn)["dbname"]
        admin = pg_admin_dsn.split("\x00")[0]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        for _ in range(2):  # the connection the drop ended, then the pool that gets none
            with pytest.raises(StorageFailed) as raised, storage.transaction() as uow:
                uow.journal.version("memory:memory")
        assert "does not exist" in str(raised.value), raised.value
        assert "couldn't get a connection" not in str(raised.value)
        with pytest.raises(StorageFailed, match="does not exist"):
            storage.scrub()
    finally:
        storage.close()
