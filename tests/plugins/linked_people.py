"""Two accounts linked into one person, as ``/link`` makes them, for the provider tests.

:func:`link` links the accounts in a real people store (SQLite) and returns the
person key and the ``account_keys`` a session of that person gives its provider
(``memory.people.account_keys``, as the gateway's sessions and the workers do).
"""

from __future__ import annotations

from pathlib import Path

from memory.people import PeopleStore, account_keys


def link(state_db: Path, first: str, second: str) -> tuple[str, list[str]]:
    """Make ``first`` and ``second`` one person: its key and its accounts' keys."""
    with PeopleStore(state_db) as people:
        person = people.link(first, second, first, 1.0).person
        return person, account_keys(people, person)
