"""Slack Events API payloads as chorus messages, and a thread's history as others' words.

Pure functions over the event dicts Slack sends; the adapter does the I/O.

- ``message`` in an ``im`` channel is a direct message; its thread (if any) is the
  session's thread.
- ``message`` in a channel, private channel or group DM addresses the bot when it
  contains ``<@BOT>`` (removed from the text); ``app_mention`` always does. A
  top-level channel message gets its own thread: ``thread_id`` is its ``ts``, so
  the reply opens a thread under it and each thread is its own session.
- Bot messages (ours included) and other subtypes are ignored; edits and deletions
  are retractions (``_retractions``), not messages.
- A clip recorded in Slack (file subtype ``slack_audio``) is a ``voice`` attachment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.adapters.slack._format import from_slack, mention_pattern, unnamed_users
from gateway.events import Attachment, AttachmentKind, InboundMessage, Quoted

PLATFORM = "slack"
ANSWERED_SUBTYPES = frozenset({"", "thread_broadcast", "file_share"})
"""Message subtypes that are a person writing; every other subtype is ignored."""
MAX_CONTEXT_CHARS = 1000
"""Characters of one earlier message quoted as thread context."""
_KINDS: tuple[tuple[str, AttachmentKind], ...] = (
    ("image/", "image"),
    ("audio/", "audio"),
    ("video/", "video"),
)


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is in its workspace (from ``auth.test``)."""

    user_id: str
    name: str = ""
    bot_id: str = ""
    team_id: str = ""


def well_formed(body: bytes) -> bool:
    """Whether a request body has the shape slack-bolt's own checks assume.

    Form bodies (slash commands, interactivity) pass; JSON is checked like a
    Socket Mode payload.
    """
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False  # bolt reads every body as UTF-8 text
    try:
        payload = json.loads(body)
    except ValueError:
        return True  # a form body, or nothing bolt parses as JSON
    return isinstance(payload, dict) and well_formed_payload(payload)


_COMMAND_FIELDS = ("command", "text", "user_id", "channel_id", "response_url", "trigger_id")


def well_formed_payload(payload: Mapping[str, Any]) -> bool:
    """Whether a parsed payload has the shape slack-bolt assumes: an ``event_callback``
    needs its event and each authorization to be objects, a slash command string fields."""
    if "event" in payload and not isinstance(payload["event"], dict):
        return False
    authorizations = payload.get("authorizations")
    if authorizations is not None and not (
        isinstance(authorizations, list) and all(isinstance(a, dict) for a in authorizations)
    ):
        return False
    for key in ("type", "team_id", "api_app_id", "enterprise_id", "event_id"):
        if payload.get(key) is not None and not isinstance(payload[key], str):
            return False
    if "command" in payload:
        for key in _COMMAND_FIELDS:
            if payload.get(key) is not None and not isinstance(payload[key], str):
                return False
    event = payload.get("event")
    if isinstance(event, dict) and event.get("type") in ("message", "app_mention"):
        for key in ("type", "subtype", "channel", "user", "ts", "thread_ts", "text", "team"):
            if event.get(key) is not None and not isinstance(event[key], str):
                return False
        files = event.get("files")
        if files is not None and not isinstance(files, list):
            return False
    return True


def is_from_person(event: Mapping[str, Any], me: BotIdentity) -> bool:
    """A message a person wrote (not a bot, not an edit or deletion, not ours)."""
    if event.get("type") not in ("message", "app_mention"):
        return False
    if str(event.get("subtype") or "") not in ANSWERED_SUBTYPES:
        return False
    if event.get("bot_id") or event.get("bot_profile"):
        return False
    user = event.get("user")
    return bool(user and event.get("channel") and event.get("ts")) and user != me.user_id


