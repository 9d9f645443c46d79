"""Live sessions: the queue, the agents and the turn — one agent per ``SessionKey``, one turn
at a time per session, expiry, and the durable inbox at run time.

Each name is imported on first use, so that a command that needs one store does not
load the agent and its LLM client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway._lazy import lazy_names

if TYPE_CHECKING:
    from gateway.errors import InboxError
    from gateway.sessions._agents import AgentBuilder
    from gateway.sessions._expiry import Reaper, next_reset_after, session_deadline
    from gateway.sessions._inbox import Inbox, PendingDelivery
    from gateway.sessions._inbox_keeper import InboxKeeper
    from gateway.sessions._live import LiveSession, merge_texts, speaker_of
    from gateway.sessions._manager import SessionManager
    from gateway.sessions._retractions import Retractions
    from gateway.sessions._shared import SharedSessions
    from gateway.sessions._turns import TurnRunner, images_of

__all__ = [
    "AgentBuilder",
    "Inbox",
    "InboxError",
    "InboxKeeper",
    "LiveSession",
    "PendingDelivery",
    "Reaper",
    "Retractions",
    "SessionManager",
    "SharedSessions",
    "TurnRunner",
    "images_of",
    "merge_texts",
    "next_reset_after",
    "session_deadline",
    "speaker_of",
]


_HOME = {
    "InboxError": ("gateway.errors", "InboxError"),
    "Reaper": ("gateway.sessions._expiry", "Reaper"),
    "next_reset_after": ("gateway.sessions._expiry", "next_reset_after"),
    "session_deadline": ("gateway.sessions._expiry", "session_deadline"),
    "Inbox": ("gateway.sessions._inbox", "Inbox"),
    "PendingDelivery": ("gateway.sessions._inbox", "PendingDelivery"),
    "InboxKeeper": ("gateway.sessions._inbox_keeper", "InboxKeeper"),
    "LiveSession": ("gateway.sessions._live", "LiveSession"),
    "merge_texts": ("gateway.sessions._live", "merge_texts"),
    "speaker_of": ("gateway.sessions._live", "speaker_of"),
    "AgentBuilder": ("gateway.sessions._agents", "AgentBuilder"),
    "SessionManager": ("gateway.sessions._manager", "SessionManager"),
    "Retractions": ("gateway.sessions._retractions", "Retractions"),
    "SharedSessions": ("gateway.sessions._shared", "SharedSessions"),
    "TurnRunner": ("gateway.sessions._turns", "TurnRunner"),
    "images_of": ("gateway.sessions._turns", "images_of"),
}
"""Where each name of ``__all__`` is defined; imported on first use."""


__getattr__ = lazy_names(__name__, _HOME, globals())
