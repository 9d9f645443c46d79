"""hindsight: long-term memory of each person in a Hindsight memory bank.

Each chorus user (the canonical user key, or the speaker in a group session)
has a bank of their own on a Hindsight server (``hindsight-client``, reached
over HTTP). A session's turns are buffered on disk under
``CHORUS_HOME/providers/hindsight/`` and retained as one document when the
session ends (or in parts when it grows long); recall runs before each turn
with a cache that a background job warms after the last one; the model gets
``hindsight_retain``, ``hindsight_recall`` and ``hindsight_reflect``. Needs
``pip install 'chorus[hindsight]'``.
"""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._provider import HindsightProvider

__all__ = ["HindsightProvider", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`HindsightProvider` with the plugin host."""
    ctx.register_memory_provider(HindsightProvider())
