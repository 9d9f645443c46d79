"""mem0: long-term memory of each person through the mem0ai package.

Two modes (``memory.providers.mem0.mode``): ``oss`` runs mem0's ``Memory`` in
this process, extracting facts with a chat model and embedding them on any
OpenAI-compatible server and keeping them in Qdrant local storage under
``CHORUS_HOME/providers/mem0/`` (one store per user, opened per operation so
the gateway and the workers can share it); ``platform`` uses the hosted Mem0
API. The model gets four tools: ``mem0_search``, ``mem0_add``, ``mem0_update``
and ``mem0_delete``. Needs ``pip install 'chorus[mem0]'``.
"""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._provider import Mem0Provider

__all__ = ["Mem0Provider", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`Mem0Provider` with the plugin host."""
    ctx.register_memory_provider(Mem0Provider())
