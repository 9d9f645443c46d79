"""retaindb: RetainDB as chorus's long-term memory and per-person file store.

RetainDB keeps memories per project and user behind a REST API with bearer
auth; it has no PyPI client, so httpx speaks its published routes in
:mod:`._client` (``pip install 'chorus[retaindb]'``). Every write goes first to
a durable local SQLite queue (``CHORUS_HOME/providers/retaindb/queue.db``) and
is replayed after a crash; a write sent without an answer is looked up on the
server before it is sent again, so a killed worker neither loses nor doubles it."""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._provider import RetainDBProvider

__all__ = ["RetainDBProvider", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`RetainDBProvider` with the plugin host."""
    ctx.register_memory_provider(RetainDBProvider())
