"""Curated memory: the shared MEMORY.md, each user's USER.md, and staged shared writes.

- ``MemoryStore``: § delimited entries with character limits, a frozen
  snapshot for the system prompt, atomic locked writes, and a threat scan on
  every write (``scan_memory_content``).
- ``MemoryFiles``: where the store keeps the files, ``DiskMemoryFiles`` (the
  default: flock, temp file, rename) or ``PostgresMemoryFiles`` (one row per
  file, a row lock per write) for replicas with ``database.url`` set.
- ``FlaggedEntries``: entries already in the files that fail today's scan,
  withheld from the prompt until an admin keeps or removes them.
- ``StagedWrites``: writes to the shared MEMORY.md, or to a chat's shared
  profile, from non-admins, waiting for an admin's review
  (``memory.shared_writes: review``).
"""

from memory.store._disk_files import DiskMemoryFiles
from memory.store._files import ENTRY_DELIMITER, MemoryFiles, parse_entries
from memory.store._flagged import FlaggedEntries, FlaggedEntry
from memory.store._pg_files import PostgresMemoryFiles, memory_files_for
from memory.store._staged import ProfileStore, StagedWrite, StagedWrites, StagingRefused
from memory.store._store import TARGETS, MemoryResult, MemoryStore
from memory.store._threats import make_visible, scan_memory_content
from memory.store._withheld import withheld_note

__all__ = [
    "ENTRY_DELIMITER",
    "TARGETS",
    "DiskMemoryFiles",
    "FlaggedEntries",
    "FlaggedEntry",
    "MemoryFiles",
    "MemoryResult",
    "MemoryStore",
    "PostgresMemoryFiles",
    "ProfileStore",
    "StagedWrite",
    "StagedWrites",
    "StagingRefused",
    "make_visible",
    "memory_files_for",
    "parse_entries",
    "scan_memory_content",
    "withheld_note",
]
