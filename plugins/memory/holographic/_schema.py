"""The SQLite schema of one user's ``facts.db`` and how a connection to it is opened.

* ``facts``: one row per fact; ``norm`` (normalised content) is unique, so adding
  the same fact twice updates the row instead of making a second one. ``terms``
  holds the fact's search terms (:func:`~._text.terms`), ``hrr`` its stored
  vector (NULL until encoded, or without numpy), ``binding`` its role–filler
  binding (:mod:`._algebra`; NULL when it names no entity, or without numpy)
  and ``embedding`` the endpoint's embedding of its content (float32; NULL
  when embeddings are off or the endpoint did not give one).
* ``entities`` and ``fact_entities``: who and what each fact mentions.
* ``facts_fts``: an FTS5 index over ``content`` and ``terms``, kept in sync with
  ``facts`` by triggers; ``facts_vocab`` exposes its document frequencies.
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from pathlib import Path

from memory.tables import BUSY_TIMEOUT_MS, private_database

SCHEMA_VERSION = 2
"""1: the first schema; 2: ``binding`` and ``embedding`` added to ``facts``."""

_DDL = """
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    norm TEXT NOT NULL UNIQUE,
    terms TEXT NOT NULL DEFAULT '',
    category TEXT NOT NULL DEFAULT 'general',
    trust REAL NOT NULL DEFAULT 0.5 CHECK (trust >= 0.0 AND trust <= 1.0),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    retrieval_count INTEGER NOT NULL DEFAULT 0,
    helpful_count INTEGER NOT NULL DEFAULT 0,
    unhelpful_count INTEGER NOT NULL DEFAULT 0,
    hrr BLOB,
    binding BLOB,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS facts_by_category ON facts (category, updated_at);
CREATE INDEX IF NOT EXISTS facts_by_update ON facts (updated_at);

CREATE TABLE IF NOT EXISTS entities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    display TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS fact_entities (
    fact_id INTEGER NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
    entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    PRIMARY KEY (fact_id, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fact_entities_by_entity ON fact_entities (entity_id, fact_id);

CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5 (
    content, terms, content = 'facts', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS facts_vocab USING fts5vocab (facts_fts, 'col');

CREATE TRIGGER IF NOT EXISTS facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, content, terms) VALUES (new.id, new.content, new.terms);
END;
CREATE TRIGGER IF NOT EXISTS facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content, terms)
    VALUES ('delete', old.id, old.content, old.terms);
END;
CREATE TRIGGER IF NOT EXISTS facts_fts_update AFTER UPDATE OF content, terms ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content, terms)
    VALUES ('delete', old.id, old.content, old.terms);
    INSERT INTO facts_fts (rowid, content, terms) VALUES (new.id, new.content, new.terms);
END;
"""


_ADDED_COLUMNS = (("binding", "BLOB"), ("embedding", "BLOB"))
"""Columns of ``facts`` a version-1 database lacks (added by ``ALTER TABLE``)."""


def _add_missing_columns(connection: sqlite3.Connection) -> None:
    """Bring an older ``facts`` table up to date (inside the opening transaction).

    A database that has the columns but an older ``user_version`` was opened by
    an older chorus since, which changes facts without them: their bindings and
    embeddings are dropped, to be computed again.
    """
    version = int(connection.execute("PRAGMA user_version").fetchone()[0])
    have = {str(row[1]) for row in connection.execute("PRAGMA table_info(facts)")}
    for name, kind in _ADDED_COLUMNS:
        if name not in have:
            connection.execute(f"ALTER TABLE facts ADD COLUMN {name} {kind}")
    if 0 < version < SCHEMA_VERSION and all(name in have for name, _ in _ADDED_COLUMNS):
        connection.execute("UPDATE facts SET binding = NULL, embedding = NULL")


@lru_cache(maxsize=1)
def fts5_available() -> bool:
    """Whether this Python's sqlite3 has FTS5 (one in-memory probe per process)."""
    try:
        with sqlite3.connect(":memory:") as probe:
            probe.execute("CREATE VIRTUAL TABLE probe USING fts5 (x)")
            probe.execute("CREATE VIRTUAL TABLE probe_vocab USING fts5vocab (probe, 'col')")
        probe.close()
    except sqlite3.Error:
        return False
    return True


def open_database(path: Path) -> sqlite3.Connection:
    """Open (creating if needed, mode 0600) the fact database at ``path``, in WAL mode.

    The connection may be used from any thread; its owner serialises access.
    """
    private_database(path)
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None
    )
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        connection.executescript(f"BEGIN IMMEDIATE;\n{_DDL}")
        try:
            _add_missing_columns(connection)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        connection.close()
        raise
    return connection
