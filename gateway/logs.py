"""Keeps secrets and people's text out of logs, whatever library writes the line.

``load_settings`` registers every secret it reads; the filter that ``chorus``
installs on the root handlers replaces them with ``***`` in each record
before it is written (message, arguments and exception text). Library lines
known to print message bodies get ``WithholdText`` on their logger.
"""

from __future__ import annotations

import logging
import threading

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values are not masked: they would mangle ordinary words."""

_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _secrets.add(value)


def redact(text: str) -> str:
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class SecretFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not _secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class WithholdText(logging.Filter):
    """For a library logger: a record whose message starts with one of ``prefixes`` keeps
    only that prefix, so the request body or update it would print never reaches a log."""

    def __init__(self, *prefixes: str) -> None:
        super().__init__()
        self._prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        for prefix in self._prefixes:
            if message.startswith(prefix):
                record.msg, record.args = f"{prefix} (content withheld)", ()
                record.exc_info, record.exc_text = None, None
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Attach the filter to every handler of ``logger`` (the root logger by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, SecretFilter) for f in handler.filters):
            handler.addFilter(SecretFilter())
