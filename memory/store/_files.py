"""What a memory file is to the store: § delimited entries, read and edited by a backend.

``MemoryFiles`` is the backend's protocol; ``DiskMemoryFiles`` (``_disk_files``)
and ``PostgresMemoryFiles`` (``_pg_files``) implement it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

ENTRY_DELIMITER = "\n§\n"

Change = Callable[[list[str]], list[str] | None]
"""What ``MemoryFiles.edit`` applies: the current entries in, the new ones (None: keep) out."""


class MemoryFiles(Protocol):
    """Where the memory files are kept: on this machine's disk, or in PostgreSQL.

    ``path`` names the file as ``ChorusPaths`` gives it, whatever the backend.
    ``edit`` is the only write, so that re-reading, changing and writing are one
    atomic step: another process's (or replica's) write in between is never
    lost. An exception raised by ``change`` leaves the file as it was.
    """

    def read(self, path: Path) -> list[str]:
        """The entries of ``path`` (none if it does not exist yet)."""
        ...

    def edit(self, path: Path, change: Change) -> list[str]:
        """Apply ``change`` to the entries re-read under a lock; the entries after it."""
        ...

    def paths(self, root: Path) -> list[Path]:
        """Every memory file (MEMORY.md, each USER.md) under ``root``, sorted."""
        ...


def parse_entries(text: str) -> list[str]:
    """Split file text into stripped, non-empty entries."""
    return [entry.strip() for entry in text.split(ENTRY_DELIMITER) if entry.strip()]
