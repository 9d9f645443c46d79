"""The on-disk layout under CHORUS_HOME, and safe path components for platform ids.

::

    CHORUS_HOME/
        config.yaml
        state.db                                   SessionDB (transcripts, FTS)
        memories/MEMORY.md                         shared by everyone
        memories/users/<platform>/<user id>/USER.md   one per user
        plugins/<name>/                            user memory providers

A platform or user id becomes a path component by *encoding*, never by
stripping: every byte outside ``[A-Za-z0-9_-]`` is written as ``%XX`` (so
``%`` itself is encoded and the mapping is injective), and a component that
would be too long keeps a readable prefix plus a SHA-256 of the whole id behind
``~`` — a character the plain encoding never produces, so a hashed name cannot
equal a plain one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from memory.errors import MemoryPathError

MAX_COMPONENT_LENGTH = 128
"""Longest encoded component kept verbatim; far below every file system's 255."""

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HASH_MARK = "~"


def safe_component(raw: str) -> str:
    """Encode one platform-provided id as a single path component (injective)."""
    if not isinstance(raw, str) or raw == "":
        raise MemoryPathError("an empty id cannot name a directory")
    encoded = "".join(
        ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in raw
    )
    if len(encoded) <= MAX_COMPONENT_LENGTH:
        return encoded
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{encoded[:48]}{_HASH_MARK}{digest}"


@dataclass(frozen=True, slots=True)
class UserRef:
    """A user as the platform names them: ``telegram:12345``."""

    platform: str
    user_id: str

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.user_id}"

    def __str__(self) -> str:
        return self.key


def parse_user_key(value: str) -> UserRef:
    """Parse ``PLATFORM:ID`` (the id may itself contain ``:``)."""
    platform, sep, user_id = value.partition(":")
    if not sep or not platform or not user_id:
        raise MemoryPathError(f"expected PLATFORM:ID (e.g. telegram:12345), got {value!r}")
    return UserRef(platform.strip().lower(), user_id)


@dataclass(frozen=True, slots=True)
class ChorusPaths:
    """Where everything lives under one CHORUS_HOME."""

    home: Path

    @property
    def memories_dir(self) -> Path:
        return self.home / "memories"

    @property
    def memory_file(self) -> Path:
        return self.memories_dir / "MEMORY.md"

    @property
    def users_dir(self) -> Path:
        return self.memories_dir / "users"

    @property
    def state_db(self) -> Path:
        return self.home / "state.db"

    @property
    def plugins_dir(self) -> Path:
        return self.home / "plugins"

    def user_dir(self, user: UserRef) -> Path:
        return self.users_dir / safe_component(user.platform) / safe_component(user.user_id)

    def user_file(self, user: UserRef) -> Path:
        return self.user_dir(user) / "USER.md"
