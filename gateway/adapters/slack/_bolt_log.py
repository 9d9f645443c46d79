"""slack-bolt's logger as chorus gives it to ``AsyncApp``: calm and without payloads."""

from __future__ import annotations

import logging

from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped

from gateway.logs import WithholdText

__all__ = ["bolt_logger"]


class _TokenFromEnvironment(logging.Filter):
    """Bolt's warning that ``SLACK_BOT_TOKEN`` (which it reads by itself) goes unused
    beside the client chorus gives it: expected, so not a warning on every start."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


def bolt_logger() -> logging.Logger:
    """slack-bolt's logger; its lines that would print a request body keep only their start."""
    bolt = logging.getLogger("slack_bolt.chorus")  # held at INFO like slack_bolt's own
    if not any(isinstance(f, _TokenFromEnvironment) for f in bolt.filters):
        bolt.addFilter(_TokenFromEnvironment())
    if not any(isinstance(f, WithholdText) for f in bolt.filters):
        bolt.addFilter(
            WithholdText(
                "Invalid request signature detected",
                "A global middleware (",
                "Unhandled request (",
            )
        )
    return bolt
