"""Errors raised by the gateway layer.

Exception tree::

    GatewayError        root of every error this package raises
    └── ConfigError     configuration cannot be read or is invalid; its text is
                        safe to show an operator (names keys, never secrets)
"""

from __future__ import annotations


class GatewayError(Exception):
    """Root of the gateway package's errors."""


class ConfigError(GatewayError):
    """Configuration is missing, unreadable or invalid."""
