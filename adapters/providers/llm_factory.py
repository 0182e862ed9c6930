"""Composition of the LLM port: the adapter `llm_plan` decided on, or None when it is off.

Part of the composition root (with `pi_hermes_memory.bootstrap`): the only place besides it
that imports the LLM adapters, lazily, so a store without an LLM never loads httpx for it.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pi_hermes_memory.config.settings import Config, LlmProvider
from pi_hermes_memory.learning.llm import Which, llm_plan
from pi_hermes_memory.ports.llm import Completer

if TYPE_CHECKING:
    import httpx

__all__ = ["completer_from_config"]


def completer_from_config(
    config: Config,
    environ: Mapping[str, str],
    *,
    logger: Any = None,
    client: httpx.Client | None = None,
    cwd: str | None = None,
    which: Which = shutil.which,
) -> Completer | None:
    """The configured `Completer`, or None when `llm_status(config, environ)` says the LLM is
    off (its `message` says why). A child process inherits `environ` and runs in `cwd`
    (default: the current directory); an HTTP completer uses `client` when given."""
    plan = llm_plan(config, environ, which=which)
    if not plan.status.enabled:
        return None
    settings = plan.settings
    if settings.provider is LlmProvider.CUSTOM and settings.custom is not None:
        from pi_hermes_memory.adapters.providers.custom import load_adapter

        completer: Completer = load_adapter("llm.provider", settings.custom)
        return completer
    if settings.provider is LlmProvider.OPENAI_COMPATIBLE:
        from pi_hermes_memory.adapters.providers.openai_llm import OpenAICompatibleCompleter

        assert settings.base_url is not None and settings.model is not None  # checked by plan
        return OpenAICompatibleCompleter(
            base_url=settings.base_url,
            model=settings.model,
            api_key=plan.api_key,
            temperature=settings.temperature,
            max_reply_bytes=settings.max_reply_bytes,
            client=client,
            logger=logger,
        )
    from pi_hermes_memory.adapters.providers.command_llm import CommandCompleter

    assert plan.argv is not None  # checked by plan
    return CommandCompleter(
        plan.argv,
        max_reply_bytes=settings.max_reply_bytes,
        environ=plan.environ,
        cwd=cwd,
        logger=logger,
    )
