"""What a component sees of its database connection, whichever engine is behind it.

``sqlite3.Connection`` fits as it is; ``PgConnection`` (``_postgres``) is
written to fit. Rows answer ``row[0]`` and ``row["name"]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["SCHEMA_LOCK", "Connection", "Cursor", "TableRows", "lock_schema"]

SCHEMA_LOCK = 0x63686F727573
"""The PostgreSQL advisory lock key under which every component creates and migrates its
tables: one key for all of them, so that replicas and workers starting at once on an
empty database never run ``CREATE TABLE`` side by side (PostgreSQL does not make that
safe, even with ``IF NOT EXISTS``: the loser fails on ``pg_type_typname_nsp_index``)."""


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> object: ...


def lock_schema(conn: Connection) -> None:
    """Wait for the schema lock; PostgreSQL releases it when ``conn``'s transaction ends."""
    conn.execute(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")


@dataclass
class TableRows:
    """One table as the snapshot holds it: its stored columns and its identity sequences."""

    name: str
    columns: list[str]
    rows: int = 0
    identity: dict[str, int] = field(default_factory=dict)
    """Identity column -> the highest value its sequence had handed out (0: none)."""
