"""Entries already in the memory files that fail today's threat scan.

Every write is scanned, but an entry can reach a file without a write: it was
saved before a scan rule existed, restored from a backup, or typed in by hand.
So the scan runs again whenever a store loads its files. An entry that fails it
is *withheld*: left out of the system prompt (and of the entries a tool result
shows the model), with one line saying how many are withheld, and kept in the
file for an admin to decide:

- **keep** marks the entry as reviewed: its SHA-256 goes into a sibling file
  ``<file>.kept`` (``MEMORY.md.kept``, one digest per entry, through the same
  ``MemoryFiles`` as the file itself), and from the next load on the entry is
  in the prompt again. The mark names the exact text: an entry changed later is
  scanned afresh.
- **remove** deletes it from its file.

``FlaggedEntries`` finds them across every memory file (the shared MEMORY.md
and each profile): an admin's view, never a session's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from memory.store._files import MemoryFiles
from memory.store._threats import threat_in
from memory.store._withheld import digest, entry_id, kept_path

logger = logging.getLogger(__name__)

_MIN_ID_CHARS = 4
"""The shortest id prefix that picks a flagged entry."""


@dataclass(frozen=True)
class FlaggedEntry:
    """One entry that fails the scan, where it is and why."""

    id: str
    path: Path
    name: str
    """The file's place under the memories directory, ``users/telegram/42/USER.md``."""
    entry: str
    threat: str
    kept: bool
    """An admin has kept it: it is in the prompt again."""


class FlaggedEntries:
    """The entries of every memory file under ``memories_dir`` that fail the scan."""

    def __init__(self, files: MemoryFiles, memories_dir: Path) -> None:
        self.files = files
        self.memories_dir = memories_dir

    def entries(self, *, include_kept: bool = False) -> list[FlaggedEntry]:
        """Flagged entries, file by file; those kept only with ``include_kept``."""
        found: list[FlaggedEntry] = []
        for path in self.files.paths(self.memories_dir):
            kept = set(self.files.read(kept_path(path)))
            name = path.relative_to(self.memories_dir).as_posix()
            for entry in dict.fromkeys(self.files.read(path)):
                threat = threat_in(entry)
                is_kept = digest(entry) in kept
                if threat is not None and (include_kept or not is_kept):
                    found.append(FlaggedEntry(entry_id(entry), path, name, entry, threat, is_kept))
        return found

    def find(self, wanted: str) -> list[FlaggedEntry]:
        """The flagged entries whose id starts with ``wanted`` (at least four characters)."""
        wanted = wanted.strip().lower()
        if len(wanted) < _MIN_ID_CHARS:
            return []
        return [flagged for flagged in self.entries() if flagged.id.startswith(wanted)]

    def keep(self, flagged: FlaggedEntry) -> None:
        """Mark ``flagged`` as reviewed: it goes into the prompt from the next load on."""
        mark = digest(flagged.entry)

        def change(marks: list[str]) -> list[str] | None:
            return None if mark in marks else [*marks, mark]

        self.files.edit(kept_path(flagged.path), change)
        logger.warning("flagged memory entry %s in %s kept by an admin", flagged.id, flagged.name)

    def remove(self, flagged: FlaggedEntry) -> None:
        """Delete ``flagged`` (every identical copy of it) from its file."""

        def change(entries: list[str]) -> list[str] | None:
            new = [entry for entry in entries if entry != flagged.entry]
            return None if new == entries else new

        self.files.edit(flagged.path, change)
        logger.warning("flagged memory entry %s removed from %s", flagged.id, flagged.name)
