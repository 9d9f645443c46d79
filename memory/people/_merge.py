"""Joining profiles: the entries of each linked account's USER.md into the person's one.

The person's file keeps what it has; each entry of the joining profiles is added
in order, an exact duplicate once. An entry that does not fit within the
profile's limit (or that the store refuses) is *left out*: it stays where it was
(the joining profiles are read, never changed) and is listed for the person to
choose what to keep.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from memory.store import MemoryStore

__all__ = ["MergeResult", "merge_profiles"]

logger = logging.getLogger(__name__)


@dataclass
class MergeResult:
    added: int = 0
    duplicates: int = 0
    left_out: list[str] = field(default_factory=list)
    """Entries that did not fit (or were refused), in the order they were met."""


def merge_profiles(target: MemoryStore, sources: list[MemoryStore]) -> MergeResult:
    """Add the user entries of ``sources`` to ``target``'s USER.md within its limit."""
    result = MergeResult()
    target.load_from_disk()
    for source in sources:
        if source.user_path == target.user_path:
            continue
        source.load_from_disk()
        for entry in source.user_entries:
            if entry in target.user_entries:
                result.duplicates += 1
                continue
            outcome = target.add("user", entry)
            if outcome["success"]:
                result.added += 1
            elif entry not in result.left_out:
                result.left_out.append(entry)
    logger.info(
        "profiles joined: %d entries added, %d duplicates, %d left out",
        result.added,
        result.duplicates,
        len(result.left_out),
    )
    return result
