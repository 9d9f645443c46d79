"""honcho: a theory of each person through Honcho (the ``honcho-ai`` SDK, the ``/v3`` API).

Each chorus user is a Honcho peer and each chorus session a Honcho session in
one workspace (``memory.providers.honcho.workspace_id``, ``chorus`` by
default); the assistant is a peer of its own that Honcho does not model. The
turns go to Honcho as session messages, Honcho draws conclusions and a peer card
from them, and before each turn the person's card and the conclusions that
bear on their message are injected. The model gets ``honcho_profile``,
``honcho_search``, ``honcho_reasoning`` (Honcho's dialectic Q&A),
``honcho_context`` and ``honcho_conclude``; ``recall_mode`` chooses injection,
tools or both. Needs ``pip install 'chorus[honcho]'``.
"""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._provider import HonchoProvider

__all__ = ["HonchoProvider", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`HonchoProvider` with the plugin host."""
    ctx.register_memory_provider(HonchoProvider())
