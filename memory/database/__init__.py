"""Where the shared tables live: ``CHORUS_HOME/state.db`` (SQLite) or PostgreSQL.

With ``database.url`` unset (the embedded default) every component keeps its
tables in the one SQLite file; with ``database.url: postgresql://…`` they are
in that PostgreSQL database, which several gateway replicas and workers share.
A *location* is either the file's ``Path`` or the URL as a ``str``;
components take one and pick their engine from it.

Only ``_postgres`` imports the PostgreSQL driver, and only when a URL is used.
Both engines' errors leave as ``memory.errors.DatabaseError``s: PostgreSQL's
from the pool, SQLite's through ``sqlite_errors()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memory.database._errors import from_sqlite, sqlite_errors
from memory.database._types import SCHEMA_LOCK, Connection, Cursor, lock_schema

if TYPE_CHECKING:
    from pydantic import SecretStr

    from memory.database._copy import TableCopy
    from memory.database._postgres import PgConnection, PostgresPool

__all__ = [
    "SCHEMA_LOCK",
    "Connection",
    "Cursor",
    "Location",
    "PgConnection",
    "PostgresPool",
    "close_pool",
    "configure_pool_size",
    "copy_sqlite_to_postgres",
    "from_sqlite",
    "is_postgres",
    "location_of",
    "lock_schema",
    "open_pool",
    "safe_location",
    "sqlite_errors",
]

Location = Path | str
"""A SQLite file or a ``postgresql://`` URL."""

_DRIVER_TYPES = ("PgConnection", "PostgresPool")


def __getattr__(name: str) -> object:
    """The PostgreSQL types, imported with the driver only when asked for."""
    if name in _DRIVER_TYPES:
        from memory.database import _postgres

        return getattr(_postgres, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(where: Location) -> bool:
    """Whether ``where`` names a PostgreSQL database."""
    return isinstance(where, str) and where.startswith(_SCHEMES)


def location_of(state_db: Path, url: SecretStr | None) -> Location:
    """The configured URL if there is one, else the SQLite file."""
    if url is None:
        return state_db
    raw = url.get_secret_value().strip()
    if not raw:
        return state_db
    if not raw.startswith(_SCHEMES):
        raise ValueError("database.url must be a postgresql:// URL")
    return raw


def safe_location(where: Location) -> str:
    """``where`` for a message: a file's path, or the URL without its password."""
    if isinstance(where, Path):
        return str(where)
    head, sep, tail = where.partition("@")
    if not sep:
        return where
    scheme, _, credentials = head.partition("://")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}@{tail}" if user else f"{scheme}://{tail}"


def copy_sqlite_to_postgres(source: Path, url: str) -> list[TableCopy]:
    """Copy a SQLite ``state.db`` into an empty PostgreSQL database (see ``_copy``)."""
    from memory.database._copy import copy_sqlite_to_postgres as copy

    return copy(source, url)


_pool_size = 10


def configure_pool_size(size: int) -> None:
    """Connections a pool opened from now on keeps at most (``database.pool_size``)."""
    global _pool_size
    _pool_size = max(1, size)


def open_pool(url: str, *, size: int | None = None) -> PostgresPool:
    """This process's pool for ``url`` (shared by every component); the driver loads here."""
    from memory.database._postgres import acquire_pool

    return acquire_pool(url, size=_pool_size if size is None else size)


def close_pool(pool: PostgresPool) -> None:
    """Let go of ``pool``; the last user closes it."""
    from memory.database._postgres import release_pool

    release_pool(pool)
