"""The stored vectors of a fact database: encoding the missing ones, loading them as matrices.

Three columns of ``facts`` hold vectors (see :mod:`._schema`): ``hrr`` (the
recall vector), ``binding`` (the role–filler binding; an empty blob when the
fact names no entity) and ``embedding`` (float32, from the LLM endpoint). The
first two are computed here from what the database holds, so a database
written without numpy, or before a column existed, gets them on first use.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from . import _algebra, _hrr

NO_BINDING = b""
"""Stored as ``binding`` for a fact that names no entity (so it is not encoded again)."""

EMBEDDING_DTYPE = "<f4"


def binding_bytes(norm: str, entity_keys: list[str]) -> bytes:
    vector = _algebra.binding(norm, entity_keys)
    return NO_BINDING if vector is None else _hrr.to_bytes(vector)


def _entity_keys(db: sqlite3.Connection, fact_id: int) -> list[str]:
    return [
        str(r[0])
        for r in db.execute(
            "SELECT e.name FROM fact_entities fe JOIN entities e ON e.id = fe.entity_id"
            " WHERE fe.fact_id = ?",
            (fact_id,),
        )
    ]


def encode_missing(db: sqlite3.Connection) -> bool:
    """Encode the recall vectors and bindings not stored yet; whether any was written."""
    hrr_updates: list[tuple[bytes, int]] = []
    for fact_id, fact_terms in db.execute(
        "SELECT id, terms FROM facts WHERE hrr IS NULL OR length(hrr) != ?", (_hrr.DIM * 8,)
    ).fetchall():
        vector = _hrr.encode(str(fact_terms).split(), _entity_keys(db, int(fact_id)))
        if vector is not None:
            hrr_updates.append((_hrr.to_bytes(vector), int(fact_id)))
    binding_updates = [
        (binding_bytes(str(norm), _entity_keys(db, int(fact_id))), int(fact_id))
        for fact_id, norm in db.execute(
            "SELECT id, norm FROM facts WHERE binding IS NULL"
            " OR (length(binding) != 0 AND length(binding) != ?)",
            (_hrr.DIM * 8,),
        ).fetchall()
    ]
    if not hrr_updates and not binding_updates:
        return False
    db.execute("BEGIN IMMEDIATE")
    db.executemany("UPDATE facts SET hrr = ? WHERE id = ?", hrr_updates)
    db.executemany("UPDATE facts SET binding = ? WHERE id = ?", binding_updates)
    db.execute("COMMIT")
    return True


def load_recall_vectors(db: sqlite3.Connection) -> tuple[list[int], _hrr.Matrix]:
    ids: list[int] = []
    rows: list[_hrr.Vector] = []
    for fact_id, blob in db.execute("SELECT id, hrr FROM facts WHERE hrr IS NOT NULL"):
        vector = _hrr.from_bytes(bytes(blob))
        if vector is not None:
            ids.append(int(fact_id))
            rows.append(vector)
    return ids, _hrr.stack(rows)


def load_bank(db: sqlite3.Connection) -> _algebra.Bank:
    facts = []
    for fact_id, norm, blob in db.execute(
        "SELECT id, norm, binding FROM facts WHERE length(binding) > 0"
    ):
        vector = _hrr.from_bytes(bytes(blob))
        if vector is not None:
            facts.append((int(fact_id), str(norm), vector))
    return _algebra.build_bank(facts)


def embedding_bytes(vector: list[float]) -> bytes:
    """A unit-length float32 copy of ``vector`` (an all-zero one is stored as it is)."""
    np: Any = _hrr._np()
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    if norm > 0.0:
        array = array / norm
    return bytes(array.astype(EMBEDDING_DTYPE).tobytes())


def load_embeddings(db: sqlite3.Connection) -> dict[int, tuple[list[int], Any]]:
    """Stored unit embeddings by their size: dimensions → (fact ids, rows of a float32 matrix).

    Facts embedded by another model (of another size) are kept apart, never compared.
    """
    np: Any = _hrr._np()
    by_size: dict[int, list[tuple[int, bytes]]] = {}
    for fact_id, blob in db.execute("SELECT id, embedding FROM facts WHERE length(embedding) > 0"):
        data = bytes(blob)
        by_size.setdefault(len(data) // 4, []).append((int(fact_id), data))
    return {
        size: (
            [i for i, _ in rows],
            np.vstack([np.frombuffer(b, dtype=EMBEDDING_DTYPE) for _, b in rows]).astype(
                np.float32
            ),
        )
        for size, rows in by_size.items()
    }
