"""The Supermemory container tag of a chorus user key: injective, and safe for the API.

A container tag is Supermemory's isolation boundary: a search names the tags
it may see, and nothing tagged otherwise comes back. Each chorus user key
(``telegram:12345``, ``slack#chat:C1``) gets its own tag, so the mapping must be
injective: two different keys must never share a tag, or one person would
recall another's memories.

The tag is ``chorus_`` followed by the key with every ASCII letter and digit
kept and every other byte of its UTF-8 form written ``_`` plus two hex digits
(``_`` itself too, as ``_5f``): the escaping can be undone, so distinct keys
give distinct tags, and the result uses only ``[A-Za-z0-9_]``, which any tag
rule accepts. A key whose tag would exceed :data:`MAX_TAG` characters gets
``chorus_h_`` plus the SHA-256 of the key instead; ``h`` is not a hex digit, so
no escaped tag can look like a hashed one.
"""

from __future__ import annotations

import hashlib

PREFIX = "chorus_"
HASHED = "chorus_h_"
MAX_TAG = 100


def _escape(text: str) -> str:
    out: list[str] = []
    for char in text:
        if char.isascii() and char.isalnum():
            out.append(char)
        else:
            out.extend(f"_{byte:02x}" for byte in char.encode("utf-8"))
    return "".join(out)


def container_tag(user_key: str) -> str:
    """The container tag of ``user_key`` (a canonical chorus user key)."""
    tag = PREFIX + _escape(user_key)
    if len(tag) <= MAX_TAG:
        return tag
    return HASHED + hashlib.sha256(user_key.encode("utf-8")).hexdigest()
