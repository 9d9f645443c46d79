"""The account keys a linked person's memory providers read besides the person's own.

A provider that cannot join the memories made under each account into the
person's (``MemoryProvider.merge_users``) reads them too: a session whose user
key is ``person:…`` gives its provider ``account_keys``, the accounts linked into
that person. Any other key (an unlinked account, a chat's shared profile) has none,
so a chat's store is never mixed with a member's.
"""

from __future__ import annotations

from memory.people._store import PERSON_PLATFORM, PeopleStore

__all__ = ["account_keys"]


def account_keys(people: PeopleStore, user_key: str) -> list[str]:
    """The accounts linked into the person ``user_key``; ``[]`` when it is not a person."""
    if not user_key.startswith(f"{PERSON_PLATFORM}:"):
        return []
    return [key for key in people.accounts_of(user_key) if key != user_key]
