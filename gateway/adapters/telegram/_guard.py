"""Updates python-telegram-bot could choke on, screened out before it sees them.

One update the library cannot parse fails the whole ``getUpdates`` batch: it
is never confirmed, so it comes back forever and nothing else is answered. An
update whose ids have the wrong type parses, then breaks the library's own
bookkeeping later. So every update is checked here first — it must parse and
its ids must be integers — and one that fails is replaced by its bare
``{"update_id": …}``: the poller still confirms it (Telegram stops sending
it) and nothing downstream sees it. The raw text of an update is never logged.

An update is parsed once: ``screen_updates`` keeps what it parsed for the
handler, so the library is then given only the bare ids it confirms.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from telegram import Bot, Update

logger = logging.getLogger(__name__)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value: object) -> bool:
    return value is None or isinstance(value, str)


def readable(data: object) -> bool:
    """Whether ``data`` is an update chorus and the library can both handle."""
    return parsed(data, None) is not None


def parsed(data: object, bot: Bot | None) -> Update | None:
    """``data`` as an ``Update`` (for ``bot``) when chorus and the library can both
    handle it, else None."""
    if not isinstance(data, dict) or not _is_int(data.get("update_id")):
        return None
    try:
        update = Update.de_json(data, bot)
    except Exception:
        return None
    message = update.effective_message
    user = update.effective_user
    chat = update.effective_chat
    checks = [
        user is None or _is_int(user.id),
        chat is None or _is_int(chat.id),
        message is None or _is_int(message.message_id),
        message is None or message.message_thread_id is None or _is_int(message.message_thread_id),
        message is None or (_is_text(message.text) and _is_text(message.caption)),
        message is None or message.date is not None,
    ]
    return update if all(checks) else None


@dataclass(slots=True)
class Screened:
    """A ``getUpdates`` answer, screened: ``answer["result"]`` holds each update that has
    an integer id (unreadable ones reduced to it); ``updates`` the parsed ones, in order,
    None where there is nothing to handle; ``skipped`` how many were unreadable."""

    answer: dict[str, Any]
    updates: list[Update | None]
    skipped: int

    @property
    def result(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.answer["result"]
        return result


def screen_updates(payload: bytes, bot: Bot | None) -> Screened | None:
    """The answer's updates parsed once (for ``bot``), unreadable ones reduced to their
    id; None when the payload is no answer with a list of updates (the library reports
    a bad answer itself)."""
    try:
        answer = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), list):
        return None
    kept: list[dict[str, Any]] = []
    updates: list[Update | None] = []
    skipped = 0
    for data in answer["result"]:
        if isinstance(data, dict) and len(data) == 1 and _is_int(data.get("update_id")):
            kept.append(data)  # a bare id: nothing to handle
            updates.append(None)
            continue
        update = parsed(data, bot)
        if update is not None:
            kept.append(data)
            updates.append(update)
            continue
        skipped += 1
        update_id = data.get("update_id") if isinstance(data, dict) else None
        if _is_int(update_id):
            kept.append({"update_id": update_id})  # confirmed, and otherwise empty
            updates.append(None)
    answer["result"] = kept
    return Screened(answer, updates, skipped)
