"""People: platform accounts linked into one person (``/link``).

An account (``telegram:123``) that is linked to nothing is its own person. A
linked account belongs to a person key ``person:<id>``: the key of the one
profile (USER.md), the one identity memory providers see and the one budget of
every account linked to it. ``PeopleStore`` keeps the links and the one-time
link codes; ``merge_profiles`` joins two profiles into the person's one.
"""

from memory.people._accounts import account_keys
from memory.people._link import LinkOutcome, link_accounts
from memory.people._merge import MergeResult, merge_profiles
from memory.people._store import (
    PERSON_PLATFORM,
    LinkCode,
    Linked,
    PeopleStore,
    PeopleStoreError,
    RedeemStatus,
)

__all__ = [
    "PERSON_PLATFORM",
    "LinkCode",
    "LinkOutcome",
    "Linked",
    "MergeResult",
    "PeopleStore",
    "PeopleStoreError",
    "RedeemStatus",
    "account_keys",
    "link_accounts",
    "merge_profiles",
]
