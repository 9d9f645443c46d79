"""What a memory provider may use to embed text: the LLM endpoint's ``/v1/embeddings``.

The agent layer implements :class:`Embedder` over the same endpoint, base URL
and key as chat and hands it to providers as ``initialize(embedder=...)``;
a provider never builds its own client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memory.errors import EmbeddingsError, EmbeddingsUnsupported

__all__ = ["Embedder", "EmbeddingsError", "EmbeddingsUnsupported"]


class Embedder(Protocol):
    """Embeds texts with the LLM endpoint (blocking; call it off the event loop)."""

    def embed(self, texts: Sequence[str], *, model: str) -> list[list[float]]:
        """One vector per text, in order.

        Raises :class:`EmbeddingsUnsupported` when the endpoint has no embeddings
        (after the first such answer, at once and without asking again) and
        :class:`EmbeddingsError` when this call failed.
        """
        ...