def inbound_from(
    event: Mapping[str, Any], me: BotIdentity, names: Mapping[str, str] | None = None
) -> InboundMessage | None:
    """The message in ``event``, or None when chorus should not look at it.

    People it mentions read as ``@Name`` when ``names`` (user id → name) knows them.
    """
    if not is_from_person(event, me):
        return None
    ts = str(event["ts"])
    raw = str(event.get("text") or "")
    mention = mention_pattern(me.user_id)
    direct = event.get("type") == "message" and event.get("channel_type") == "im"
    mentioned = event.get("type") == "app_mention" or mention.search(raw) is not None
    thread_ts = event.get("thread_ts")
    thread = str(thread_ts) if thread_ts else (None if direct else ts)
    return InboundMessage(
        platform=PLATFORM,
        chat_id=str(event["channel"]),
        user_id=str(event["user"]),
        text=from_slack(mention.sub("", raw), names).strip(),
        message_id=ts,
        user_name=_display_name(event),
        thread_id=thread,
        attachments=tuple(_attachment(f) for f in files_of(event)),
        is_direct=direct,
        mentions_bot=mentioned and not direct,
    )


def mentioned_people(event: Mapping[str, Any], me: BotIdentity) -> list[str]:
    """Ids of the people ``event``'s text mentions without a name, the bot aside."""
    return [u for u in unnamed_users(str(event.get("text") or "")) if u != me.user_id]


def files_of(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The files shared with a message (the readable ones, in order)."""
    files = event.get("files")
    return [f for f in files if isinstance(f, dict)] if isinstance(files, list) else []


def by_bot(reply: Mapping[str, Any], me: BotIdentity) -> bool:
    """Whether a message of a thread is one the bot posted."""
    return reply.get("user") == me.user_id or bool(me.bot_id and reply.get("bot_id") == me.bot_id)


def thread_context(
    replies: Sequence[Mapping[str, Any]],
    *,
    before_ts: str,
    me: BotIdentity,
    limit: int,
    names: Mapping[str, str] | None = None,
) -> tuple[Quoted, ...]:
    """The last ``limit`` messages of a thread before ``before_ts``, as others' words.

    Authors are named by the message's own profile, then ``names`` (user id → name),
    which also names the people the messages mention.
    """
    cutoff = _seconds(before_ts)
    earlier = [
        r
        for r in replies
        if _seconds(str(r.get("ts") or "0")) < cutoff
        and str(r.get("subtype") or "") in ANSWERED_SUBTYPES | {"bot_message"}
        and str(r.get("text") or "").strip()
    ][-limit:]
    quoted: list[Quoted] = []
    mention = mention_pattern(me.user_id)
    for reply in earlier:
        known = (names or {}).get(str(reply.get("user") or ""), "")
        name = (me.name or "assistant") if by_bot(reply, me) else _display_name(reply) or known
        name = name or _author(reply)
        raw = mention.sub(f"@{me.name} " if me.name else "", str(reply["text"]))
        text = from_slack(raw, names)
        text = text.strip()
        if len(text) > MAX_CONTEXT_CHARS:
            text = text[:MAX_CONTEXT_CHARS] + "…"
        quoted.append(Quoted("thread", name, text))
    return tuple(quoted)


def _display_name(event: Mapping[str, Any]) -> str:
    profile = event.get("user_profile")
    if not isinstance(profile, dict):
        return ""
    return str(profile.get("display_name") or profile.get("real_name") or profile.get("name") or "")


def _author(event: Mapping[str, Any]) -> str:
    return str(event.get("user") or event.get("username") or event.get("bot_id") or "someone")


def _attachment(file: Mapping[str, Any]) -> Attachment:
    mime = str(file.get("mimetype") or "")
    kind: AttachmentKind = "document"
    for prefix, candidate in _KINDS:
        if mime.startswith(prefix):
            kind = candidate
    if file.get("subtype") == "slack_audio":  # a clip recorded in Slack
        kind = "voice"
    size = file.get("size")
    millis = file.get("duration_ms")
    return Attachment(
        kind,
        str(file.get("name") or ""),
        mime,
        size if isinstance(size, int) else None,
        duration=millis / 1000 if isinstance(millis, int | float) else None,
    )


def file_url(file: Mapping[str, Any]) -> str | None:
    """Where a shared file downloads (with the bot token), if the event says."""
    url = file.get("url_private_download") or file.get("url_private")
    return url if isinstance(url, str) else None


def _seconds(ts: str) -> float:
    try:
        return float(ts)
    except ValueError:
        return 0.0
