"""The write side of the memory service and the API, each module imported on its first use.

Opening a store and searching do not load the commands, decisions, moves, purges, restores
and look-ups by id (issue 29, ADR 0099; tests/e2e/test_cli_startup.py `NOT_FOR_A_SEARCH`),
and an add does not load what only a move, a purge or a restore uses. The modules are named
here once: `service.py` and `api.py` use them as `commands.AddMemory`, `deciding.decide`, …;
the type checker sees the modules themselves, the running program a stand-in that imports its
module on the first attribute read and keeps each attribute it hands out (ADR 0108).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_hermes_memory.domain.memory import commands
    from pi_hermes_memory.domain.memory import decide as deciding
    from pi_hermes_memory.domain.memory import move as moves
    from pi_hermes_memory.domain.memory import purge as purges
    from pi_hermes_memory.domain.memory import restore as restores
    from pi_hermes_memory.memory import by_id, purging
else:

    class _OnFirstUse:
        """A module imported when one of its attributes is first read."""

        def __init__(self, name: str) -> None:
            self._module_name = name

        def __getattr__(self, attr: str) -> Any:
            value = getattr(importlib.import_module(self._module_name), attr)
            setattr(self, attr, value)  # the next read is a plain attribute
            return value

        def __repr__(self) -> str:
            return f"<module {self._module_name!r}, imported on first use>"

    commands = _OnFirstUse("pi_hermes_memory.domain.memory.commands")
    deciding = _OnFirstUse("pi_hermes_memory.domain.memory.decide")
    moves = _OnFirstUse("pi_hermes_memory.domain.memory.move")
    purges = _OnFirstUse("pi_hermes_memory.domain.memory.purge")
    restores = _OnFirstUse("pi_hermes_memory.domain.memory.restore")
    by_id = _OnFirstUse("pi_hermes_memory.memory.by_id")
    purging = _OnFirstUse("pi_hermes_memory.memory.purging")

__all__ = ["by_id", "commands", "deciding", "moves", "purges", "purging", "restores"]
