"""Errors raised by the memory layer.

Exception tree::

    MemoryLayerError                root of every error this package raises
    ├── MemoryStoreError            a memory file cannot be read or written
    ├── MemoryPathError             a platform id or user key cannot be mapped to a path
    ├── SessionDBError              the transcript database (or a table beside it) cannot be used
    │   └── SessionFenced           a transcript write carries an epoch older than the session's
    │                               (its writer, a gateway replica, lost the session to another)
    ├── JobQueueError               the job queue's own storage (outbox, ledger) cannot be used
    │   └── StaleLeaseError         a job's session lease moved on to another run: it cannot commit
    ├── DatabaseCopyError           ``chorus migrate-db`` refused or failed; nothing was copied
    ├── BackupError                 memory.backup: a backup cannot be made or restored
    ├── DumpError                   memory.backup_pg: the PostgreSQL tables of a backup
    │                               cannot be read, archived or loaded
    ├── SecretStoreError            memory.secrets: a person's secret cannot be stored or read
    │   ├── SecretKeyMissing        no ``CHORUS_SECRET_KEY``: secrets are not stored without one
    │   └── SecretKeyMismatch       a secret was sealed with another key (or its row was altered)
    ├── ApprovalStoreError          memory.approvals: the tool approvals' table cannot be used
    ├── PeopleStoreError            memory.people: the linked accounts' table cannot be used
    ├── PreferenceStoreError        memory.preferences: people's own settings cannot be used
    ├── EmbeddingsError             the LLM endpoint gave no embeddings for this call
    │   └── EmbeddingsUnsupported   it has no /v1/embeddings at all (asked once per process)
    └── DatabaseError               the shared database (SQLite or PostgreSQL) failed a statement
        ├── DatabaseUnavailable     it cannot be opened or reached (no connection in time)
        │   └── DatabaseFull        its disk is full (SQLITE_FULL, ENOSPC, PostgreSQL's 53100)
        ├── DatabaseLocked          another writer holds what this one needs; a retry can help
        └── DatabaseIntegrityError  a statement would break a constraint (unique, check, key)

``DatabaseError`` is what ``memory.database`` raises, from either engine, ``from``
the engine's own error (``sqlite3.Error`` or psycopg's); a component that keeps
tables (``memory.tables.Tables``) turns it into its own error (``SessionDBError``,
``JobQueueError``, the gateway's ``GatewayDBError``…), so callers see one kind per
component. Its text is the engine's message, never a password.

Errors that the model can fix (a write over the limit, an ambiguous
``old_text``, a refused threat) are *not* exceptions: the store returns them as
a result dict so the memory tool can hand them back to the model.
"""

from __future__ import annotations


class MemoryLayerError(Exception):
    """Root of the memory package's errors."""


class MemoryStoreError(MemoryLayerError):
    """A memory file (MEMORY.md, a USER.md) cannot be read or written."""


class MemoryPathError(MemoryLayerError, ValueError):
    """A platform, user id or user key cannot be turned into a safe path."""


class SessionDBError(MemoryLayerError):
    """The session database cannot be opened or used."""


class SessionFenced(SessionDBError):
    """A transcript write was refused: it carries an older epoch than the session's
    newest (``SessionDB.take_epoch``), so its writer no longer holds the session."""


class JobQueueError(MemoryLayerError):
    """The job queue's own storage (the outbox in ``state.db``) cannot be used."""


class StaleLeaseError(JobQueueError):
    """A job's session lease was taken over by another run; this run cannot commit."""


class DatabaseCopyError(MemoryLayerError):
    """``chorus migrate-db`` refused or failed; nothing was copied."""


class DatabaseError(MemoryLayerError):
    """The shared database failed a statement or a transaction, whichever engine holds it."""


class DatabaseUnavailable(DatabaseError):
    """The database cannot be opened or reached, or no connection was free in time."""


class DatabaseFull(DatabaseUnavailable):
    """The disk holding the database is full: nothing can be written until space is freed."""


class DatabaseLocked(DatabaseError):
    """Another writer holds a lock this statement needs (busy, deadlock, serialization)."""


class DatabaseIntegrityError(DatabaseError):
    """A statement would violate a constraint (unique, check, foreign key, not null)."""


class ApprovalStoreError(MemoryLayerError):
    """memory.approvals: the table of tool calls waiting for approval cannot be used."""


class PeopleStoreError(MemoryLayerError):
    """memory.people: the table of linked accounts (and link codes) cannot be used."""


class PreferenceStoreError(MemoryLayerError):
    """memory.preferences: the table of what people chose for themselves cannot be used."""


class SecretStoreError(MemoryLayerError):
    """A person's secret cannot be stored or read (``memory.secrets``)."""


class SecretKeyMissing(SecretStoreError):
    """No ``CHORUS_SECRET_KEY`` is set (or it is too short): no secret is stored without one."""


class SecretKeyMismatch(SecretStoreError):
    """A stored secret does not open with this ``CHORUS_SECRET_KEY``: it was sealed with
    another key, or its row was altered."""


class EmbeddingsError(MemoryLayerError):
    """The LLM endpoint gave no embeddings for this call (unreachable, refused, malformed)."""


class EmbeddingsUnsupported(EmbeddingsError):
    """The LLM endpoint offers no ``/v1/embeddings`` (or not the model asked for)."""
