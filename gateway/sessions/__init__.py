"""Live sessions: one agent per ``SessionKey``, one turn at a time per session, expiry."""

from gateway.sessions._expiry import Reaper, next_reset_after, session_deadline
from gateway.sessions._inbox import Inbox, InboxError, PendingDelivery
from gateway.sessions._live import LiveSession, TurnRunner, merge_texts, speaker_of
from gateway.sessions._manager import AgentBuilder, SessionManager
from gateway.sessions._shared import SharedSessions

__all__ = [
    "AgentBuilder",
    "Inbox",
    "InboxError",
    "LiveSession",
    "PendingDelivery",
    "Reaper",
    "SessionManager",
    "SharedSessions",
    "TurnRunner",
    "merge_texts",
    "next_reset_after",
    "session_deadline",
    "speaker_of",
]
