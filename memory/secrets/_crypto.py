"""Sealing a secret's value: AES-256-GCM under a key derived from ``CHORUS_SECRET_KEY``.

The operator's key is any string of at least ``MIN_KEY_CHARS`` characters
(``chorus secrets key`` prints a fresh random one); HKDF-SHA256 turns it into
the 256-bit AES key. Each value gets a random 96-bit nonce, and the person and
the secret's name are its associated data: a sealed value copied into another
person's row, or under another name, does not open. A sealed value is text:
``v1:`` and the URL-safe base64 of nonce and ciphertext.

``key_id`` names the key without revealing it (an HMAC of a fixed label), so a
value sealed under another key is told apart from an altered one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memory.errors import SecretKeyMismatch, SecretKeyMissing, SecretStoreError

__all__ = ["MIN_KEY_CHARS", "SecretKey", "new_key_text"]

MIN_KEY_CHARS = 32
"""The shortest ``CHORUS_SECRET_KEY`` accepted."""
_VERSION = "v1:"
_NONCE_BYTES = 12
_INFO = b"chorus person secrets v1"


def new_key_text() -> str:
    """A fresh random key for ``CHORUS_SECRET_KEY`` (256 bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


class SecretKey:
    """The key secrets are sealed with; its text is never kept, shown or logged."""

    def __init__(self, text: str) -> None:
        raw = text.strip()
        if len(raw) < MIN_KEY_CHARS:
            raise SecretKeyMissing(
                f"CHORUS_SECRET_KEY is too short ({len(raw)} characters, at least "
                f"{MIN_KEY_CHARS}); `chorus secrets key` prints a good one"
            )
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
            raw.encode("utf-8")
        )
        self._aead = AESGCM(derived)
        self.key_id = hmac.new(derived, b"chorus key id", hashlib.sha256).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"SecretKey(id={self.key_id})"

    def seal(self, person: str, name: str, value: str) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, value.encode("utf-8"), _context(person, name))
        return _VERSION + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, person: str, name: str, sealed: str, key_id: str) -> str:
        """The value of a sealed secret; ``SecretKeyMismatch`` when it does not open."""
        if not sealed.startswith(_VERSION):
            raise SecretStoreError(f"the secret {name} of {person} is in an unknown format")
        if key_id != self.key_id:
            raise SecretKeyMismatch(
                f"the secret {name} of {person} was stored with another CHORUS_SECRET_KEY; "
                "set it again (or restore the key it was stored with)"
            )
        try:
            blob = base64.urlsafe_b64decode(sealed[len(_VERSION) :])
            plain = self._aead.decrypt(
                blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], _context(person, name)
            )
        except (InvalidTag, ValueError) as exc:
            raise SecretKeyMismatch(
                f"the secret {name} of {person} does not open with this CHORUS_SECRET_KEY "
                "(its row was altered); set it again"
            ) from exc
        return plain.decode("utf-8")


def _context(person: str, name: str) -> bytes:
    return f"{person}\x00{name}".encode()
