"""openviking: a self-hosted OpenViking context database as chorus's long-term memory.

OpenViking (``openviking-server``) is a two-way context database: chorus gives
it each person's conversations and it gives back what it extracted, under a
``viking://`` hierarchy the model can browse. Turns are batched durably per
session on local disk and committed when the session ends, with crash markers
so an interrupted commit is finished later without doubling anything. Speaks
the REST API with httpx (``pip install 'chorus[openviking]'``); the
``openviking`` package itself is not needed.
"""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._provider import OpenVikingProvider

__all__ = ["OpenVikingProvider", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`OpenVikingProvider` with the plugin host."""
    ctx.register_memory_provider(OpenVikingProvider())
