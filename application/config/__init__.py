"""Configuration: the values, the pure parser of `hermes-memory-config.json` (`settings`) and
its `storage` and `adapters` sections (`storage`, `adapters`). Every public name of them is
re-exported here."""

from pi_hermes_memory.config import adapters as _adapters
from pi_hermes_memory.config import settings as _settings
from pi_hermes_memory.config import storage as _storage
from pi_hermes_memory.config.adapters import *  # noqa: F403 (their __all__ is the list)
from pi_hermes_memory.config.settings import *  # noqa: F403
from pi_hermes_memory.config.storage import *  # noqa: F403

__all__ = [*_adapters.__all__, *_settings.__all__, *_storage.__all__]
