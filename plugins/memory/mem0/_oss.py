"""mem0 in this process: ``mem0.Memory`` on Qdrant local storage, one store per user.

Layout, in each user's provider directory (``CHORUS_HOME/providers/mem0/users/
<platform>/<id>/``, ``chats/`` for a chat's shared key)::

    qdrant/       Qdrant local storage (the vectors and mem0's payloads)
    history.db    mem0's history and recent-messages database
    store.lock    the lock below

Several processes share one home: the gateway (``"primary"`` calls) and each
``chorus worker`` (``"background"`` calls). Qdrant local mode takes an
exclusive, non-blocking lock on its directory for as long as its client is
open; a second ``QdrantClient(path=...)`` - in another process, or even in the
same one - fails with "already accessed by another instance". So no client
stays open: each operation takes ``store.lock`` (``flock``, waiting up to the
caller's ``wait``, else :class:`StoreBusy`), opens the client, runs, and closes
it again, which also reloads what another process wrote in between. ``flock``
dies with its process, so a killed worker never leaves the store locked.

The ``mem0.Memory`` object of a store is built once and kept: each operation
hands it the freshly opened client (``vector_store.client``, and the entity
store's when mem0 made one). Its OpenAI clients are pointed at the configured
server with a bounded timeout and one retry.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from memory.providers import provider_dir

from ._backend import (
    AddOutcome,
    MemoryRecord,
    Message,
    StoreBusy,
    created_ids,
    to_record,
    to_records,
)
from ._config import PROVIDER_NAME, Settings

QDRANT_DIR = "qdrant"
HISTORY_FILE = "history.db"
LOCK_FILE = "store.lock"
LLM_TIMEOUT = 60.0
EMBEDDING_TIMEOUT = 30.0
MAX_RETRIES = 1
NO_API_KEY = "not-needed"
LIST_ALL_LIMIT = 100_000
"""Sent as the API key to a server that needs none (the OpenAI client insists on one)."""


@contextlib.contextmanager
def file_lock(path: Path, wait: float) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``; StoreBusy after ``wait`` seconds."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + max(0.0, wait)
        pause = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreBusy("the mem0 store is in use by another process") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _bounded(owner: Any, *, base_url: str, api_key: str, timeout: float) -> None:
    """Point ``owner.client`` (an OpenAI client inside mem0) at our server, time-bounded."""
    client = getattr(owner, "client", None)
    with_options = getattr(client, "with_options", None)
    if callable(with_options):
        owner.client = with_options(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=MAX_RETRIES
        )


class _UserStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.memory: Any = None
        self.lock = threading.Lock()


class OssBackend:
    """One :class:`_UserStore` per user id, each opened per operation (see the module)."""

    def __init__(self, mem0: ModuleType, chorus_home: Path, settings: Settings) -> None:
        self._mem0 = mem0
        self._home = chorus_home
        self._settings = settings
        self._stores: dict[str, _UserStore] = {}
        self._lock = threading.Lock()

    @property
    def api_key(self) -> str:
        return self._settings.openai_api_key or NO_API_KEY

    def directory(self, user_id: str) -> Path:
        return provider_dir(self._home, PROVIDER_NAME, user_id)

    def _store(self, user_id: str) -> _UserStore:
        with self._lock:
            store = self._stores.get(user_id)
            if store is None:
                store = _UserStore(self.directory(user_id))
                self._stores[user_id] = store
            return store

    def _memory_config(self, store: _UserStore, client: Any) -> dict[str, Any]:
        s = self._settings
        llm = {"model": s.llm_model, "api_key": self.api_key, "openai_base_url": s.openai_base_url}
        embedder: dict[str, Any] = {
            "model": s.embedding_model,
            "api_key": self.api_key,
            "openai_base_url": s.openai_base_url,
        }
        if s.embedding_dims is not None:
            embedder["embedding_dims"] = s.embedding_dims
        return {
            "llm": {"provider": "openai", "config": llm},
            "embedder": {"provider": "openai", "config": embedder},
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "client": client,
                    "collection_name": f"chorus_{s.vector_size}",
                    "embedding_model_dims": s.vector_size,
                },
            },
            "history_db_path": str(store.directory / HISTORY_FILE),
        }

    def _build(self, store: _UserStore, client: Any) -> Any:
        with warnings.catch_warnings():
            # mem0 asks a client it was handed for payload indexes; local Qdrant has none
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            memory = self._mem0.Memory.from_config(self._memory_config(store, client))
        url = self._settings.openai_base_url
        _bounded(memory.llm, base_url=url, api_key=self.api_key, timeout=LLM_TIMEOUT)
        _bounded(
            memory.embedding_model, base_url=url, api_key=self.api_key, timeout=EMBEDDING_TIMEOUT
        )
        return memory

    @contextlib.contextmanager
    def _memory(self, user_id: str, wait: float) -> Iterator[Any]:
        from qdrant_client import QdrantClient

        store = self._store(user_id)
        if not store.lock.acquire(timeout=max(0.0, wait)):
            raise StoreBusy("the mem0 store is in use by another thread")
        try:
            with file_lock(store.directory / LOCK_FILE, wait):
                client = QdrantClient(path=str(store.directory / QDRANT_DIR))
                try:
                    if store.memory is None:
                        store.memory = self._build(store, client)
                    else:
                        store.memory.vector_store.client = client
                        entities = getattr(store.memory, "_entity_store", None)
                        if entities is not None:
                            entities.client = client
                    yield store.memory
                finally:
                    client.close()
        finally:
            store.lock.release()

    # -- the Backend protocol ------------------------------------------------

    def add(
        self,
        user_id: str,
        messages: list[Message],
        *,
        metadata: dict[str, Any],
        infer: bool,
        wait: float,
    ) -> AddOutcome:
        with self._memory(user_id, wait) as memory:
            result = memory.add(messages, user_id=user_id, metadata=metadata, infer=infer)
        return AddOutcome(created_ids(result))

    def search(self, user_id: str, query: str, limit: int, *, wait: float) -> list[MemoryRecord]:
        with self._memory(user_id, wait) as memory:
            result = memory.search(query, filters={"user_id": user_id}, top_k=limit)
        return to_records(result)

    def get(self, user_id: str, memory_id: str, *, wait: float) -> MemoryRecord | None:
        with self._memory(user_id, wait) as memory:
            return to_record(memory.get(memory_id))

    def update(self, user_id: str, memory_id: str, text: str, *, wait: float) -> None:
        with self._memory(user_id, wait) as memory:
            memory.update(memory_id, text=text)

    def delete(self, user_id: str, memory_id: str, *, wait: float) -> None:
        with self._memory(user_id, wait) as memory:
            memory.delete(memory_id)

    def list_all(self, user_id: str, *, wait: float) -> list[MemoryRecord]:
        with self._memory(user_id, wait) as memory:
            result = memory.get_all(filters={"user_id": user_id}, top_k=LIST_ALL_LIMIT)
        return to_records(result)

    def delete_all(self, user_id: str, *, wait: float) -> None:
        with self._memory(user_id, wait) as memory:
            memory.delete_all(user_id=user_id)

    def forget_local(self, user_id: str) -> None:
        with self._lock:
            store = self._stores.pop(user_id, None)
        if store is not None:
            with store.lock:
                memory, store.memory = store.memory, None
            if memory is not None:
                with contextlib.suppress(Exception):
                    memory.close()

    def close(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            with store.lock:
                memory, store.memory = store.memory, None
            if memory is not None:
                with contextlib.suppress(Exception):
                    memory.close()
