"""Schema and connection set-up of the transcript database, and the FTS5 query builder.

The schema is versioned with ``PRAGMA user_version``: ``MIGRATIONS[i]`` holds
the statements that bring a database from version ``i`` to ``i + 1``. A later
change appends a new tuple (``ALTER TABLE ... ADD COLUMN ...``) and never edits
an old one, so every existing file is carried forward step by step.

Since version 3 the full-text index ``messages_fts`` (contentless: the text is
in ``messages`` only) is keyed by ``messages.fts_rowid = user_n << 40 | id``, where
``user_n`` is the number ``user_numbers`` gave the user key of the message's
session. Each user's messages are one rowid range of the index, so a search
seeks into that range instead of walking every user's postings. Triggers keep
the index, the numbers and ``user_n`` right for every insert, update and
delete (cascades included), also for plain SQL that leaves ``user_n`` out; a
message never changes session or role, nor a session its user, nor a user key
its number. Only user and assistant messages (``INDEXED_ROLES``) are indexed.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from pathlib import Path
from typing import Literal

from memory.errors import SessionDBError
from memory.tables import private_database

__all__ = [
    "INDEXED_ROLES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "apply_schema",
    "build_fts_query",
    "fts5_available",
    "prepare_connection",
    "query_tokens",
]

logger = logging.getLogger(__name__)

MAX_QUERY_TOKENS = 32
"""Word tokens kept from one search query; the rest are dropped."""

_WORD = re.compile(r"\w+")

_V1: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        platform TEXT NOT NULL,
        chat_id TEXT,
        user_key TEXT NOT NULL,
        thread_id TEXT,
        user_id TEXT,
        model TEXT,
        system_prompt TEXT,
        parent_session_id TEXT,
        started_at REAL NOT NULL,
        last_active_at REAL,
        ended_at REAL,
        end_reason TEXT,
        message_count INTEGER NOT NULL DEFAULT 0,
        tool_call_count INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        title TEXT,
        summary TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS idx_sessions_user_key ON sessions(user_key)",
    """
    CREATE INDEX IF NOT EXISTS idx_sessions_chat
        ON sessions(platform, chat_id, user_key, thread_id)
    """,
    "CREATE INDEX IF NOT EXISTS idx_sessions_ended_at ON sessions(ended_at)",
    """
    CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        content TEXT,
        tool_call_id TEXT,
        tool_calls TEXT,
        tool_name TEXT,
        timestamp REAL NOT NULL,
        token_count INTEGER,
        finish_reason TEXT,
        reasoning TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, id)",
    """
    CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
        content, content=messages, content_rowid=id
    )
    """,
    """
    CREATE TRIGGER IF NOT EXISTS messages_fts_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS messages_fts_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS messages_fts_au AFTER UPDATE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END
    """,
)

_V2: tuple[str, ...] = (
    # whether the session is a one-to-one chat (NULL: not known, sessions before v2)
    "ALTER TABLE sessions ADD COLUMN is_direct INTEGER",
    # who wrote a user message: their user key, in a session several people share
    "ALTER TABLE messages ADD COLUMN speaker TEXT",
)

USER_SHIFT = 40
"""Bits of an FTS rowid that hold the message id; the user's number sits above them."""

MAX_MESSAGE_ID = (1 << USER_SHIFT) - 1
"""Largest message id an FTS rowid can hold (about 1.1e12)."""

MAX_USER_NUMBER = (1 << (63 - USER_SHIFT)) - 1
"""Largest user number: ``MAX_USER_NUMBER << USER_SHIFT | MAX_MESSAGE_ID`` < 2**63."""

INDEXED_ROLES = ("user", "assistant")
"""Roles whose messages are in the full-text index (since version 3): the searched ones."""

_INDEXED = "('user', 'assistant')"  # part of step 3 as written: never edit

_USER_NUMBER_OF_SESSION = """(
    SELECT u.n FROM sessions AS s JOIN user_numbers AS u ON u.user_key = s.user_key
    WHERE s.id = {session}
)"""

