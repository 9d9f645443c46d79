"""The memory files in PostgreSQL, for gateway replicas that share no disk.

An flock on ``<file>.lock`` only serialises writers on one machine; replicas
on several machines need the lock where the data is. With ``database.url`` set,
each memory file is one row of ``memory_files``, named by its path relative to
the memories directory (``MEMORY.md``, ``users/telegram/123/USER.md``: the
layout ``ChorusPaths`` gives), holding the very text the file would hold
(entries joined by ``\\n§\\n``), so a backup carries the same files whichever
backend they came from and a restore can put them into either.

An edit is one transaction: create the row if missing (``ON CONFLICT DO
NOTHING``, so two first writers do not collide), lock it with ``SELECT … FOR
UPDATE``, apply the change to what is committed *now*, write it back. A second
writer waits on the row lock and then re-reads, so no entry is ever lost; a
refused change rolls the transaction back and leaves the row as it was.

The driver is reached only through ``memory.database`` (``memory.tables``).
"""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath

from memory.database import Location, is_postgres, safe_location
from memory.errors import MemoryStoreError
from memory.store._files import ENTRY_DELIMITER, Change, parse_entries
from memory.store._withheld import MEMORY_FILE_NAMES
from memory.tables import Tables

__all__ = ["PostgresMemoryFiles", "memory_files_for"]


class PostgresMemoryFiles(Tables):
    """``MemoryFiles`` in the ``memory_files`` table; one per process and URL (it holds the pool).

    Stores are made per session; they share this object, which shares the
    process's pool for the URL. ``close()`` lets go of the pool.
    """

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS memory_files ("
        " name TEXT PRIMARY KEY,"
        " content TEXT NOT NULL,"
        " updated_at DOUBLE PRECISION NOT NULL)",
    )
    ERROR = MemoryStoreError
    WHAT = "memory files"

    def __init__(self, url: str, memories_dir: Path, *, pool_size: int | None = None) -> None:
        if not is_postgres(url):
            raise MemoryStoreError(f"not a PostgreSQL URL: {safe_location(url)}")
        self.memories_dir = memories_dir
        super().__init__(url, pool_size=pool_size)

    def name_of(self, path: Path) -> str:
        """The row name of ``path``: its place under the memories directory, ``/`` separated."""
        try:
            relative = PurePosixPath(path.relative_to(self.memories_dir).as_posix())
        except ValueError:
            raise MemoryStoreError(
                f"{path} is not under the memories directory {self.memories_dir}"
            ) from None
        if not relative.parts or ".." in relative.parts:
            raise MemoryStoreError(f"{path} does not name a memory file")
        return relative.as_posix()

    # -- MemoryFiles -----------------------------------------------------

    def read(self, path: Path) -> list[str]:
        return parse_entries(self.read_text(self.name_of(path)) or "")

    def edit(self, path: Path, change: Change) -> list[str]:
        name = self.name_of(path)
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT INTO memory_files (name, content, updated_at) VALUES (?, '', ?)"
                " ON CONFLICT (name) DO NOTHING",
                (name, time.time()),
            )
            row = conn.execute(
                "SELECT content FROM memory_files WHERE name = ? FOR UPDATE", (name,)
            ).fetchone()
            current = parse_entries(row["content"] if row is not None else "")
            new = change(current)
            if new is None:
                return current
            conn.execute(
                "UPDATE memory_files SET content = ?, updated_at = ? WHERE name = ?",
                (ENTRY_DELIMITER.join(new), time.time(), name),
            )
            return new

    def paths(self, root: Path) -> list[Path]:
        under = PurePosixPath(root.relative_to(self.memories_dir).as_posix())
        prefix = "" if under == PurePosixPath(".") else f"{under}/"
        return [
            self.memories_dir / name
            for name, _ in self.all_files()
            if name.startswith(prefix) and name.rpartition("/")[2] in MEMORY_FILE_NAMES
        ]

    # -- whole files, for backup and restore -----------------------------

    def read_text(self, name: str) -> str | None:
        """The text of the file ``name``, as it would be on disk; None if there is none."""
        with self._locked() as conn:
            row = conn.execute(
                "SELECT content FROM memory_files WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else str(row["content"])

    def write_text(self, name: str, text: str) -> None:
        """Set the file ``name`` to ``text`` as it is (a restore, a hand edit)."""
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT INTO memory_files (name, content, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE"
                " SET content = excluded.content, updated_at = excluded.updated_at",
                (name, text, time.time()),
            )

    def all_files(self) -> list[tuple[str, str]]:
        """Every file as ``(name, text)``, sorted by name: one consistent snapshot."""
        with self._locked() as conn:
            rows = conn.execute("SELECT name, content FROM memory_files ORDER BY name").fetchall()
        return [(str(row["name"]), str(row["content"])) for row in rows]


def memory_files_for(where: Location, memories_dir: Path) -> PostgresMemoryFiles | None:
    """The PostgreSQL backend if ``where`` is a URL, else None (``MemoryStore``'s plain files)."""
    if not is_postgres(where):
        return None
    return PostgresMemoryFiles(str(where), memories_dir)
