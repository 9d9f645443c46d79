"""Fact and query embeddings from the LLM endpoint: one more recall signal, never a must.

With ``embeddings: auto`` and an embedder from the gateway (see
:class:`memory.embeddings.Embedder`), every fact is embedded right after it is
stored, and every query before it is ranked. When the endpoint has no
embeddings the embedder says so once (one INFO line) and this stays quiet for
the rest of the process. When a call fails the fact is stored all the same,
without an embedding: recall goes on with the other signals, and facts still
missing one are embedded (:data:`BATCH` at a time) on a later write or recall,
no sooner than :data:`RETRY_SECONDS` after the failure. ``off`` never calls it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from memory.embeddings import Embedder, EmbeddingsError, EmbeddingsUnsupported

from . import _hrr, _vectors
from ._store import FactStore

logger = logging.getLogger(__name__)

BATCH = 32
"""Facts embedded per request when filling in missing embeddings."""

RETRY_SECONDS = 60.0
"""After a failed call, the endpoint is not asked again for this long."""


class Embeddings:
    """The endpoint's embeddings for one provider instance (see the module docstring)."""

    def __init__(
        self, embedder: Embedder, model: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._embedder = embedder
        self._model = model
        self._clock = clock
        self._unsupported = False
        self._retry_at = 0.0
        self._dimensions: int | None = None
        """The size of the model's embeddings, once one came back."""
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """False once the endpoint said it has no embeddings."""
        return not self._unsupported

    def _call(self, texts: list[str]) -> list[list[float]] | None:
        with self._lock:
            if self._unsupported or self._clock() < self._retry_at:
                return None
        try:
            vectors = self._embedder.embed(texts, model=self._model)
            if vectors:
                self._dimensions = len(vectors[0])
            return vectors
        except EmbeddingsUnsupported:
            with self._lock:
                self._unsupported = True
        except Exception as exc:  # a failing endpoint must never lose a fact or a recall
            with self._lock:
                self._retry_at = self._clock() + RETRY_SECONDS
            logger.warning(
                "holographic: the LLM endpoint's embeddings failed (%s); facts are kept "
                "without them and recall goes on",
                exc if isinstance(exc, EmbeddingsError) else type(exc).__name__,
            )
        return None

    def fill(self, store: FactStore) -> int:
        """Embed up to :data:`BATCH` facts stored without an embedding (and, once this
        model's size is known, as many stored with another model's); how many were."""
        known = self._dimensions
        done = self._fill_batch(store)
        if known is None and self._dimensions is not None:
            done += self._fill_batch(store)  # now other models' embeddings can be told apart
        return done

    def _fill_batch(self, store: FactStore) -> int:
        missing = store.missing_embeddings(BATCH, self._dimensions)
        if not missing:
            return 0
        vectors = self._call([content for _, content in missing])
        if vectors is None or len(vectors) != len(missing):
            return 0
        store.set_embeddings(
            [
                (fact_id, content, _vectors.embedding_bytes(vector))
                for (fact_id, content), vector in zip(missing, vectors, strict=True)
            ]
        )
        return len(missing)

    def query(self, text: str) -> Any | None:
        """The unit float32 embedding of ``text``; None when there is none to be had."""
        vectors = self._call([text])
        if not vectors:
            return None
        np: Any = _hrr._np()
        vector = np.asarray(vectors[0], dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0.0 else None
