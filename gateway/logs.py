"""Keeps secrets and people's text out of logs, whatever library writes the line;
and writes lines a log stack can read.

``load_settings`` registers every secret it reads; the filter that ``chorus``
installs on the root handlers replaces them with ``***`` in each record
before it is written (message, arguments and exception text). Library lines
known to print message bodies get ``WithholdText`` on their logger.

Platform SDKs and HTTP clients print whole payloads at DEBUG (a Slack event,
a Discord message, an LLM request): ``hold_library_loggers`` keeps their
loggers at INFO (or the root level, when that is higher) unless content logging
(``CHORUS_LOG_CONTENT=1``) is on.

``STATUS`` is the logger of the service's status lines (up, shutting down): the
entry point lets them through at INFO whatever ``CHORUS_LOG_LEVEL`` is, so the
default level (WARNING) shows one line when the gateway is up and nothing else
on a normal start.

``CHORUS_LOG_FORMAT=json`` writes one JSON object a line (``JsonFormatter``):
time, level, logger, message, and the ``session`` and ``platform`` a line was
written for when known (``bind()`` sets them for a session's task).
"""

from __future__ import annotations

import json
import logging
import threading
from contextvars import ContextVar
from datetime import UTC, datetime

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


LIBRARY_LOGGERS = (
    "slack_bolt",
    "slack_sdk",
    "discord",
    "openai",
    "aiohttp.client",
    "websockets",
)
"""Loggers of libraries that print message payloads at DEBUG."""
_held: set[str] = set()

STATUS = "gateway.status"
"""The logger of the service's status lines, shown at INFO at every log level."""


def show_status(level: int) -> None:
    """Let the status lines through even when ``level`` (the root's) is above INFO."""
    logging.getLogger(STATUS).setLevel(min(level, logging.INFO))


def hold_library_loggers(content: bool) -> None:
    """Library loggers at INFO or the root's level, whichever is higher (``content``
    False), or back to the configured level (True).

    A logger a module set to a level of its own (above DEBUG, for its own reasons)
    is left alone.
    """
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        if content:
            if name in _held:
                library.setLevel(logging.NOTSET)
                _held.discard(name)
        elif library.level < logging.INFO or name in _held:
            library.setLevel(max(logging.INFO, logging.getLogger().getEffectiveLevel()))
            _held.add(name)


def install(logger: logging.Logger | None = None) -> None:
    """Attach the filter to every handler of ``logger`` (the root logger by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, SecretFilter) for f in handler.filters):
            handler.addFilter(SecretFilter())


_fields: ContextVar[dict[str, str]] = ContextVar("chorus_log_fields", default={})  # noqa: B039
CONTEXT_FIELDS = ("session", "platform")


def bind(**fields: str) -> None:
    """From now on, in this task (and the tasks it starts), lines carry ``fields``."""
    _fields.set({**_fields.get(), **fields})


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time``, ``level``, ``logger``, ``message`` and, where
    known, ``session``, ``platform`` and ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, str] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None) or _fields.get().get(name)
            if value:
                line[name] = str(value)
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(self.formatException(record.exc_info))
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False)


def formatter(kind: str | None) -> logging.Formatter:
    """The formatter ``CHORUS_LOG_FORMAT`` names: ``json``, or the readable default."""
    if (kind or "").strip().lower() == "json":
        return JsonFormatter()
    return logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
