"""Whose data one erasure or export covers: every account of the person.

A person may reach chorus from several platforms (``/link``, ``memory.people``).
:func:`accounts_of` names every account of the person an account belongs to and,
for a linked person, the person key itself: their profile, their provider
memories and their usage live under it. Erasure and export act on each.
"""

from __future__ import annotations

from memory.database import Location
from memory.paths import UserKey
from memory.people import PeopleStore

__all__ = ["accounts_of"]


def accounts_of(user_key: str, where: Location | None = None) -> list[UserKey]:
    """Every key of the person ``user_key`` is (``user_key`` first): its linked accounts
    and the person key, read from the people store in ``where``; without ``where``, the
    account alone."""
    keys = [user_key]
    if where is not None:
        with PeopleStore(where) as people:
            person = people.person_of(user_key)
            keys += [a for a in people.accounts_of(person) if a != user_key]
        if person != user_key:
            keys.append(person)
    return [UserKey.parse(key) for key in keys]
