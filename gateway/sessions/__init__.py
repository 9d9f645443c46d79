"""Live sessions: the queue, the agents and the turn — one agent per ``SessionKey``, one turn
at a time per session, expiry, and the durable inbox at run time."""

from gateway.errors import InboxError
from gateway.sessions._expiry import Reaper, next_reset_after, session_deadline
from gateway.sessions._inbox import Inbox, PendingDelivery
from gateway.sessions._inbox_keeper import InboxKeeper
from gateway.sessions._live import LiveSession, merge_texts, speaker_of
from gateway.sessions._manager import AgentBuilder, SessionManager
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
