"""The PostgreSQL vector cache follows every host's writes (issue 16): two storages on one
database stand for two hosts."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.postgres.vectors import PgVectorStore
from pi_hermes_memory.testing.contracts import EventWriter
from pi_hermes_memory.testing.vector_contracts import ALL, MODEL


@pytest.fixture
def hosts(pg_dsn: str) -> Iterator[tuple[PgStorage, PgStorage]]:
    first, second = PgStorage(pg_dsn), PgStorage(pg_dsn)
    yield first, second
    first.close()
    second.close()


def test_another_hosts_commit_reaches_the_cached_matrix(
    hosts: tuple[PgStorage, PgStorage],
) -> None:
    first, second = hosts
    mine, theirs = PgVectorStore(first), PgVectorStore(second)
    a = EventWriter(first).add("alpha")
    mine.put([(a, "alpha")], np.eye(1, 2, dtype=np.float32), MODEL)
    assert mine.candidates(ALL, MODEL)[0] == (a,)
    assert mine.missing(ALL, MODEL, limit=10) == []  # remembered as complete
    # the other host's transaction is open while this one reads: it commits afterwards
    writing = second.transaction()
    uow = writing.__enter__()
    from pi_hermes_memory.testing.contracts import added

    version = uow.journal.version("memory:memory")
    event = added(version + 1, "zz-beta", "beta")
    uow.journal.append("memory:memory", version, [event])
    uow.projection.apply([event])
    assert mine.candidates(ALL, MODEL)[0] == (a,)
    assert mine.missing(ALL, MODEL, limit=10) == []
    writing.__exit__(None, None, None)
    assert mine.missing(ALL, MODEL, limit=10) == [("zz-beta", "beta")]
    theirs.put([("zz-beta", "beta")], np.eye(1, 2, 1, dtype=np.float32), MODEL)
    ids, matrix = mine.candidates(ALL, MODEL)
    assert sorted(ids) == [a, "zz-beta"] and not matrix.flags.writeable
    assert mine.missing(ALL, MODEL, limit=10) == []
