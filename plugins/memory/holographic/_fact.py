"""A stored fact as the store hands it out, and the store's own error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plugins.memory._kit import Refused


class StoreError(Refused):
    """A request the store cannot carry out; the message is safe to show the model."""


@dataclass(frozen=True)
class Fact:
    """One stored fact with the entities linked to it."""

    id: int
    content: str
    category: str
    trust: float
    created_at: float
    updated_at: float
    retrieval_count: int
    helpful_count: int
    unhelpful_count: int
    terms: tuple[str, ...]
    entities: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "category": self.category,
            "trust": round(self.trust, 3),
            "entities": list(self.entities),
            "retrieval_count": self.retrieval_count,
            "helpful_count": self.helpful_count,
            "updated_at": self.updated_at,
        }


def fact_from_row(row: tuple[Any, ...], entities: list[str]) -> Fact:
    return Fact(
        id=int(row[0]),
        content=str(row[1]),
        category=str(row[2]),
        trust=float(row[3]),
        created_at=float(row[4]),
        updated_at=float(row[5]),
        retrieval_count=int(row[6]),
        helpful_count=int(row[7]),
        unhelpful_count=int(row[8]),
        terms=tuple(str(row[9]).split()),
        entities=tuple(entities),
    )
