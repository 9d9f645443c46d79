"""Errors raised by the memory layer.

Exception tree::

    MemoryLayerError            root of every error this package raises
    ├── MemoryStoreError        a memory file cannot be read or written
    ├── MemoryPathError         a platform id or user key cannot be mapped to a path
    ├── SessionDBError          the transcript database (or a table beside it) cannot be used
    └── JobQueueError           the job queue's own storage (the outbox) cannot be used

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


class JobQueueError(MemoryLayerError):
    """The job queue's own storage (the outbox in ``state.db``) cannot be used."""


class DatabaseCopyError(MemoryLayerError):
    """``chorus migrate-db`` refused or failed; nothing was copied."""
