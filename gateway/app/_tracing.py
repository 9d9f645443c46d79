"""Tracing of a gateway or worker process, from ``observability.*`` (see ``agent.tracing``).

The person in a span is an HMAC keyed per install: derived from the gateway
database's install secret (the one that keys pairing-code hashes), so the same
person has the same pseudonym across restarts and replicas, and nobody without
the database can tell who it is.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Protocol

from agent import tracing
from gateway.config import Settings

__all__ = ["TRACE_FLUSH_SECONDS", "start_tracing"]

TRACE_FLUSH_SECONDS = 5.0
"""At most this long of the shutdown goes to sending the last spans."""


class InstallSecret(Protocol):
    def install_salt(self) -> bytes: ...


def start_tracing(settings: Settings, secret: InstallSecret | None) -> bool:
    """Start tracing when ``observability.otlp_endpoint`` is set; True when on.
    Without an install secret (a worker: its spans name no person) a random key."""
    if not settings.observability.otlp_endpoint:
        return False
    salt = secret.install_salt() if secret is not None else secrets.token_bytes(32)
    key = hmac.new(salt, b"chorus trace person", hashlib.sha256).digest()
    return tracing.install(settings.observability, key)
