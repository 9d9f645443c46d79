"""Errors raised by the memory layer.

Exception tree::

    MemoryStoreError            root of every error this package raises
    ├── MemoryPathError         a platform id or user key cannot be mapped to a path
    └── SessionDBError          the transcript database cannot be opened or used

Errors that the model can fix (a write over the limit, an ambiguous
``old_text``, a refused threat) are *not* exceptions: the store returns them as
a result dict so the memory tool can hand them back to the model.
"""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Root of the memory package's errors."""


class MemoryPathError(MemoryStoreError, ValueError):
    """A platform, user id or user key cannot be turned into a safe path."""


class SessionDBError(MemoryStoreError):
    """The session database cannot be opened or used."""
