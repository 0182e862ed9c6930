"""The connection pool and the mapping of driver errors (ADR 0050).

The DSN, password included, comes only from the environment (`storage.dsnEnv`); it never
appears in a message: errors name the server by host and database only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
from pi_hermes_memory.errors import StorageFailed
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

#: application_name of our connections (seen in pg_stat_activity)
APPLICATION = "pi-hermes-memory"
#: how long opening a store keeps trying a server that dropped or refused the connection (a
#: restart, a failover, a terminated backend) before it raises, as a write waits for the pool
OPEN_RETRY_S = 5.0
_FIRST_PAUSE_S = 0.1
_MAX_PAUSE_S = 1.0

_T = TypeVar("_T")
#: FATAL replies at connect time that pass: a server starting, stopping or ending backends
_NOT_READY = ("the database system is", "terminating connection", "too many clients")


#: why an unparsable DSN is refused; the parser's own message is never shown, as it quotes
#: the text around the fault, which can be the password (`invalid percent-encoded token:
#: "pass%word"`, `missing "=" after "word"` for an unquoted password with a space)
UNPARSABLE = (
    "the DSN cannot be parsed (expected key=value pairs or a postgresql:// URI; "
    "the parser's message is not shown, as it may quote the password)"
)


def describe(dsn: str) -> str:
    """The server and database of `dsn`, without user or password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "PostgreSQL (unparsable DSN)"
    host = params.get("host") or "localhost"
    return f"PostgreSQL {host}/{params.get('dbname') or params.get('user') or ''}"


def open_pool(
    dsn: str, *, max_size: int = 4, timeout: float = 30.0, retry_s: float = OPEN_RETRY_S
) -> ConnectionPool:
    """A pool of autocommit connections (transactions are opened explicitly); raises
    StorageFailed when the server cannot be reached within `timeout` (a dropped or refused
    connection is tried again for `retry_s`), or the DSN cannot be parsed (without the
    parser's message: it may quote the password)."""
    try:
        secret = str(conninfo_to_dict(dsn).get("password") or "")
    except psycopg.ProgrammingError:
        raise StorageFailed(f"cannot connect to PostgreSQL: {UNPARSABLE}") from None
    # the server's own reason on a lasting failure (a pool would only say how long it waited);
    # a dropped or refused connection is tried again for `retry_s` (issue 26 §6)
    try:
        with_retry(
            lambda: psycopg.connect(dsn, connect_timeout=max(1, int(timeout))).close(),
            retry_s=min(retry_s, timeout),
        )
    except psycopg.Error as exc:
        raise StorageFailed(f"cannot connect to {describe(dsn)}: {_reason(exc, secret)}") from exc
    pool = ConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "application_name": APPLICATION},
        timeout=timeout,
        open=False,
        name="pi-hermes-memory",
    )
    try:
        pool.open(wait=True, timeout=timeout)
    except Exception as exc:  # PoolTimeout, OperationalError: the server is not there
        pool.close()
        raise StorageFailed(f"cannot connect to {describe(dsn)}: {_reason(exc, secret)}") from exc
    return pool


def transient(exc: BaseException) -> bool:
    """A failure of the connection itself, which a new connection may not meet: refused or
    closed (no SQLSTATE), a connection exception (class 08), or the server shutting down,
    starting up or ending the backend (57P01..57P05). A wrong password, a missing database or
    an SQL error are lasting: they are never tried again."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    if state is not None:
        return state.startswith(("08", "57P"))
    # a refusal at connect time carries no SQLSTATE: the server's FATAL line tells a lasting
    # one ("database ... does not exist", a failed password) from a server not ready yet
    text = str(exc)
    return "FATAL:" not in text or any(hint in text for hint in _NOT_READY)


def with_retry(action: Callable[[], _T], *, retry_s: float = OPEN_RETRY_S) -> _T:
    """`action()`, called again after a `transient` failure until `retry_s` seconds have
    passed (pauses from 0.1 s doubling to 1 s); the last failure is raised."""
    deadline = time.monotonic() + retry_s
    pause = _FIRST_PAUSE_S
    while True:
        try:
            return action()
        except psycopg.Error as exc:
            if not transient(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, _MAX_PAUSE_S)


def _reason(exc: BaseException, secret: str = "") -> str:
    text = str(exc).strip().splitlines()
    reason = text[0] if text else type(exc).__name__
    return reason.replace(secret, "***") if secret else reason  # should a driver ever echo it


def mapped(exc: psycopg.Error, where: str, dsn: str | None = None) -> StorageFailed:
    """One StorageFailed for a driver error (ADR 0023: driver exceptions never cross a port).
    With `dsn`, a pool that could get no connection says why: the pool only reports its
    wait ("couldn't get a connection after 30.00 sec"), so one direct connection attempt
    asks the server (the database dropped, the server down or refusing)."""
    if dsn is not None and isinstance(exc, PoolTimeout):
        try:
            secret = str(conninfo_to_dict(dsn).get("password") or "")
            psycopg.connect(dsn, connect_timeout=5).close()
        except psycopg.Error as probe:
            return StorageFailed(f"{where}: no connection: {_reason(probe, secret)}")
    return StorageFailed(f"{where}: {_reason(exc)}")
