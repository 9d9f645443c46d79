"""holographic: a local, per-user fact memory with entity links, trust and HRR recall.

Facts live in one SQLite database per user (FTS5 index, entity tables, stored
vectors) under ``CHORUS_HOME/providers/holographic/``; nothing leaves the
machine. The model gets two tools, ``fact_store`` and ``fact_feedback``.
Recall ranks facts by a hybrid of FTS5 bm25, term overlap, entity overlap and
trust, plus the cosine of holographic reduced representations when numpy is
installed (``pip install 'chorus[holographic]'``) and ``hrr`` is on, and the
cosine of the LLM endpoint's embeddings when it offers them (``embeddings``).
probe, related and reason use SQL joins over the entity links, or unbind the
facts' role–filler bindings (``probe_mode: unbind``, see :mod:`._algebra`).
"""

from __future__ import annotations

from plugins.memory import ProviderCollector

from ._cli import cli
from ._provider import HolographicProvider

__all__ = ["HolographicProvider", "cli", "register"]


def register(ctx: ProviderCollector) -> None:
    """Register a fresh :class:`HolographicProvider` with the plugin host."""
    ctx.register_memory_provider(HolographicProvider())
