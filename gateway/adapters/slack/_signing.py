"""Slack's v0 request signing, checked on a request's raw bytes before anything reads them.

Slack signs ``v0:{timestamp}:{body}`` with HMAC-SHA256 and the app's signing
secret (``X-Slack-Signature``, ``X-Slack-Request-Timestamp``) and a request
older or newer than five minutes is refused. A request that is not signed right
is refused before its body is decoded or parsed, so junk costs one comparison
and at most one WARNING line a minute (with the count of those not logged).
"""

from __future__ import annotations

import hashlib
import hmac
import logging

from gateway.adapters._support import Sometimes
from gateway.clock import Clock

logger = logging.getLogger(__name__)

WINDOW = 5 * 60
"""Seconds a request's timestamp may be away from now."""
REFUSAL_LOG_INTERVAL = 60.0
"""Seconds between two log lines about refused (unsigned or wrongly signed) requests."""


class RequestSigning:
    """``signed(body, headers)``: whether Slack signed this request; logs refusals sparingly."""

    def __init__(self, secret: str, clock: Clock) -> None:
        self._secret = secret.encode()
        self._clock = clock
        self._refusals = Sometimes(REFUSAL_LOG_INTERVAL, clock)

    def signed(self, body: bytes, timestamp: str, signature: str) -> bool:
        if self._valid(body, timestamp, signature):
            return True
        if self._refusals.due():
            missed = self._refusals.take_missed()
            logger.warning(
                "slack: refused a request without a valid signature%s",
                f" ({missed} more since the last such line)" if missed else "",
            )
        return False

    def _valid(self, body: bytes, timestamp: str, signature: str) -> bool:
        if not (self._secret and timestamp.isascii() and timestamp.isdigit()):
            return False
        if abs(self._clock.time() - int(timestamp)) > WINDOW:
            return False
        base = b"v0:" + timestamp.encode() + b":" + body
        expected = "v0=" + hmac.new(self._secret, base, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))
