"""Who may talk to the bot, how often, and what the gateway remembers about access.

- ``Authorizer``: admins, allow lists, pairing codes, run-time allow and deny.
- ``RateLimiter`` / ``NoticeThrottle``: per-user message and notice budgets.
- ``Deduplicator``: drops repeated deliveries of one platform message.
- ``GatewayDB``: the access, pairing and audit tables in ``state.db``.
- ``PairingRequests``: strangers' pairing requests as admins were shown them.
"""

from gateway.access._auth import (
    CODE_ALPHABET,
    CONSOLE_PLATFORM,
    AdminReply,
    AuthDecision,
    Authorizer,
    UserAccessRow,
    admin_checker,
    normalize_user_key,
)
from gateway.access._dedupe import Deduplicator
from gateway.access._ratelimit import (
    LocalRateCheck,
    NoticeThrottle,
    RateCheck,
    RateDecision,
    RateLimiter,
)
from gateway.access._requests import (
    PairingCard,
    PairingRequest,
    PairingRequests,
    RequestStatus,
)
from gateway.access._tables import AccessRecord, AuditEntry, GatewayDB, GatewayDBError, PairingCode

__all__ = [
    "CODE_ALPHABET",
    "CONSOLE_PLATFORM",
    "AccessRecord",
    "AdminReply",
    "AuditEntry",
    "AuthDecision",
    "Authorizer",
    "Deduplicator",
    "GatewayDB",
    "GatewayDBError",
    "LocalRateCheck",
    "NoticeThrottle",
    "PairingCard",
    "PairingCode",
    "PairingRequest",
    "PairingRequests",
    "RateCheck",
    "RateDecision",
    "RateLimiter",
    "RequestStatus",
    "UserAccessRow",
    "admin_checker",
    "normalize_user_key",
]
