"""Curated memory: the shared MEMORY.md, each user's USER.md, and staged shared writes.

- ``MemoryStore``: § delimited entries with character limits, a frozen
  snapshot for the system prompt, atomic locked writes, and a threat scan on
  every write (``scan_memory_content``).
- ``StagedWrites``: writes to the shared MEMORY.md from non-admin sessions,
  waiting for an admin's review (``memory.shared_writes: review``).
"""

from memory.store._staged import StagedWrite, StagedWrites, StagingRefused
from memory.store._store import ENTRY_DELIMITER, TARGETS, MemoryResult, MemoryStore, parse_entries
from memory.store._threats import scan_memory_content

__all__ = [
    "ENTRY_DELIMITER",
    "TARGETS",
    "MemoryResult",
    "MemoryStore",
    "StagedWrite",
    "StagedWrites",
    "StagingRefused",
    "parse_entries",
    "scan_memory_content",
]
