"""Opening a PostgreSQL store while the server drops connections (issue 26 §6): `open` tries a
dropped or refused connection again for a few seconds, as a write waits for its pool; a lasting
failure (a missing database) still fails at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.errors import StorageFailed
from pi_hermes_memory.testing.contracts import EventWriter

from tests.support.postgres import Cluster, ClusterUnavailable, running_cluster, with_dbname


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    pytest.importorskip("psycopg")
    try:
        with running_cluster() as started:
            yield started
    except ClusterUnavailable as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")


def test_open_waits_for_a_server_that_is_restarting(cluster: Cluster) -> None:
    dsn = cluster.dsn()
    first = PgStorage(dsn, timeout=10)
    EventWriter(first).add("written before the restart")
    cluster.pause()  # drops every connection; the server is gone for a moment
    restart = threading.Timer(1.0, cluster.resume)
    restart.start()
    try:
        started = time.monotonic()
        second = PgStorage(dsn, timeout=10)
        try:
            assert time.monotonic() - started >= 0.5  # it did wait for the server
            assert second._migrate() is None
        finally:
            second.close()
    finally:
        restart.join()
        first.close()


def test_open_retries_a_connection_the_server_terminated(cluster: Cluster) -> None:
    import psycopg

    dsn = cluster.dsn()
    storage = PgStorage(dsn, timeout=10)
    storage.close()

    # the pool's first connection is ended by the server before the schema check uses it
    real_open = PgStorage._migrate
    ended: list[int] = []

    def drop_then_migrate(self: PgStorage) -> None:
        if not ended:
            with psycopg.connect(dsn, autocommit=True) as admin:
                rows = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = 'pi-hermes-memory'"
                ).fetchall()
            ended.append(len(rows))
        real_open(self)

    PgStorage._migrate = drop_then_migrate  # type: ignore[method-assign]
    try:
        reopened = PgStorage(dsn, timeout=10)
    finally:
        PgStorage._migrate = real_open  # type: ignore[method-assign]
    try:
        assert ended and ended[0] >= 1
        EventWriter(reopened).add("written after the drop")
    finally:
        reopened.close()


def test_a_missing_database_fails_at_once(cluster: Cluster) -> None:
    started = time.monotonic()
    with pytest.raises(StorageFailed, match="does not exist"):
        PgStorage(with_dbname(cluster.dsn(), "no_such_database"), timeout=10)
    assert time.monotonic() - started < 2


def test_a_closed_store_raises_store_closed(pg_dsn: str) -> None:
    from pi_hermes_memory.errors import StoreClosed

    storage = PgStorage(pg_dsn, timeout=5)
    storage.close()
    with pytest.raises(StoreClosed), storage.transaction() as uow:
        uow.journal.version("memory:memory")
