"""Whose memory a call acts on, and that person's id in a backend.

Every call acts on one person's store: the ``speaker`` when one is given (a
group session), else the session's ``user_key``; both canonical chorus user
keys (``telegram:12345``, ``slack#chat:C1``). A backend id is made from the key
injectively, so two people never share a store: every character outside a
backend's safe set is written ``_`` plus two hex digits per UTF-8 byte (``_``
itself too), which :func:`unescape_id` undoes; an id that would be too long is
a prefix plus the key's SHA-256 instead.
"""

from __future__ import annotations

import hashlib
import string
from typing import Any

from memory.paths import UserKey
from memory.people import PERSON_PLATFORM

__all__ = [
    "ALNUM",
    "ALNUM_DASH",
    "escape_id",
    "hashed_id",
    "linked_keys",
    "owner_key",
    "unescape_id",
]

ALNUM = frozenset(string.ascii_letters + string.digits)
ALNUM_DASH = ALNUM | {"-"}


def owner_key(user_key: str, speaker: Any = None) -> str:
    """``speaker`` (canonical) when given, else ``user_key``; ValueError for a bad speaker."""
    if speaker is None or speaker == "":
        return user_key
    if not isinstance(speaker, str):
        raise ValueError("speaker must be a user key")
    return UserKey.parse(speaker).key


def linked_keys(user: UserKey, given: Any) -> tuple[str, ...]:
    """The canonical ``account_keys`` of ``initialize`` for the session's ``user``.

    Only a linked person (``person:…``) has any; a chat's shared key never reads a
    member's store. Keys that are not user keys (or are chats') are left out.
    """
    if user.chat or user.platform != PERSON_PLATFORM or not isinstance(given, list | tuple):
        return ()
    keys: list[str] = []
    for raw in given:
        try:
            key = UserKey.parse(raw) if isinstance(raw, str) else None
        except ValueError:
            key = None
        if key is not None and not key.chat and key != user and key.key not in keys:
            keys.append(key.key)
    return tuple(keys)


def escape_id(raw: str, safe: frozenset[str] = ALNUM_DASH) -> str:
    """``raw`` with every character outside ``safe`` (and ``_``) hex-escaped; injective."""
    return "".join(
        ch if ch in safe and ch != "_" else "".join(f"_{b:02x}" for b in ch.encode("utf-8"))
        for ch in raw
    )


def unescape_id(encoded: str) -> str:
    """The inverse of :func:`escape_id`; ValueError for text it did not make."""
    raw, i = bytearray(), 0
    while i < len(encoded):
        if encoded[i] == "_":
            raw.append(int(encoded[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(encoded[i].encode("ascii"))
            i += 1
    return raw.decode("utf-8")


def hashed_id(raw: str) -> str:
    """The SHA-256 of ``raw`` in hex: the stand-in for an id too long for its backend."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()
