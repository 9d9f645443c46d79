"""The engines' errors as ``memory.errors.DatabaseError``s: one vocabulary for both.

SQLite's come through ``sqlite_errors()`` (or ``from_sqlite``); PostgreSQL's are
mapped in ``_postgres``, the only module that imports the driver. The text is
the engine's own first line.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from memory.errors import (
    DatabaseError,
    DatabaseFull,
    DatabaseIntegrityError,
    DatabaseLocked,
    DatabaseUnavailable,
)

__all__ = ["first_line", "from_sqlite", "sqlite_errors"]

_LOCKED = ("database is locked", "database table is locked", "database is busy")
_FULL = ("database or disk is full", "no space left on device")
_UNAVAILABLE = ("unable to open", "disk i/o error", "readonly database", "no such file")


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its class name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def from_sqlite(exc: sqlite3.Error) -> DatabaseError:
    """The ``DatabaseError`` for ``exc``, with ``exc`` as its cause."""
    text = first_line(exc)
    lowered = text.lower()
    error: DatabaseError
    if isinstance(exc, sqlite3.IntegrityError):
        error = DatabaseIntegrityError(text)
    elif isinstance(exc, sqlite3.OperationalError) and any(m in lowered for m in _FULL):
        error = DatabaseFull(text)
    elif isinstance(exc, sqlite3.OperationalError) and any(m in lowered for m in _LOCKED):
        error = DatabaseLocked(text)
    elif isinstance(exc, sqlite3.OperationalError) and any(m in lowered for m in _UNAVAILABLE):
        error = DatabaseUnavailable(text)
    else:
        error = DatabaseError(text)
    error.__cause__ = exc
    return error


@contextmanager
def sqlite_errors() -> Iterator[None]:
    """Run SQLite statements; a ``sqlite3.Error`` leaves as a ``DatabaseError`` from it."""
    try:
        yield
    except sqlite3.Error as exc:
        raise from_sqlite(exc) from exc
