"""The on-disk layout under CHORUS_HOME, and safe path components for platform ids.

::

    CHORUS_HOME/
        config.yaml
        state.db                                   SessionDB (transcripts, FTS)
        memories/MEMORY.md                         shared by everyone
        memories/users/<platform>/<user id>/USER.md   one per user
        memories/chats/<platform>/<chat id>/USER.md   one per chat under sessions.scope: chat
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
import re
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


PLATFORM_NAME = re.compile(r"[a-z0-9_.-]+")
"""What a platform name may be: it never holds ``:``, ``#`` or ``/``."""

CHAT_MARK = "#chat"
"""Marks the shared profile of a chat: ``telegram#chat:-100123``."""

_WHITESPACE = re.compile(r"\s")


@dataclass(frozen=True, slots=True, order=True)
class UserKey:
    """Whose memory and transcripts: one person on a platform, or one chat's shared profile.

    A person is ``telegram:12345``; the profile a chat shares under
    ``sessions.scope: chat`` is ``telegram#chat:-100123``. A platform name can
    never hold ``#``, so no user id — whatever a platform lets it be — can
    produce a chat's key, or the other way round; and chat profiles live in
    their own directory tree (``memories/chats/``), never among the users'.
    """

    platform: str
    id: str
    chat: bool = False

    def __post_init__(self) -> None:
        if not PLATFORM_NAME.fullmatch(self.platform):
            raise MemoryPathError(f"not a platform name: {self.platform!r}")
        if not self.id:
            raise MemoryPathError("a user key needs an id")

    @classmethod
    def for_chat(cls, platform: str, chat_id: str) -> UserKey:
        """The shared profile of one chat (``sessions.scope: chat``)."""
        return cls(platform, chat_id, chat=True)

    @classmethod
    def parse(cls, text: str) -> UserKey:
        """``PLATFORM:ID`` or ``PLATFORM#chat:ID``; the platform is lower-cased.

        The id may itself contain ``:``; it may not contain whitespace.
        """
        head, sep, key_id = text.strip().partition(":")
        head = head.lower()
        chat = head.endswith(CHAT_MARK)
        platform = head[: -len(CHAT_MARK)] if chat else head
        if not sep or not key_id or not PLATFORM_NAME.fullmatch(platform):
            raise MemoryPathError(f"expected PLATFORM:ID (e.g. telegram:12345), got {text!r}")
        if _WHITESPACE.search(key_id):
            raise MemoryPathError(f"a user id has no spaces: {text!r}")
        return cls(platform, key_id, chat=chat)

    @property
    def key(self) -> str:
        """The key as stored and shown: ``telegram:12345``."""
        return str(self)

    def __str__(self) -> str:
        return f"{self.platform}{CHAT_MARK if self.chat else ''}:{self.id}"


@dataclass(frozen=True, slots=True)
class ChatRef:
    """Where a conversation happens: a chat on a platform, and a thread in it (if any)."""

    platform: str
    chat_id: str
    thread_id: str | None = None


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
    def chats_dir(self) -> Path:
        return self.memories_dir / "chats"

    def user_dir(self, user: UserKey) -> Path:
        """Where ``user``'s profile lives; chats' shared profiles have their own tree."""
        root = self.chats_dir if user.chat else self.users_dir
        return root / safe_component(user.platform) / safe_component(user.id)

    def user_file(self, user: UserKey) -> Path:
        return self.user_dir(user) / "USER.md"

    @property
    def no_user_file(self) -> Path:
        """A profile path nobody has, for a store that only reads or writes MEMORY.md."""
        return self.memories_dir / ".nobody" / "USER.md"

    @property
    def providers_dir(self) -> Path:
        return self.home / "providers"

    def provider_dir(self, name: str, user: UserKey | None = None) -> Path:
        """A memory provider's own directory, or its directory for one ``user``.

        ``providers/<name>/`` holds what the provider shares across users;
        ``providers/<name>/users/<platform>/<id>/`` (``chats/`` for a chat's shared
        key) holds one user's state, so nothing of theirs sits beside another's.
        Created with mode 0700 on first use.
        """
        path = self.providers_dir / safe_component(name)
        if user is not None:
            kind = "chats" if user.chat else "users"
            path = path / kind / safe_component(user.platform) / safe_component(user.id)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path
