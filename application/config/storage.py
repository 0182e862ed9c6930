"""The `storage` section: where the journal and its read models live (issue 16, ADR 0050).

`{"backend": "sqlite"}` (the default) is the embedded `sessions.db` beside the Markdown
files. `{"backend": "postgres", "dsnEnv": "PI_MEMORY_DSN"}` is a PostgreSQL database shared by
many hosts (the organisation layer of container deployments); the DSN, with its password, is
read only from the named environment variable, never from the file.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from pi_hermes_memory.config.settings import _Section

_ENV_VAR_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_MAX_CONNECTIONS: Final = 4


class StorageBackend(enum.StrEnum):
    SQLITE = "sqlite"
    POSTGRES = "postgres"


@attrs.frozen(kw_only=True)
class StorageConfig:
    """`dsn` is kept out of repr (it may carry a password); `problem` says why the store
    cannot be opened (a requested PostgreSQL store, or a `storage` section that cannot be
    read): opening then fails with that message, as falling back to a local store would
    split the team's memory."""

    backend: StorageBackend = StorageBackend.SQLITE
    dsn_env: str | None = None
    dsn: str | None = attrs.field(default=None, repr=False)
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    problem: str | None = None


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, str) else type(value).__name__
    return text if len(text) <= 40 else f"{text[:37]}..."


def parse_storage(top: _Section, environ: Mapping[str, str]) -> StorageConfig:
    """A `storage` section that is not an object, or a `backend` that is neither 'sqlite' nor
    'postgres' (a typo such as 'postgresql'), sets `problem` instead of falling back to the
    local store: a host meant for the team's database would otherwise write a store of its
    own, unseen by the other hosts, and import their entries from its Markdown files."""
    raw = top.get("storage")
    if raw is not None and not isinstance(raw, Mapping):
        return StorageConfig(
            problem="storage: expected an object such as "
            '{"backend": "postgres", "dsnEnv": "NAME"}; no store is opened rather than one '
            "other than the one meant"
        )
    section = top.section("storage")
    value = section.get("backend")
    backend = next((b for b in StorageBackend if b.value == value), None)
    if value is not None and backend is None:
        choices = ", ".join(repr(b.value) for b in StorageBackend)
        return StorageConfig(
            problem=f"storage.backend: expected one of {choices}, not {_shown(value)}; no "
            "store is opened rather than one other than the one meant"
        )
    connections = section.optional_integer(
        "maxConnections", minimum=1, maximum=100, fallback=f"using {DEFAULT_MAX_CONNECTIONS}"
    )
    settings = StorageConfig(max_connections=connections or DEFAULT_MAX_CONNECTIONS)
    if section.get("dsn") is not None:
        section.warn(
            "dsn",
            "a DSN is never read from the config file (it may hold a password); it was "
            "ignored. Put it in an environment variable and name it in storage.dsnEnv",
        )
    if backend is not StorageBackend.POSTGRES:
        return settings
    name = section.optional_text("dsnEnv", fallback="")
    if name is None or not _ENV_VAR_NAME.fullmatch(name):
        return attrs.evolve(
            settings,
            backend=StorageBackend.POSTGRES,
            problem="storage.backend is 'postgres' but storage.dsnEnv does not name an "
            "environment variable ([A-Za-z_][A-Za-z0-9_]*) holding the DSN",
        )
    dsn = environ.get(name, "").strip()
    return attrs.evolve(
        settings,
        backend=StorageBackend.POSTGRES,
        dsn_env=name,
        dsn=dsn or None,
        problem=None
        if dsn
        else f"storage.backend is 'postgres' but the environment variable {name} is not set "
        "or is empty",
    )


__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "StorageBackend",
    "StorageConfig",
    "parse_storage",
]
