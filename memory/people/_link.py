"""Linking and unlinking accounts, with what follows the person: the profile.

``link_accounts`` makes two accounts one person (``PeopleStore.link``) and joins
the profiles of the keys that became the person into the person's USER.md
(``merge_profiles``). ``stores`` opens the MemoryStore of a key: the gateway's
and the command line's own (files on disk or in PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.paths import UserKey
from memory.people._merge import MergeResult, merge_profiles
from memory.people._store import Linked, PeopleStore
from memory.store import MemoryStore

__all__ = ["LinkOutcome", "link_accounts"]


@dataclass(frozen=True)
class LinkOutcome:
    linked: Linked
    merge: MergeResult

    @property
    def person(self) -> str:
        return self.linked.person


def link_accounts(
    people: PeopleStore,
    first: UserKey,
    second: UserKey,
    *,
    by: str,
    at: float,
    stores: Callable[[UserKey], MemoryStore],
) -> LinkOutcome:
    """Make ``first`` and ``second`` one person and join their profiles into its one."""
    linked = people.link(str(first), str(second), by, at)
    if not linked.joined:
        return LinkOutcome(linked, MergeResult())
    target = stores(UserKey.parse(linked.person))
    sources = [stores(UserKey.parse(key)) for key in linked.joined]
    return LinkOutcome(linked, merge_profiles(target, sources))
