"""Transcripts: every session's messages in SQLite (WAL), searchable with FTS5.

- ``SessionDB`` (sync) and ``AsyncSessionDB`` (for the event loop) store
  sessions and messages.
- ``UserSessions`` / ``AsyncUserSessions`` are views bound to one user key:
  the user scope is part of every query's SQL, so code acting for one user
  cannot reach another user's transcripts.
"""

from memory.transcripts._async import AsyncSessionDB, AsyncUserSessions
from memory.transcripts._db import SessionDB, UserSessions
from memory.transcripts._epochs import Fence, check_epoch
from memory.transcripts._inspect import SchemaState, inspect_schema, sqlite_schema_version
from memory.transcripts._messages import ToolCalls
from memory.transcripts._opening import OpenedSession
from memory.transcripts._pg_schema import PG_SCHEMA_VERSION, create_pg_schema
from memory.transcripts._platform_ids import PlatformIds, PlatformPart, Retracted
from memory.transcripts._records import SearchHit, SessionRecord, StoredMessage
from memory.transcripts._schema import SCHEMA_VERSION, fts5_available

__all__ = [
    "PG_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "AsyncSessionDB",
    "AsyncUserSessions",
    "Fence",
    "OpenedSession",
    "PlatformIds",
    "PlatformPart",
    "Retracted",
    "SchemaState",
    "SearchHit",
    "SessionDB",
    "SessionRecord",
    "StoredMessage",
    "ToolCalls",
    "UserSessions",
    "check_epoch",
    "create_pg_schema",
    "fts5_available",
    "inspect_schema",
    "sqlite_schema_version",
]
