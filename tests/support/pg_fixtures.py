"""pytest fixtures for the PostgreSQL tests (a plugin of tests/conftest.py).

One throwaway cluster per test session (tests/support/postgres.py), or the server named by
$PI_HERMES_PG_DSN; one fresh database per test, created from a template that already holds
the schema. With CI=true a missing server fails the tests instead of skipping them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from tests.support.postgres import (
    DSN_ENV,
    ClusterUnavailable,
    create_database,
    start_cluster,
    with_dbname,
)

_TEMPLATE = "phm_template"
_numbers = itertools.count(1)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required in CI and could not be used: {reason}")
    pytest.skip(f"no PostgreSQL server ({reason}); run `make pg` or install postgresql")


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Iterator[str]:
    """A DSN of a server's maintenance database on which this session may create databases."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("the postgres extra (psycopg) is not installed")
    configured = os.environ.get(DSN_ENV)
    cluster = None
    if configured:
        admin = configured
    else:
        try:
            cluster = start_cluster()
        except ClusterUnavailable as exc:
            _unavailable(str(exc))
        admin = cluster.dsn()
    try:
        from pi_hermes_memory.adapters.postgres.storage import PgStorage

        template = f"{_TEMPLATE}_{os.getpid()}"
        create_database(admin, template)
        PgStorage(with_dbname(admin, template)).close()  # the schema, once
        yield f"{admin}\x00{template}"
    finally:
        if cluster is not None:
            cluster.stop()


def fresh_database(pg_admin_dsn: str) -> str:
    """A DSN of a new database holding the current schema (and nothing else)."""
    admin, template = pg_admin_dsn.split("\x00")
    name = f"phm_{os.getpid()}_{next(_numbers)}"
    create_database(admin, name, template)
    return with_dbname(admin, name)


@pytest.fixture
def pg_dsn(pg_admin_dsn: str) -> str:
    """A DSN of a fresh database holding the current schema (and nothing else)."""
    return fresh_database(pg_admin_dsn)