_V3: tuple[str, ...] = (
    # The FTS index is keyed by ``(user number << 40) | message id``, so the messages
    # of one user are one rowid range and a search seeks inside it instead of running
    # its match over every user's messages. The old index and its triggers go; the
    # new one is built from the rows below (same content, same tokenizer).
    "DROP TRIGGER IF EXISTS messages_fts_ai",
    "DROP TRIGGER IF EXISTS messages_fts_ad",
    "DROP TRIGGER IF EXISTS messages_fts_au",
    "DROP TABLE IF EXISTS messages_fts",
    # a small number per user key, never reused (AUTOINCREMENT), bounded so that the
    # FTS rowid stays a positive 64-bit integer
    f"""
    CREATE TABLE user_numbers (
        n INTEGER PRIMARY KEY AUTOINCREMENT CHECK (n BETWEEN 1 AND {MAX_USER_NUMBER:d}),
        user_key TEXT NOT NULL UNIQUE
    )
    """,
    "INSERT INTO user_numbers (user_key)"
    " SELECT user_key FROM sessions GROUP BY user_key ORDER BY MIN(rowid)",
    # the number of the message's user (its session's), copied into the row so that a
    # message's FTS rowid is known from the row alone, also while a cascade deletes it
    f"ALTER TABLE messages ADD COLUMN user_n INTEGER CHECK (id BETWEEN 1 AND {MAX_MESSAGE_ID:d})",
    "UPDATE messages SET user_n = " + _USER_NUMBER_OF_SESSION.format(session="messages.session_id"),
    f"""
    ALTER TABLE messages ADD COLUMN fts_rowid INTEGER
        GENERATED ALWAYS AS ((user_n << {USER_SHIFT:d}) | id) VIRTUAL
    """,
    # contentless: the text stays in ``messages`` only; FTS5 never reads it back, so
    # ``fts_rowid`` needs no index (snippets are made from the hits' text, ``_search``);
    # only the roles a search returns are indexed (no tool output, no system text)
    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='')",
    "INSERT INTO messages_fts (rowid, content) SELECT fts_rowid, content FROM messages"
    f" WHERE fts_rowid IS NOT NULL AND role IN {_INDEXED} ORDER BY fts_rowid",
    # every user key gets its number with its first session; it goes with its last one
    """
    CREATE TRIGGER user_numbers_ai AFTER INSERT ON sessions BEGIN
        INSERT INTO user_numbers (user_key) SELECT new.user_key
            WHERE NOT EXISTS (SELECT 1 FROM user_numbers WHERE user_key = new.user_key);
    END
    """,
    """
    CREATE TRIGGER user_numbers_ad AFTER DELETE ON sessions BEGIN
        DELETE FROM user_numbers WHERE user_key = old.user_key
            AND NOT EXISTS (SELECT 1 FROM sessions WHERE user_key = old.user_key);
    END
    """,
    """
    CREATE TRIGGER user_numbers_fixed BEFORE UPDATE ON user_numbers BEGIN
        SELECT RAISE(ABORT, 'a user number never changes');
    END
    """,
    """
    CREATE TRIGGER sessions_user_fixed BEFORE UPDATE OF user_key ON sessions
    WHEN new.user_key IS NOT old.user_key BEGIN
        SELECT RAISE(ABORT, 'the user of a session never changes');
    END
    """,
    # user_n is always the number of the session's user: checked when given, looked up
    # when not (a plain INSERT that leaves it out), and never changed afterwards
    "CREATE TRIGGER messages_user_n_bi BEFORE INSERT ON messages"
    " WHEN new.user_n IS NOT NULL AND new.user_n IS NOT "
    + _USER_NUMBER_OF_SESSION.format(session="new.session_id")
    + " BEGIN SELECT RAISE(ABORT, 'user_n is not the number of the session''s user'); END",
    f"""
    CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages
    WHEN new.user_n IS NOT NULL AND new.role IN {_INDEXED} BEGIN
        INSERT INTO messages_fts (rowid, content) VALUES (new.fts_rowid, new.content);
    END
    """,
    "CREATE TRIGGER messages_user_n_ai AFTER INSERT ON messages WHEN new.user_n IS NULL BEGIN"
    " UPDATE messages SET user_n = "
    + _USER_NUMBER_OF_SESSION.format(session="new.session_id")
    + " WHERE id = new.id;"
    " INSERT INTO messages_fts (rowid, content) SELECT fts_rowid, content FROM messages"
    f" WHERE id = new.id AND fts_rowid IS NOT NULL AND role IN {_INDEXED};"
    " END",
    "CREATE TRIGGER messages_keep_user BEFORE UPDATE OF id, session_id, role, user_n ON messages"
    " WHEN new.id IS NOT old.id OR new.session_id IS NOT old.session_id"
    " OR new.role IS NOT old.role"
    " OR (new.user_n IS NOT old.user_n AND (old.user_n IS NOT NULL OR new.user_n IS NOT "
    + _USER_NUMBER_OF_SESSION.format(session="new.session_id")
    + ")) BEGIN SELECT RAISE(ABORT, 'a stored message keeps its session and role'); END",
    f"""
    CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages
    WHEN old.user_n IS NOT NULL AND old.role IN {_INDEXED} BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
            VALUES ('delete', old.fts_rowid, old.content);
    END
    """,
    f"""
    CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages
    WHEN old.user_n IS NOT NULL AND old.role IN {_INDEXED} BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
            VALUES ('delete', old.fts_rowid, old.content);
        INSERT INTO messages_fts (rowid, content) VALUES (new.fts_rowid, new.content);
    END
    """,
)

