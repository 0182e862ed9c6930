"""The live agent session: the lifecycle API, auto-recall/capture, the system-prompt context."""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # the old flat module's names, for one release (ADR 0055)
    from pi_hermes_memory._moved import forward_attributes

    __getattr__ = forward_attributes(__name__, "pi_hermes_memory.lifecycle.session")
    del forward_attributes
