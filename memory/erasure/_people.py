"""Whose data one erasure or export covers: the seam to linked accounts.

A person may reach chorus from several platforms. :func:`accounts_of` names
every account of the person an account belongs to; erasure and export act on
each. Until accounts can be linked it is the account alone.
"""

from __future__ import annotations

from memory.paths import UserKey

__all__ = ["accounts_of"]


def accounts_of(user_key: str) -> list[UserKey]:
    """Every account of the person ``user_key`` is (``user_key`` first)."""
    return [UserKey.parse(user_key)]
