"""byterover: a local-first context tree of each person, through the ``brv`` CLI.

ByteRover (npm ``byterover-cli``) keeps a hierarchical context tree that an
LLM curates; chorus runs ``brv`` as a subprocess, one working directory per
user key under ``CHORUS_HOME/providers/byterover/``, so each person's tree is
apart. Turns, built-in memory writes and history about to be compressed are
curated into it; recall before a turn is ``brv query``. The model gets
``brv_query``, ``brv_curate`` and ``brv_status``. No Python dependencies: the
provider is available when ``brv`` is on ``PATH`` (``npm i -g byterover-cli``).
"""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._provider import ByteRoverProvider

__all__ = ["ByteRoverProvider", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`ByteRoverProvider` with the plugin host."""
    ctx.register_memory_provider(ByteRoverProvider())
