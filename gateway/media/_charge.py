"""Whom a voice note's transcription is charged to: the person a turn of it would be."""

from __future__ import annotations

from typing import Protocol

from agent.usage import Charge
from gateway.events import InboundMessage
from memory.paths import UserKey

__all__ = ["SessionLookup", "transcription_charge"]


class SessionLookup(Protocol):
    """The open sessions (``gateway.sessions.SessionManager``)."""

    def get(self, msg: InboundMessage) -> _Open | None: ...

    def profile_key(self, msg: InboundMessage) -> UserKey: ...


class _Open(Protocol):
    @property
    def session_id(self) -> str: ...

    @property
    def user_key(self) -> UserKey: ...


def transcription_charge(msg: InboundMessage, sessions: SessionLookup) -> Charge:
    """The person the message's turn counts against (a linked account's person; in a
    chat's shared session, the writer), the session open for it (if any) and its chat."""
    live = sessions.get(msg)
    profile = live.user_key if live is not None else sessions.profile_key(msg)
    person = msg.user_key if profile.chat else profile
    return Charge(
        str(person),
        live.session_id if live is not None else None,
        "transcription",
        f"{msg.platform}:{msg.chat_id}",
    )
