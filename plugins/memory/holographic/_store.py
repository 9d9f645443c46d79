"""One user's fact database: facts, their entities, trust, counters and stored vectors.

Every method takes the store's lock, so one store may be used from any thread.
Writes run in ``BEGIN IMMEDIATE`` transactions, so two processes adding the
same fact at once still make one row (``norm`` is unique as well).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import _algebra, _hrr, _vectors
from ._fact import Fact, StoreError, fact_from_row
from ._schema import open_database
from ._text import clean_content, entity_key, extract_entities, normalise_content, terms

DEFAULT_CATEGORY = "general"

TRUST_STEP = 0.1
"""How far one ``fact_feedback`` moves a fact's trust (kept within 0..1)."""

_FACT_COLUMNS = (
    "id, content, category, trust, created_at, updated_at, "
    "retrieval_count, helpful_count, unhelpful_count, terms"
)


class FactStore:
    """The facts of one user in ``path``; opened on first use, closed by :meth:`close`."""

    def __init__(self, path: Path, *, hrr: bool) -> None:
        self.path = path
        self.hrr = hrr and _hrr.numpy_available()
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        self._generation = 0
        self._caches: dict[str, tuple[tuple[int, int], Any]] = {}

    # -- connection ----------------------------------------------------------

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StoreError("the fact store is closed")
            if self._connection is None:
                self._connection = open_database(self.path)
            yield self._connection

    @contextmanager
    def _write(self, *, vectors_change: bool = True) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; ``vectors_change`` drops the vector cache."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            if vectors_change:
                self._generation += 1

    def open(self) -> None:
        """Open the database now (it is otherwise opened on first use)."""
        with self._db():
            pass

    def close(self) -> None:
        """Close the connection; later calls raise :class:`StoreError`. Safe to call twice."""
        with self._lock:
            self._closed = True
            self._caches.clear()
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # -- writes --------------------------------------------------------------

    def _vector(self, fact_terms: Sequence[str], entities: Sequence[str]) -> bytes | None:
        if not self.hrr:
            return None
        vector = _hrr.encode(fact_terms, [entity_key(e) for e in entities])
        return None if vector is None else _hrr.to_bytes(vector)

    def _binding(self, norm: str, entities: Sequence[str]) -> bytes | None:
        if not self.hrr:
            return None
        return _vectors.binding_bytes(norm, [entity_key(e) for e in entities])

    def _link(self, db: sqlite3.Connection, fact_id: int, entities: Sequence[str]) -> None:
        db.execute("DELETE FROM fact_entities WHERE fact_id = ?", (fact_id,))
        for display in entities:
            key = entity_key(display)
            db.execute(
                "INSERT OR IGNORE INTO entities (name, display) VALUES (?, ?)", (key, display)
            )
            db.execute(
                "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id) "
                "SELECT ?, id FROM entities WHERE name = ?",
                (fact_id, key),
            )

    @staticmethod
    def _prune_entities(db: sqlite3.Connection) -> None:
        db.execute(
            "DELETE FROM entities WHERE id NOT IN (SELECT DISTINCT entity_id FROM fact_entities)"
        )

    def add(self, content: str, category: str | None = None) -> tuple[Fact, bool]:
        """Store ``content``; ``(fact, True)`` if new, ``(fact, False)`` if it was already there.

        A duplicate (same normalised content) keeps its row: its ``updated_at`` is
        refreshed and its category changed only when ``category`` is given.
        """
        content = clean_content(content)
        norm = normalise_content(content)
        if not norm:
            raise StoreError("content is empty")
        fact_terms = terms(content)
        entities = extract_entities(content)
        vector = self._vector(fact_terms, entities)
        binding = self._binding(norm, entities)
        now = time.time()
        with self._write() as db:
            row = db.execute("SELECT id FROM facts WHERE norm = ?", (norm,)).fetchone()
            if row is not None:
                fact_id = int(row[0])
                db.execute(
                    "UPDATE facts SET category = COALESCE(?, category), updated_at = ?"
                    " WHERE id = ?",
                    (category, now, fact_id),
                )
            else:
                cursor = db.execute(
                    "INSERT INTO facts (content, norm, terms, category, created_at, updated_at,"
                    " hrr, binding) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        content,
                        norm,
                        " ".join(fact_terms),
                        category or DEFAULT_CATEGORY,
                        now,
                        now,
                        vector,
                        binding,
                    ),
                )
                fact_id = int(cursor.lastrowid or 0)
                self._link(db, fact_id, entities)
        return self._require(fact_id), row is None

    def update(self, fact_id: int, content: str | None, category: str | None) -> Fact:
        """Change a fact's content (re-linking its entities) and/or its category."""
        with self._write() as db:
            if db.execute("SELECT 1 FROM facts WHERE id = ?", (fact_id,)).fetchone() is None:
                raise StoreError(f"no fact with id {fact_id}")
            now = time.time()
            if content is not None:
                content = clean_content(content)
                norm = normalise_content(content)
                if not norm:
                    raise StoreError("content is empty")
                other = db.execute(
                    "SELECT id FROM facts WHERE norm = ? AND id != ?", (norm, fact_id)
                ).fetchone()
                if other is not None:
                    raise StoreError(f"fact {other[0]} already has this content")
                fact_terms, entities = terms(content), extract_entities(content)
                db.execute(
                    "UPDATE facts SET content = ?, norm = ?, terms = ?, hrr = ?, binding = ?,"
                    " embedding = NULL, updated_at = ? WHERE id = ?",
                    (
                        content,
                        norm,
                        " ".join(fact_terms),
                        self._vector(fact_terms, entities),
                        self._binding(norm, entities),
                        now,
                        fact_id,
                    ),
                )
                self._link(db, fact_id, entities)
                self._prune_entities(db)
            if category is not None:
                db.execute(
                    "UPDATE facts SET category = ?, updated_at = ? WHERE id = ?",
                    (category, now, fact_id),
                )
        return self._require(fact_id)

    def remove(self, fact_id: int) -> bool:
        """Delete a fact; False when there was none with that id."""
        with self._write() as db:
            deleted = db.execute("DELETE FROM facts WHERE id = ?", (fact_id,)).rowcount > 0
            if deleted:
                self._prune_entities(db)
        return deleted

    def find_by_content(self, content: str) -> Fact | None:
        """The fact whose normalised content equals that of ``content``."""
        with self._db() as db:
            row = db.execute(
                "SELECT id FROM facts WHERE norm = ?", (normalise_content(content),)
            ).fetchone()
        return None if row is None else self.get(int(row[0]))

    def find_containing(self, text: str, categories: Sequence[str]) -> list[Fact]:
        """Facts of ``categories`` whose normalised content contains that of ``text`` (max 2)."""
        needle = normalise_content(text)
        if not needle or not categories:
            return []
        marks = ",".join("?" * len(categories))
        with self._db() as db:
            rows = db.execute(
                f"SELECT id FROM facts WHERE instr(norm, ?) > 0 AND category IN ({marks})"
                " ORDER BY id LIMIT 2",
                [needle, *categories],
            ).fetchall()
        return self.facts([int(r[0]) for r in rows])

    def feedback(self, fact_id: int, helpful: bool) -> Fact:
        """Raise (helpful) or lower a fact's trust by :data:`TRUST_STEP`, within 0..1."""
        step, counter = (
            (TRUST_STEP, "helpful_count") if helpful else (-TRUST_STEP, "unhelpful_count")
        )
        with self._write(vectors_change=False) as db:
            changed = db.execute(
                f"UPDATE facts SET trust = MIN(1.0, MAX(0.0, trust + ?)), {counter} = {counter} + 1"
                " WHERE id = ?",
                (step, fact_id),
            ).rowcount
        if not changed:
            raise StoreError(f"no fact with id {fact_id}")
        return self._require(fact_id)

    def bump_retrievals(self, fact_ids: Iterable[int]) -> None:
        ids = list(dict.fromkeys(fact_ids))
        if ids:
            with self._write(vectors_change=False) as db:
                db.executemany(
                    "UPDATE facts SET retrieval_count = retrieval_count + 1 WHERE id = ?",
                    [(i,) for i in ids],
                )

    # -- reads ---------------------------------------------------------------

    def count(self) -> int:
        with self._db() as db:
            return int(db.execute("SELECT COUNT(*) FROM facts").fetchone()[0])

    def get(self, fact_id: int) -> Fact | None:
        found = self.facts([fact_id])
        return found[0] if found else None

    def _require(self, fact_id: int) -> Fact:
        fact = self.get(fact_id)
        if fact is None:
            raise StoreError(f"no fact with id {fact_id}")
        return fact

    def facts(self, fact_ids: Sequence[int]) -> list[Fact]:
        """The facts with these ids, in the order given (missing ids are skipped)."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self._db() as db:
            rows = db.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE id IN ({marks})", ids)
            by_id = {int(r[0]): r for r in rows.fetchall()}
            links: dict[int, list[str]] = {}
            for fact_id, display in db.execute(
                "SELECT fe.fact_id, e.display FROM fact_entities fe JOIN entities e "
                f"ON e.id = fe.entity_id WHERE fe.fact_id IN ({marks}) ORDER BY e.id",
                ids,
            ):
                links.setdefault(int(fact_id), []).append(str(display))
        return [fact_from_row(by_id[i], links.get(i, [])) for i in ids if i in by_id]

    def recent(self, category: str | None, limit: int) -> list[Fact]:
        """The most recently updated facts, of ``category`` only if given."""
        where, params = ("WHERE category = ?", [category]) if category else ("", [])
        with self._db() as db:
            rows = db.execute(
                f"SELECT id FROM facts {where} ORDER BY updated_at DESC, id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
        return self.facts([int(r[0]) for r in rows])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read-only statement under the lock (used by search and hygiene)."""
        with self._db() as db:
            return [tuple(r) for r in db.execute(sql, list(params)).fetchall()]

    def _cached(self, name: str, load: Callable[[sqlite3.Connection], Any]) -> Any:
        """What ``load`` reads, kept until the database changes (here or in another process)."""
        with self._db() as db:
            key = (int(db.execute("PRAGMA data_version").fetchone()[0]), self._generation)
            cached = self._caches.get(name)
            if cached is not None and cached[0] == key:
                return cached[1]
            if self.hrr and _vectors.encode_missing(db):
                self._generation += 1
                key = (int(db.execute("PRAGMA data_version").fetchone()[0]), self._generation)
            value = load(db)
            self._caches[name] = (key, value)
            return value

    def vectors(self) -> tuple[list[int], _hrr.Matrix] | None:
        """Every fact's recall vector as rows of one matrix (encoding missing ones first)."""
        if not self.hrr:
            return None
        loaded: tuple[list[int], _hrr.Matrix] = self._cached("hrr", _vectors.load_recall_vectors)
        return loaded

    def bank(self) -> _algebra.Bank | None:
        """The facts' role–filler bindings as a bank to unbind (None without numpy)."""
        if not self.hrr:
            return None
        bank: _algebra.Bank = self._cached("bank", _vectors.load_bank)
        return bank

    def embeddings(self, dimensions: int) -> tuple[list[int], Any] | None:
        """The ids and stored unit embeddings (float32 rows) of the facts embedded with
        ``dimensions`` numbers; None when there is none."""
        loaded: dict[int, tuple[list[int], Any]] = self._cached(
            "embedding", _vectors.load_embeddings
        )
        return loaded.get(dimensions)

    def missing_embeddings(self, limit: int, dimensions: int | None) -> list[tuple[int, str]]:
        """``(id, content)`` of up to ``limit`` facts stored without an embedding (or, with
        ``dimensions``, with one of another size: another model's), newest first."""
        other_size = "OR length(embedding) != ?" if dimensions else "AND ? IS NULL"
        rows = self.query(
            f"SELECT id, content FROM facts WHERE embedding IS NULL {other_size}"
            " ORDER BY updated_at DESC, id DESC LIMIT ?",
            (4 * dimensions if dimensions else None, limit),
        )
        return [(int(i), str(c)) for i, c in rows]

    def set_embeddings(self, found: Sequence[tuple[int, str, bytes]]) -> None:
        """Store ``(id, content embedded, embedding)``; skipped where the content changed since."""
        if found:
            with self._write() as db:
                db.executemany(
                    "UPDATE facts SET embedding = ? WHERE id = ? AND content = ?",
                    [(blob, i, c) for i, c, blob in found],
                )
