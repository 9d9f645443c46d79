"""Updates python-telegram-bot could choke on, screened out before it sees them.

One update the library cannot parse fails the whole ``getUpdates`` batch: it
is never confirmed, so it comes back forever and nothing else is answered. An
update whose ids have the wrong type parses, then breaks the library's own
bookkeeping later. So the library is given every update as its bare ``{"update_id": …}``
(one without an integer id is dropped): the poller confirms it (Telegram stops
sending it), and chorus reads it itself — it must parse and its ids must be
integers — before anything downstream sees it. The raw text of an update is never logged.

An update is parsed once, and only when it is handed on: the library is given
only the bare ids it confirms, and ``parsed`` reads each update for the handler
(one that fails is confirmed and dropped there).
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
    an integer id; ``handled`` the positions of those with more than their id (to
    record, then to read one by one as each is handed on: ``parsed``); ``skipped`` how
    many had no integer id and were dropped."""

    answer: dict[str, Any]
    handled: list[int]
    skipped: int

    @property
    def result(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.answer["result"]
        return result


def screen_updates(payload: bytes) -> Screened | None:
    """The answer's updates that have an integer id, in order (the rest dropped); None
    when the payload is no answer with a list of updates (the library reports a bad
    answer itself). Nothing is parsed here: a batch's first update is read and handed
    on before the other 99 are."""
    try:
        answer = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), list):
        return None
    kept: list[dict[str, Any]] = []
    handled: list[int] = []
    for data in answer["result"]:
        if not isinstance(data, dict) or not _is_int(data.get("update_id")):
            continue
        if len(data) > 1:
            handled.append(len(kept))
        kept.append(data)
    skipped = len(answer["result"]) - len(kept)
    answer["result"] = kept
    return Screened(answer, handled, skipped)