_V4: tuple[str, ...] = (
    # the platform's id of a user message (Slack ts, Discord snowflake), so that a
    # message its author deletes or edits on the platform can be found again
    "ALTER TABLE messages ADD COLUMN platform_message_id TEXT",
    "CREATE INDEX idx_messages_platform ON messages(session_id, platform_message_id)"
    " WHERE platform_message_id IS NOT NULL",
)

_V5: tuple[str, ...] = (
    # the platform's ids of the messages one stored user message was merged from (several
    # quick messages answered as one turn), each with the length of its text in it, so a
    # part its author deletes or edits can be taken out of the stored text or changed
    """
    CREATE TABLE platform_messages (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        part INTEGER NOT NULL,
        platform_message_id TEXT NOT NULL,
        length INTEGER NOT NULL,
        PRIMARY KEY (message_id, part)
    )
    """,
    "CREATE INDEX idx_platform_messages_id ON platform_messages(platform_message_id)",
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2, _V3, _V4, _V5)
"""Statements per step; ``MIGRATIONS[i]`` upgrades version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this code writes and expects."""


def fts5_available() -> bool:
    """Whether the SQLite library Python is linked against has FTS5 compiled in."""
    try:
        conn = sqlite3.connect(":memory:")
    except sqlite3.Error:
        return False
    try:
        conn.execute("CREATE VIRTUAL TABLE fts5_probe USING fts5(x)")
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return True


def apply_schema(
    conn: sqlite3.Connection,
    migrations: tuple[tuple[str, ...], ...] = MIGRATIONS,
) -> int:
    """Create or upgrade the schema on ``conn`` (autocommit mode); return the version.

    Runs inside one ``BEGIN IMMEDIATE`` transaction and reads the version again
    inside it, so two processes opening the same file do not migrate it twice.
    Before an existing database is upgraded, a copy of it as it was is written
    next to it (``state.db.v<old>.bak``); a failed step rolls every step back.
    A database newer than ``migrations`` know is refused.
    """
    target = len(migrations)
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if 0 < found < target:  # the copy first, outside the write transaction
        copy = _copy_before_migrating(conn, found)
        logger.warning(
            "migrating the session database from schema %d to %d (a copy as it was: %s)",
            found,
            target,
            copy,
        )
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > target:
            raise SessionDBError(
                f"session database has schema version {version}, newer than the supported "
                f"version {target}; upgrade chorus to open it"
            )
        for step in range(version, target):
            for statement in migrations[step]:
                conn.execute(statement)
            logger.debug("session db schema migrated to version %d", step + 1)
        if version != target:
            conn.execute(f"PRAGMA user_version = {target:d}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return target


def _copy_before_migrating(conn: sqlite3.Connection, version: int) -> Path | None:
    """The database as it is now, at ``<file>.v<version>.bak`` (0600); None for memory DBs."""
    row = conn.execute("PRAGMA database_list").fetchone()
    filename = row[2] if row is not None else ""
    if not filename:
        return None
    copy = Path(filename).with_name(f"{Path(filename).name}.v{version}.bak")
    copy.unlink(missing_ok=True)
    private_database(copy)
    target = sqlite3.connect(copy)
    try:
        conn.backup(target)
    finally:
        target.close()
    return copy


def prepare_connection(conn: sqlite3.Connection, path: Path) -> None:
    """Make ``conn`` (to ``path``) ready for the session database: FTS5, schema up to date.

    The connection comes from ``memory.sqlite_shared`` (autocommit, WAL, foreign
    keys, rows by name); the caller holds its lock.
    """
    if not fts5_available():
        raise SessionDBError(
            "the SQLite library Python uses lacks FTS5, which the session database needs"
        )
    try:
        version = apply_schema(conn)
    except sqlite3.Error as exc:
        raise SessionDBError(f"cannot open session database {path}: {exc}") from exc
    logger.debug("session db %s ready (schema %d)", path, version)


def query_tokens(text: str) -> list[str]:
    """The word tokens of a user's search text (unicode-aware), at most ``MAX_QUERY_TOKENS``."""
    return _WORD.findall(text)[:MAX_QUERY_TOKENS]


def build_fts_query(tokens: list[str], operator: Literal["AND", "OR"] = "AND") -> str:
    """An FTS5 query that matches ``tokens`` literally, joined with ``operator``.

    Tokens side by side are an implicit AND in FTS5. Every token is a
    double-quoted string, so no FTS5 syntax in user text (``NEAR``, ``*``,
    ``:``, ``-``, parentheses, bare operators) is interpreted. Returns ``""``
    for no tokens.
    """
    quoted = ['"' + token.replace('"', '""') + '"' for token in tokens]
    return " ".join(quoted) if operator == "AND" else " OR ".join(quoted)
