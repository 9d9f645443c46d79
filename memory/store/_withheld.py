"""Which entries of a memory file are withheld from the prompt, and the line standing in.

An entry that fails today's threat scan and carries no admin's keep mark (its
SHA-256 in the sibling ``<file>.kept``) is withheld; see ``_flagged``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from memory.store._threats import threat_in

MEMORY_FILE_NAMES = ("MEMORY.md", "USER.md")
"""The names of the memory files, wherever they live under the memories directory."""
_KEPT_SUFFIX = ".kept"
_ID_CHARS = 12


def digest(entry: str) -> str:
    """The SHA-256 of ``entry``, as a ``.kept`` file records it."""
    return hashlib.sha256(entry.encode("utf-8")).hexdigest()


def entry_id(entry: str) -> str:
    """The short id admins use for a flagged entry: the digest's first characters."""
    return digest(entry)[:_ID_CHARS]


def kept_path(path: Path) -> Path:
    """Where the keep marks of the memory file ``path`` are recorded."""
    return path.with_name(path.name + _KEPT_SUFFIX)


def withheld_note(count: int) -> str:
    """The line that stands in the prompt for ``count`` withheld entries."""
    entries = "entry" if count == 1 else "entries"
    return f"({count} {entries} withheld pending admin review)"


def split_withheld(entries: list[str], kept: set[str]) -> tuple[list[str], list[str]]:
    """``entries`` as ``(shown, withheld)``: withheld fail the scan and carry no keep mark."""
    shown: list[str] = []
    withheld: list[str] = []
    for entry in entries:
        flagged = threat_in(entry) is not None and digest(entry) not in kept
        (withheld if flagged else shown).append(entry)
    return shown, withheld
