"""What the provider needs from mem0, whichever way it runs (in process or the platform).

Every call names the ``user_id`` it acts for; a backend keeps each user's
memories apart (the in-process one even in separate stores), and the provider
still checks the owner of every record it is given. Results are normalised to
:class:`MemoryRecord`. A backend raises :class:`StoreBusy` when another
process holds the store for longer than the caller may wait, and lets any
other backend error through; ``get`` answers None for an id it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from plugins.memory._kit import ProviderUnavailable

Message = dict[str, str]


class StoreBusy(ProviderUnavailable):
    """The store is held by another process (or thread) for longer than the caller may wait."""


@dataclass(frozen=True)
class MemoryRecord:
    id: str
    text: str
    user_id: str | None = None
    score: float | None = None
    created_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """The record as a tool shows it to the model."""
        data: dict[str, Any] = {"id": self.id, "memory": self.text}
        if self.score is not None:
            data["score"] = round(self.score, 4)
        if self.created_at:
            data["created_at"] = self.created_at
        return data


@dataclass(frozen=True)
class AddOutcome:
    """What an add did: the ids it created, or (platform) the event it queued."""

    memory_ids: list[str]
    queued: bool = False
    event_id: str | None = None


class Backend(Protocol):
    def add(
        self,
        user_id: str,
        messages: list[Message],
        *,
        metadata: dict[str, Any],
        infer: bool,
        wait: float,
    ) -> AddOutcome: ...

    def search(
        self, user_id: str, query: str, limit: int, *, wait: float
    ) -> list[MemoryRecord]: ...

    def get(self, user_id: str, memory_id: str, *, wait: float) -> MemoryRecord | None: ...

    def update(self, user_id: str, memory_id: str, text: str, *, wait: float) -> None: ...

    def delete(self, user_id: str, memory_id: str, *, wait: float) -> None: ...

    def list_all(self, user_id: str, *, wait: float) -> list[MemoryRecord]:
        """Every memory of ``user_id``."""
        ...

    def delete_all(self, user_id: str, *, wait: float) -> None:
        """Delete every memory of ``user_id``."""
        ...

    def forget_local(self, user_id: str) -> None:
        """Drop what is open of ``user_id``'s store, before their directory is removed."""
        ...

    def close(self) -> None: ...


def to_record(item: Any) -> MemoryRecord | None:
    """A mem0 memory dict (OSS or platform shape) as a record; None when it is not one."""
    if not isinstance(item, Mapping) or item.get("id") is None:
        return None
    text = item.get("memory")
    if not isinstance(text, str):
        data = item.get("data")
        text = data.get("memory") if isinstance(data, Mapping) else None
    score = item.get("score")
    user_id = item.get("user_id")
    created = item.get("created_at")
    metadata = item.get("metadata")
    return MemoryRecord(
        id=str(item["id"]),
        text=text if isinstance(text, str) else "",
        user_id=str(user_id) if user_id is not None else None,
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
        created_at=str(created) if created else None,
        metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
    )


def to_records(payload: Any) -> list[MemoryRecord]:
    """The records of a mem0 answer: ``{"results": [...]}`` or a bare list."""
    items = payload.get("results") if isinstance(payload, Mapping) else payload
    if not isinstance(items, list):
        return []
    records = (to_record(item) for item in items)
    return [r for r in records if r is not None]


def created_ids(payload: Any) -> list[str]:
    """Ids of the memories an add created (``event`` ``ADD``), in order."""
    items = payload.get("results") if isinstance(payload, Mapping) else payload
    if not isinstance(items, list):
        return []
    return [
        str(item["id"])
        for item in items
        if isinstance(item, Mapping) and item.get("id") is not None and item.get("event") == "ADD"
    ]
