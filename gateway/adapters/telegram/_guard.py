"""Updates python-telegram-bot could choke on, screened out before it sees them.

One update the library cannot parse fails the whole ``getUpdates`` batch: it
is never confirmed, so it comes back forever and nothing else is answered. An
update whose ids have the wrong type parses, then breaks the library's own
bookkeeping later. So every update is checked here first — it must parse and
its ids must be integers — and one that fails is replaced by its bare
``{"update_id": …}``: the poller still confirms it (Telegram stops sending
it) and nothing downstream sees it. The raw text of an update is never logged.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from telegram import Update

logger = logging.getLogger(__name__)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value: object) -> bool:
    return value is None or isinstance(value, str)


def readable(data: object) -> bool:
    """Whether ``data`` is an update chorus and the library can both handle."""
    if not isinstance(data, dict) or not _is_int(data.get("update_id")):
        return False
    try:
        update = Update.de_json(data, None)
    except Exception:
        return False
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
    return all(checks)


def screen_batch(payload: bytes) -> tuple[bytes, int]:
    """A ``getUpdates`` answer with unreadable updates replaced; (payload, how many)."""
    try:
        answer = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return payload, 0  # not ours to judge: the library reports a bad answer itself
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), list):
        return payload, 0
    kept: list[Any] = []
    skipped = 0
    for data in answer["result"]:
        if readable(data):
            kept.append(data)
            continue
        skipped += 1
        update_id = data.get("update_id") if isinstance(data, dict) else None
        if _is_int(update_id):
            kept.append({"update_id": update_id})  # confirmed, and otherwise empty
    if not skipped:
        return payload, 0
    answer["result"] = kept
    return json.dumps(answer).encode(), skipped
