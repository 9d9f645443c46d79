"""Slack's ``message_deleted`` and ``message_changed`` events as retractions.

A person deleting a message of theirs arrives as a ``message`` event with subtype
``message_deleted``: ``deleted_ts`` is the message's ``ts``, ``previous_message``
the message as it was (its ``user`` is who wrote it). An edit is subtype
``message_changed``: ``message`` is the message as it is now (its ``ts`` the
original one), ``previous_message`` as it was. Messages of bots (ours included)
are not a person's and are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.adapters.slack._events import PLATFORM, BotIdentity
from gateway.adapters.slack._format import from_slack, mention_pattern
from gateway.events import Retraction

__all__ = ["RETRACTING_SUBTYPES", "retraction_from"]

RETRACTING_SUBTYPES = frozenset({"message_deleted", "message_changed"})


def retraction_from(event: Mapping[str, Any], me: BotIdentity) -> Retraction | None:
    """The deletion or edit ``event`` tells of, or None when it is not a person's."""
    if event.get("type") != "message":
        return None
    subtype = event.get("subtype")
    channel = event.get("channel")
    before = event.get("previous_message")
    if subtype not in RETRACTING_SUBTYPES or not channel or not isinstance(before, Mapping):
        return None
    if not _by_person(before, me):
        return None
    if subtype == "message_deleted":
        ts = event.get("deleted_ts") or before.get("ts")
        if not ts:
            return None
        return Retraction(PLATFORM, str(channel), str(before["user"]), str(ts))
    now = event.get("message")
    if not isinstance(now, Mapping) or not now.get("ts") or now.get("user") != before["user"]:
        return None
    if str(now.get("text") or "") == str(before.get("text") or ""):
        return None  # an unfurl or a reaction changed the message, not its words
    text = from_slack(mention_pattern(me.user_id).sub("", str(now.get("text") or ""))).strip()
    return Retraction(PLATFORM, str(channel), str(before["user"]), str(now["ts"]), text)


def _by_person(message: Mapping[str, Any], me: BotIdentity) -> bool:
    if message.get("bot_id") or message.get("bot_profile"):
        return False
    user = message.get("user")
    return bool(user) and user != me.user_id
