"""supermemory: long-term memory of each person on Supermemory, through its official SDK.

Each chorus user key gets its own Supermemory container tag (injective, see
``_tags``), so no person's memories reach another's recall. Turns are buffered
on disk under ``CHORUS_HOME/providers/supermemory/`` and the whole session is
ingested as one conversation when it ends, which is how Supermemory builds its
profile of a person; recall before each turn is that profile (lasting and
recent facts) with the memories matching the message. Writes of the built-in
memory are mirrored as documents. The model gets ``supermemory_store``,
``supermemory_search``, ``supermemory_forget`` and ``supermemory_profile``.
Needs the ``supermemory`` SDK 3.x (``pip install 'chorus[supermemory]'``) and
``SUPERMEMORY_API_KEY``.
"""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._provider import SupermemoryProvider

__all__ = ["SupermemoryProvider", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`SupermemoryProvider` with the plugin host."""
    ctx.register_memory_provider(SupermemoryProvider())
